"""What the runtime knows about libraries: authorized imports and their proxies, trusted
imports, members never handed over, hooks, patches and settings put back.
"""
