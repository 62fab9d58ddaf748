"""Executors and tools named on a command line: `executor_factory("local", ...)`,
`load_tools(["mypkg.tools:TOOLS"])`.

The executors are imported inside the factory, when it first builds one: this package sits
below the places code runs and must not import them itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from ...base import Limits, normalize_tools

__all__ = ["EXECUTOR_KINDS", "executor_factory", "load_tools"]

EXECUTOR_KINDS = ("local", "subprocess", "docker")


def executor_factory(kind: str, *, timeout_s: float = 2.0, authorized_imports: Iterable[str] | None = None,
                     policy: str | None = None) -> Callable[[], Any]:
    """A factory of the executor `kind` ("local", "subprocess" or "docker") with these options;
    `policy` applies to subprocess and docker (default: the executor's own)."""
    if kind not in EXECUTOR_KINDS:
        raise ValueError(f"executor must be one of {EXECUTOR_KINDS}, got {kind!r}")
    limits = Limits(timeout_s=timeout_s)
    imports = authorized_imports
    extra = {"policy": policy} if policy and kind != "local" else {}

    def factory() -> Any:
        import executors

        cls = {"local": "LocalExecutor", "subprocess": "SubprocessExecutor", "docker": "DockerExecutor"}[kind]
        return getattr(executors, cls)(authorized_imports=imports, limits=limits, **extra)

    return factory


def load_tools(specs: list[str] | None) -> dict[str, Callable[..., Any]] | None:
    """Tools from MODULE:ATTR specs (a callable, a Tool, or a dict/list of them); None for None.
    Raises ValueError for a malformed spec."""
    if specs is None:
        return None
    tools: dict[str, Callable[..., Any]] = {}
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise ValueError(f"--tools wants MODULE:ATTR, got {spec!r}")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, (dict, list, tuple)):
            tools.update(normalize_tools(obj))
        else:
            tools.update(normalize_tools([obj]))
    return tools
