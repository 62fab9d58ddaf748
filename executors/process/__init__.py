"""SubprocessExecutor: model code in a warm child process, confined by the OS, with its pool.

executor.py is the executor (the worker's spec, grants, restarts); child.py one child process as
the host sees it (its pipes, its kill, its pids cgroup, the sweep of orphans).
"""

from __future__ import annotations

from .child import PipeChannel, ProcessWorker, sweep_orphans
from .executor import SubprocessExecutor

__all__ = ["PipeChannel", "ProcessWorker", "SubprocessExecutor", "sweep_orphans"]
