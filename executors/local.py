"""LocalExecutor: the restricted runtime in this process. Fastest; the policy is the boundary.

Limits on time, operations, output and recursion hold exactly; memory is capped with size checks
and a temporary address-space limit (best effort in process: use SubprocessExecutor or
DockerExecutor for hard memory caps and crash isolation). What authorized libraries may do on
the model's behalf (files, network, processes, native code) is held by the capability guard, an
audit hook judging each action against `access` — the in-process best effort; the kernel holds
the same grants in SubprocessExecutor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .access import LIBRARY_LAYER, Access, Isolation, ResolvedAccess
from .base import ExecutionResult, ExecutorBase, Limits, extra_imports, refuse_star
from .importable import ensure_importable
from .restricted import RestrictedRuntime
from .restricted.capabilities import Grants
from .restricted.host.workdir import release_descriptors

__all__ = ["LocalExecutor"]


class LocalExecutor(ExecutorBase):
    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        access: Access | None = None,
    ) -> None:
        refuse_star(authorized_imports)
        # Authorizing a module this Python lacks is a setup mistake: say so now, not at the
        # model's first import.
        ensure_importable(extra_imports(authorized_imports))
        if access is not None and not isinstance(access, Access):
            raise TypeError(f"access must be an executors.Access, not {type(access).__name__}")
        self.access = access or Access()
        if self.access.require == "kernel":
            raise ValueError(
                "Access(require='kernel'): LocalExecutor runs in this process and has no kernel "
                "layer (the audit hook is its guard); use SubprocessExecutor or DockerExecutor")
        self._grants: ResolvedAccess = self.access.resolve()
        grants = Grants.of(read=self._grants.read, write=self._grants.writable,
                           network=self._grants.network)
        try:
            self._runtime = RestrictedRuntime(tools, authorized_imports, limits, grants=grants,
                                              workdir=self._grants.workdir)
        except BaseException:
            self._grants.cleanup()
            raise
        self.limits = self._runtime.limits
        self.authorized_imports = self._runtime.authorized_imports
        self._closed = False

    @property
    def tools(self) -> dict[str, Callable[..., Any]]:
        return dict(self._runtime._tools)

    @property
    def workdir(self) -> str:
        """The code's current directory during a step (a private temporary one by default)."""
        return self._grants.workdir

    @property
    def grants(self) -> ResolvedAccess:
        return self._grants

    @property
    def isolation(self) -> Isolation:
        """What holds the code, per concern. In process everything is the policy and the audit
        hook: a best effort next to the kernel layers of SubprocessExecutor/DockerExecutor."""
        hook = "audit hook (capability guard, this thread only)"
        return Isolation("LocalExecutor", {
            "policy": "restricted AST whitelist (executors.restricted)",
            "files": f"{hook}: reads in the grants and the Python installation, writes in the "
                     "workdir and write grants",
            "network": f"{hook}: {'allowed' if self._grants.network else 'no sockets'}",
            "processes": f"{hook}: no process creation, signals or native code",
            "libraries": LIBRARY_LAYER,
            "user": "the host's user (same process)",
            "memory": "size checks + temporary RLIMIT_AS (process-wide, best effort)",
            "time": "watchdog thread + operation budget",
        }, missing=("kernel: no kernel layer in process (use SubprocessExecutor)",))

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
        """Forget the variables; files in the workdir stay until close()."""
        self._runtime.reset()

    def close(self) -> None:
        self._runtime.close()
        if not self._closed:
            self._closed = True
            release_descriptors(self._grants.workdir)  # nothing stays open on its files
            self._grants.cleanup()

    def __repr__(self) -> str:
        return f"LocalExecutor(tools={sorted(self._runtime._tools)}, limits={self.limits})"
