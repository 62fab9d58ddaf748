"""executors: run untrusted, model-written Python in process, in a subprocess or in a container.

Public names only; they are imported lazily so that `import executors` stays cheap.
This package never imports `codeagent`. The map of its modules and of the path one step takes:
docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    DEFAULT_AUTHORIZED_IMPORTS,
    Attachment,
    ExecutionError,
    ExecutionResult,
    Executor,
    ExecutorError,
    FinalAnswer,
    Limits,
    ToolError,
)

_LAZY = {
    "Repr": ".worker.wire",  # what a value that is not data crosses as: its repr, marked
    "LocalExecutor": ".local",
    "SubprocessExecutor": ".process",
    "DockerExecutor": ".docker",
    "Access": ".access",
    "AccessError": ".access",
    "Isolation": ".access",
    "ExecutorPool": ".remote.pool",  # SubprocessExecutor.pool(n): ready workers, one per session
}

__all__ = [
    "Access",
    "Attachment",
    "AccessError",
    "DEFAULT_AUTHORIZED_IMPORTS",
    "DockerExecutor",
    "ExecutionError",
    "ExecutionResult",
    "Executor",
    "ExecutorError",
    "ExecutorPool",
    "FinalAnswer",
    "Isolation",
    "Limits",
    "LocalExecutor",
    "Repr",
    "SubprocessExecutor",
    "ToolError",
]

if TYPE_CHECKING:  # pragma: no cover
    from .access import Access, AccessError, Isolation
    from .docker import DockerExecutor
    from .local import LocalExecutor
    from .process import SubprocessExecutor
    from .remote.pool import ExecutorPool
    from .worker.wire import Repr


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'executors' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
