"""executors: run untrusted, model-written Python in process, in a subprocess or in a container.

Public names only; they are imported lazily so that `import executors` stays cheap.
This package never imports `codeagent`. The map of its modules and of the path one step takes:
docs/architecture.md.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

# CPython's free-threaded build (3.13t, 3.14t: abiflags "t") runs Python in several threads at
# once. The capability guard (one step's thread judged at a time), the watchdog's interrupts and
# the per-step process limits all rest on the GIL's one-thread-at-a-time; guarding half of that
# would be worse than saying no. So the build is refused, whatever PYTHON_GIL says (untested).
if "t" in getattr(sys, "abiflags", ""):
    _v = "{}.{}".format(*sys.version_info)
    raise ImportError(
        f"executors does not run on CPython's free-threaded build (Python {sys.version.split()[0]}, "
        f"{sys.executable}): its sandbox relies on the GIL running one thread at a time, which "
        f"this build does not. Use the standard build of the same version (python{_v}, not "
        f"python{_v}t)."
    )

from .base import (  # noqa: E402 - after the build check
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
    from .worker.wire import Repr


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'executors' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
