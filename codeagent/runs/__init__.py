"""Runs: the record of what a run of any agent produced, and the recorder that writes it.
"""
