"""LocalExecutor: the restricted runtime in this process. Fastest; the policy is the boundary.

Limits on time, operations, output and recursion hold exactly; memory is capped with size checks
and a temporary address-space limit (best effort in process: use SubprocessExecutor or
DockerExecutor for hard memory caps and crash isolation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .base import ExecutionResult, ExecutorBase, Limits
from .restricted import RestrictedRuntime

__all__ = ["LocalExecutor"]


class LocalExecutor(ExecutorBase):
    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._runtime = RestrictedRuntime(tools, authorized_imports, limits)
        self.limits = self._runtime.limits
        self.authorized_imports = self._runtime.authorized_imports

    @property
    def tools(self) -> dict[str, Callable[..., Any]]:
        return dict(self._runtime._tools)

    def execute(self, code: str) -> ExecutionResult:
        return self._runtime.execute(code)

    def register_tools(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Any]) -> None:
        self._runtime.register_tools(tools)

    def set_variables(self, values: Mapping[str, Any]) -> None:
        self._runtime.set_variables(values)

    def get_variables(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """The model's variables (all, or those named): plain data (JSON values, tuples, sets,
        bytes) as a copy, anything else as its repr. Unknown names raise KeyError."""
        return self._runtime.get_variables(names)

    def reset(self) -> None:
        self._runtime.reset()

    def close(self) -> None:
        self._runtime.close()

    def __repr__(self) -> str:
        return f"LocalExecutor(tools={sorted(self._runtime._tools)}, limits={self.limits})"
