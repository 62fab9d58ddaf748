"""Differential programs: the hypothesis strategies that write ordinary Python, and the CPython
reference that each executor's result is compared with.
"""
