"""Judging an example: evaluating it against a live executor, the verdict, and what the
host checks (canaries, probe tools, fingerprints of host and library state).
"""
