"""LocalExecutor: the restricted runtime in this process. Fastest; the policy is the boundary.

Limits on time, operations, output and recursion hold exactly; memory is capped with size checks
and a temporary address-space limit (best effort in process: use SubprocessExecutor or
DockerExecutor for hard memory caps and crash isolation). What authorized libraries may do on
the model's behalf (files, network, processes, native code) is held by the capability guard, an
audit hook judging each action against `access` — the in-process best effort; the kernel holds
the same grants in SubprocessExecutor.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .access import LIBRARY_LAYER, Access, Isolation, ResolvedAccess
from .base import (
    STEP_LOOP,
    ExecutionResult,
    ExecutorBase,
    Limits,
    StepLoop,
    extra_imports,
    refuse_star,
)
from .importable import ensure_importable
from .restricted import RestrictedRuntime
from .restricted.capabilities import Grants
from .restricted.host.workdir import release_descriptors

__all__ = ["LocalExecutor", "LOCAL_BOUNDARY"]

# What LocalExecutor is, in one line: its isolation report, the README and the CLI say it so.
LOCAL_BOUNDARY = ("language-level guard in the host's process; native libraries are checked at "
                  "their entry points; for untrusted code with native libraries use the worker "
                  "(SubprocessExecutor)")


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

    warm = True  # (in process: a step never waits for a worker to start)

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
            "boundary": LOCAL_BOUNDARY,
            "policy": "restricted AST whitelist (executors.restricted)",
            "files": f"{hook}: reads in the grants and the Python installation, writes in the "
                     "workdir and write grants",
            "network": f"{hook}: {'allowed' if self._grants.network else 'no sockets'}",
            "processes": f"{hook}: no process creation, signals or native code",
            "libraries": LIBRARY_LAYER,
            "raw memory": "native libraries checked at their entry points: strided views, array "
                          "interfaces, ctypes and address buffers, sparse indices, arrays from "
                          "parts, window bounds (docs/library-capabilities.md, section 9)",
            "user": "the host's user (same process)",
            "memory": "size checks + temporary RLIMIT_AS (process-wide, best effort)",
            "time": "watchdog thread + operation budget",
        }, missing=("kernel: no kernel layer in process (use SubprocessExecutor)",
                    "native code: numpy, pyarrow, scipy, polars run in the host's process; a flaw "
                    "in one that its entry-point checks do not cover reaches the host's memory "
                    "(for untrusted code with native libraries use SubprocessExecutor)"))

    def execute(self, code: str) -> ExecutionResult:
        return self._runtime.execute(code)

    async def aexecute(self, code: str) -> ExecutionResult:
        """`execute` awaited: the step runs on a thread of its own, which the loop does not wait
        on; a tool coroutine the step calls runs on this loop. Cancelled, the step is interrupted
        (as at its deadline) and its thread has ended when the cancellation goes on."""
        loop = asyncio.get_running_loop()
        bound = StepLoop(loop)
        context = contextvars.copy_context()
        context.run(STEP_LOOP.set, bound)
        done: asyncio.Future[ExecutionResult] = loop.create_future()
        finished = threading.Event()

        def step() -> None:
            try:
                outcome: Any = (True, context.run(self._runtime.execute, code))
            except BaseException as exc:  # (KeyboardInterrupt...) handed to the awaiting task
                outcome = (False, exc)
            finished.set()
            try:
                loop.call_soon_threadsafe(_settle, done, outcome)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

        threading.Thread(target=step, name="codeagent-step", daemon=True).start()
        try:
            return await done
        except asyncio.CancelledError:
            await self._stop_step(bound, finished)
            raise

    async def _stop_step(self, bound: StepLoop, finished: threading.Event) -> None:
        """Interrupt the cancelled step and wait (without blocking the loop) until its thread ends:
        again and again, in case it had not started yet."""
        bound.cancel()
        give_up = time.monotonic() + (self.limits.timeout_s or 5.0) + 5.0
        while not finished.is_set() and time.monotonic() < give_up:
            self._runtime.interrupt()
            try:
                await asyncio.sleep(0.005)
            except asyncio.CancelledError:  # cancelled again: the step is being stopped already
                continue

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


def _settle(done: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if done.done():  # (cancelled meanwhile)
        return
    ok, value = outcome
    if ok:
        done.set_result(value)
    else:
        done.set_exception(value)
