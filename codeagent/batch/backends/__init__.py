"""Batch backends: where a batch's worker slots run, a local process pool of our own or Ray
actors, behind the one interface the scheduler needs (pool.py).
"""
