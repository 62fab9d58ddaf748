"""The host side of any worker (a subprocess, a container): RemoteExecutor and what it stands on.

The framed link to one worker (link.py), the messages checked as hostile (protocol.py), who the
code runs as and what it is lent (lease.py), the isolation report (isolation.py), and a pool of
warm executors (pool.py). A place (process/, docker/) supplies only how to start a worker.
"""

from __future__ import annotations

from .executor import RemoteExecutor
from .link import Channel, WorkerHandle
from .pool import ExecutorPool

__all__ = ["Channel", "ExecutorPool", "RemoteExecutor", "WorkerHandle"]
