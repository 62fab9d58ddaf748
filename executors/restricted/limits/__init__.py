"""Limits of a step: the operation budget and deadline, the watchdog thread, Ctrl-C,
the printed output's bound, and the process-wide memory and recursion caps.
"""
