"""RemoteExecutor: the host side of a worker. Deadlines, restarts, tool calls over the wire.

A subclass supplies only how to start a worker and reach it (the `WorkerHandle` and `Channel`
interfaces are in `executors.remote.link`):

    class MyExecutor(RemoteExecutor):
        def _start_worker(self) -> WorkerHandle:
            '''Start a fresh worker (`link.worker_command(...)`) and return a handle; raise
            ExecutorError when it cannot be started. Do not send anything: `configure` is sent here.'''
        def _package_paths(self) -> list[str]:       # optional
            '''Directories the worker should put on sys.path so that, under the restricted
            policy, it can import `executors.restricted` (default: none).'''
        def _on_close(self) -> None:                  # optional: release place-specific resources

Deadlines. The worker keeps a soft deadline at Limits.timeout_s (variables kept); the host keeps
the hard one at Limits.timeout_s + kill_grace_s (class attribute): the worker is killed and
replaced. `Limits(timeout_s=None)` means no time limit: no soft deadline, and the host waits for
the step as long as the worker lives (a crash still comes back at once as WorkerCrashed); only
control requests (set_variables, get_variables, reset, ...) keep a bound of their own.

Restarts. A timeout, a dead worker, a broken or hostile frame, or `Result.restart` (the worker
asks to be replaced, e.g. threads or child processes left running after a timeout) kill the
worker and start a fresh one; the result says so with an `ExecutionError` and `state_lost=True`,
never with an exception. `restarts` counts replacements.

`aexecute` (remote/awaited.py) is the same step awaited on an event loop, without a thread.

Everything else is here too: lazy start, the configure handshake, tool calls dispatched to host
callables (a tool exception goes back as `tool_error`), `get_variables` over the wire, and
`pool(n, **kwargs)`, an ExecutorPool of warm executors for concurrent runs.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..base import (
    ExecutionError,
    ExecutionResult,
    ExecutorBase,
    ExecutorError,
    Limits,
    check_code,
    check_variable_names,
    normalize_imports,
    normalize_tools,
    variable_names_asked,
)
from ..worker.wire import SourceRefs, truncate_text
from .answers import encoded_variables, step_result, tool_reply
from .awaited import AwaitedSteps
from .link import Channel, DeadlinePassed, WorkerDied, WorkerHandle, WorkerLink, describe_failure
from .pool import ExecutorPool
from .protocol import (
    MAX_FRAME_BYTES,
    Configure,
    ErrorReply,
    FrameTooLarge,
    GetVariables,
    Ok,
    Ping,
    Pong,
    ProtocolError,
    RegisterTools,
    Reset,
    Result,
    SetVariables,
    ToolCall,
    Variables,
    checked_variables,
    pack_frame,
)

__all__ = ["Channel", "WorkerHandle", "RemoteExecutor", "ExecutorPool"]

POLICIES = ("restricted", "open")


class RemoteExecutor(AwaitedSteps, ExecutorBase):
    """Executor contract on top of a worker process reached through a `Channel`."""

    #: extra wall-clock time after Limits.timeout_s before the host kills the worker; the worker's
    #: own (soft) deadline fires first when it can, which keeps variables.
    kill_grace_s: float = 0.5
    #: how long start-up (spawn + configure) may take before it counts as broken.
    startup_timeout_s: float = 30.0

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        policy: str = "restricted",
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be an executors.Limits, got {type(limits).__name__}")
        self.policy = policy
        self.limits = limits or Limits()
        self.authorized_imports = normalize_imports(authorized_imports)
        self.max_frame_bytes = int(max_frame_bytes)
        floor = 64 * 1024 + 12 * self.limits.max_output_chars  # logs and repr, JSON-escaped
        if self.max_frame_bytes < floor:
            raise ValueError(f"max_frame_bytes must be at least {floor} for these limits "
                             f"(Limits.max_output_chars={self.limits.max_output_chars}), got {max_frame_bytes}")
        self._tools: dict[str, Callable[..., Any]] = normalize_tools(tools)
        self._lock = threading.RLock()
        self._link = WorkerLink(self.max_frame_bytes, self.limits.max_payload_bytes)
        self._next_id = 0
        self._configure_id: int | None = None  # configure sent, ack not read yet
        self._closed = False
        self._restarts = 0
        self._lost = False  # a restart happened that no ExecutionResult has reported yet
        self._dirty = False  # the worker holds state a reset() would forget
        self._reset_next = False  # reset() asked: the next step's frame carries it (one trip)
        self._finalizer = weakref.finalize(self, WorkerLink.kill, self._link)
        self._sources = SourceRefs()

    # -- subclass interface ---------------------------------------------------------------------
    def _start_worker(self) -> WorkerHandle:
        raise NotImplementedError(f"{type(self).__name__} must implement _start_worker()")

    def _package_paths(self) -> list[str]:
        return []

    def _on_close(self) -> None:
        pass

    def _worker_access(self) -> dict[str, Any] | None:
        """The grants the worker confines itself to at configure (Configure.access); None: none."""
        return None

    def _worker_grants(self) -> dict[str, Any] | None:
        """What the restricted runtime's capability guard allows (Configure.grants); None: no
        files or network beyond the Python installation."""
        return None

    def _on_configured(self, hardening: dict[str, Any] | None) -> None:
        """The worker is configured; `hardening` is what it put in force (None: nothing)."""

    def _unconfined_native(self) -> bool:
        """Native packages may load where the kernel does not hold by itself (Configure)."""
        return False

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> RemoteExecutor:
        """Start the worker now (otherwise the first call does). Raises ExecutorError on failure."""
        with self._lock:
            self._check_open()
            self._ready()
        return self

    def prewarm(self) -> None:
        """Start the worker without waiting for it: it configures itself while the caller does
        something else (an agent asks its model); the first call that needs it waits, and says
        what went wrong if it could not start."""
        with self._lock:
            if self._closed or self._link.handle is not None:
                return
            try:
                self._spawn()
            except ExecutorError:
                pass  # the next call starts one again, and reports the failure

    def __enter__(self) -> RemoteExecutor:
        return self.start()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._link.kill()
            self._finalizer.detach()
            self._on_close()

    @property
    def tools(self) -> dict[str, Callable[..., Any]]:
        return dict(self._tools)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy!r}, tools={sorted(self._tools)}, limits={self.limits})"

    @property
    def restarts(self) -> int:
        """How many times the worker was killed and replaced (timeouts, crashes, bad frames)."""
        return self._restarts

    def _check_open(self) -> None:
        if self._closed:
            raise ExecutorError(f"{type(self).__name__} is closed; create a new one")

    # -- the worker's life ------------------------------------------------------------------------
    def _spawn(self) -> None:
        """Start a worker and send `configure` without waiting for the answer."""
        self._dirty = False
        handle = self._start_worker()
        self._link.attach(handle)
        self._sources = SourceRefs()  # what this worker has been sent
        cid = self._new_id()
        message = Configure(
            id=cid,
            policy=self.policy,
            tools=sorted(self._tools),
            authorized_imports=list(self.authorized_imports),
            limits=dataclasses.asdict(self.limits),
            max_frame_bytes=self.max_frame_bytes,
            package_paths=self._package_paths(),
            access=self._worker_access(),
            grants=self._worker_grants(),
            unconfined_native=self._unconfined_native(),
            arena=None if self._link.arena is None else [self._link.arena.fd, self._link.arena.size],
        )
        try:
            handle.channel.write(message.frame(self.max_frame_bytes), self.startup_timeout_s)
        except (OSError, TimeoutError) as exc:
            why = handle.exit_description() if isinstance(exc, OSError) else ""
            self._discard()
            raise ExecutorError(
                f"the {type(self).__name__} worker failed to start: it did not take its "
                f"configuration ({why or exc})"
            ) from exc
        self._configure_id = cid

    def _ready(self) -> WorkerHandle:
        """A configured worker, starting one if needed. Raises ExecutorError when that fails."""
        if self._link.handle is None:
            self._spawn()
        if self._configure_id is not None:
            cid = self._configure_id
            deadline = time.monotonic() + self.startup_timeout_s
            try:
                reply = self._link.recv(deadline)
            except (WorkerDied, DeadlinePassed, ProtocolError) as exc:
                why = self._link.exit_description()
                self._discard()
                raise ExecutorError(
                    f"the {type(self).__name__} worker failed to start: "
                    f"{describe_failure(exc, why)}"
                ) from None
            if isinstance(reply, ErrorReply) and reply.id == cid:
                self._discard()
                if reply.type == "HardeningError":
                    raise ExecutorError(f"the {type(self).__name__} worker could not confine itself to "
                                        f"its grants, so it exited without running code: "
                                        f"{truncate_text(reply.message, 2000)}{self._hardening_hint()}")
                raise ExecutorError(f"the worker refused its configuration: {truncate_text(reply.message, 2000)}")
            if not (isinstance(reply, Ok) and reply.id == cid):
                self._discard()
                raise ExecutorError(f"the worker answered {reply.op!r} to configure")
            self._configure_id = None
            try:
                self._on_configured(reply.hardening)
            except BaseException:
                self._discard()
                raise
        return self._link.handle  # type: ignore[return-value]

    def _hardening_hint(self) -> str:
        return ""

    def _discard(self) -> None:
        self._link.kill()
        self._configure_id = None

    def _restart(self) -> None:
        """Kill the worker and start a fresh one (not waiting for it to boot)."""
        self._discard()
        self._restarts += 1
        self._lost = not self._reset_next  # (a reset was asked: nothing wanted was lost)
        self._reset_next = False
        if not self._closed:
            try:
                self._spawn()
            except ExecutorError:
                pass  # the next request tries again and reports it

    def _replace_if_unclean(self) -> bool:
        """Between requests the worker must be silent. Bytes waiting here (a frame forged after
        the last result, say) or a worker that died while idle: replace it before going on (the
        next ExecutionResult says state_lost). Returns True when it was replaced."""
        if self._link.handle is None or self._configure_id is not None or self._link.is_silent():
            return False
        self._restart()
        return True

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _request(self, message, what: str, answers: tuple[type, ...] = (Ok, Pong)):
        """Send a control message and wait for its answer (one of `answers`, or an ErrorReply).
        Breakage kills/restarts the worker and raises ExecutorError."""
        if self._replace_if_unclean():
            self._ready()
        if self._reset_next:  # (a control message: the reset the caller asked for goes first)
            self._reset_next = False
            self._request(Reset(id=self._new_id()), "reset")
        deadline = time.monotonic() + max(10.0, 2 * (self.limits.timeout_s or 5.0))
        try:
            self._link.send(message.frame(self.max_frame_bytes, self.limits.max_payload_bytes), deadline)
            reply = self._link.recv(deadline)
        except (WorkerDied, DeadlinePassed, ProtocolError) as exc:
            why = self._link.exit_description()
            self._restart()
            raise ExecutorError(f"the worker failed during {what}: {describe_failure(exc, why)}") from None
        except BaseException:
            self._restart()
            raise
        if isinstance(reply, (ErrorReply, *answers)) and reply.id == message.id:
            return reply
        self._restart()
        raise ExecutorError(f"the worker answered {reply.op!r} to {what}")

    # -- the contract -----------------------------------------------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        refused = check_code(code)
        if refused is not None:
            return ExecutionResult(error=refused)
        with self._lock:
            self._check_open()
            started = time.perf_counter()
            self._replace_if_unclean()
            self._ready()
            return self._step(code, started)

    def _step(self, code: str, started: float) -> ExecutionResult:
        """One step on a ready worker, blocking (the caller holds the executor)."""
        step = self._begin_step(code)
        if isinstance(step, ExecutionResult):
            return step
        rid, frame, deadline, lost = step
        try:
            result = self._run_step(rid, frame, deadline, started)
        except (DeadlinePassed, WorkerDied, ProtocolError) as exc:
            return self._step_failed(exc, started)
        except BaseException:  # KeyboardInterrupt, a tool's BaseException: the worker is mid-call
            self._restart()
            raise
        return dataclasses.replace(result, state_lost=True) if lost else result

    def _begin_step(self, code: str) -> ExecutionResult | tuple[int, bytes, float | None, bool]:
        """The step's id, its `execute` frame, its host deadline, and whether a restart is still to
        be reported; or the result that refuses code too large to send."""
        lost, self._lost = self._lost, False
        self._dirty = True
        rid = self._new_id()
        ref, known = self._sources.ref_of(code)
        message = {"op": "execute", "id": rid, "ref": ref} if known else \
            {"op": "execute", "id": rid, "code": code, "ref": ref}
        if self._reset_next:  # (the reset the caller asked for rides on this frame: one trip)
            message["reset"] = True
        try:  # (an `Execute` message, framed from its fields: no model to build on the hot path)
            frame = pack_frame(message, self.max_frame_bytes)
        except FrameTooLarge:  # (a reset asked stays owed to the next request)
            self._sources.forget(code)
            return ExecutionResult(error=ExecutionError(
                "CodeTooLarge", f"the code is too large to send to the sandbox ({len(code):,} characters "
                f"do not fit in max_frame_bytes={self.max_frame_bytes:,}); send shorter code"))
        self._reset_next = False
        timeout = self.limits.timeout_s
        deadline = None if timeout is None else time.monotonic() + timeout + self.kill_grace_s
        return rid, frame, deadline, lost

    def _run_step(self, rid: int, frame: bytes, deadline: float | None, started: float) -> ExecutionResult:
        """Send the code, answer the worker's tool calls, turn its result into an ExecutionResult."""
        self._link.send(frame, deadline)
        while True:
            msg = self._link.recv(deadline)
            if isinstance(msg, ToolCall) and msg.id == rid:
                self._link.send(tool_reply(self._tools, msg, self.max_frame_bytes), deadline)
                if deadline is not None and time.monotonic() > deadline:
                    raise DeadlinePassed
                continue
            return self._step_result(msg, rid, started)

    def _step_result(self, msg: Any, rid: int, started: float) -> ExecutionResult:
        """The worker's answer to step `rid` (its `Result`) as the ExecutionResult to return."""
        if not (isinstance(msg, Result) and msg.id == rid):
            raise ProtocolError(f"unexpected {msg.op!r} frame while waiting for the result")
        result = step_result(msg, self.limits, started)
        if not msg.restart:
            return result
        self._restart()  # e.g. threads left running after a timeout
        self._lost = False  # reported right here
        error = result.error or ExecutionError("WorkerCrashed", "")
        return dataclasses.replace(result, state_lost=True, error=dataclasses.replace(
            error, message=f"{error.message} The sandbox had to be restarted "
            "(something the code started was still running): all variables are lost."))

    def _step_failed(self, exc: Exception, started: float) -> ExecutionResult:
        """The worker timed out, died or broke the protocol mid-step: replace it and say so."""
        if isinstance(exc, DeadlinePassed):
            type_, message = "TimeoutError", (
                f"execution exceeded the {self.limits.timeout_s} s time limit (Limits.timeout_s) and the "
                "sandbox was restarted: all variables are lost. Make the code faster or do less per step.")
        elif isinstance(exc, WorkerDied):
            why = self._link.exit_description()
            type_, message = "WorkerCrashed", (
                f"the sandbox process died while running the code ({why or 'no exit status'}); "
                "it was restarted and all variables are lost.")
        else:
            type_, message = "WorkerProtocolError", (
                f"the sandbox broke the host protocol ({str(exc)[:300]}); it was restarted and "
                "all variables are lost.")
        self._restart()
        self._lost = False  # this result reports the restart
        return ExecutionResult(error=ExecutionError(type_, message),
                               duration_s=time.perf_counter() - started, state_lost=True)

    def register_tools(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Any]) -> None:
        new = normalize_tools(tools)
        with self._lock:
            self._check_open()
            names = sorted(name for name in new if name not in self._tools)  # the worker has the rest
            self._tools.update(new)
            if names and self._link.handle is not None:
                self._ready()
                self._request(RegisterTools(id=self._new_id(), tools=names), "register_tools")

    def set_variables(self, values: Mapping[str, Any]) -> None:
        check_variable_names(values, self._tools)
        encoded = encoded_variables(values, self._link.bounds)
        with self._lock:
            self._check_open()
            self._ready()
            self._dirty = True
            try:
                message = SetVariables(id=self._new_id(), values=encoded)
                message.frame(self.max_frame_bytes, self.limits.max_payload_bytes)
            except FrameTooLarge as exc:
                raise ValueError(f"variables too large to send to the sandbox: {exc}") from None
            reply = self._request(message, "set_variables")
            if isinstance(reply, ErrorReply):
                raise ValueError(reply.message)

    def get_variables(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """The model's variables (all, or those named): values that cross as JSON (+tags) as
        themselves, anything else as its repr (`executors.remote.protocol.Repr`). Tools, `final_answer`,
        modules and names starting with `_` are not variables. KeyError names unknown names."""
        wanted = variable_names_asked(names)
        with self._lock:
            self._check_open()
            if self._link.handle is None and self._configure_id is None:
                if wanted:  # no worker yet: nothing was ever set
                    raise KeyError(f"no variable named {', '.join(map(repr, wanted))}")
                return {}
            self._ready()
            reply = self._request(GetVariables(id=self._new_id(), names=wanted), "get_variables", (Variables,))
            if isinstance(reply, ErrorReply):
                if reply.type == "KeyError":
                    raise KeyError(truncate_text(reply.message, 1000))
                raise ExecutorError(f"the worker could not list its variables: {reply.type}: "
                                    f"{truncate_text(reply.message, 1000)}")
            try:
                values = checked_variables(reply)
            except ProtocolError as exc:
                self._restart()
                raise ExecutorError(f"the worker answered get_variables with a bad value: {str(exc)[:300]}") from None
        if wanted is None:
            return values
        missing = [name for name in wanted if name not in values]
        if missing:  # the host checks too: a worker's word is not enough
            raise KeyError(f"no variable named {', '.join(map(repr, missing))}")
        return {name: values[name] for name in wanted}

    def reset(self) -> None:
        with self._lock:
            self._check_open()
            self._ask_reset()

    def ping(self) -> float:
        """Round-trip a no-op frame; returns the seconds it took (starts the worker if needed)."""
        with self._lock:
            self._check_open()
            self._ready()
            t0 = time.perf_counter()
            self._request(Ping(id=self._new_id()), "ping")
            return time.perf_counter() - t0

    @classmethod
    def pool(cls, n: int, *, recycle: str = "fresh", max_uses: int | None = None,
             **kwargs: Any) -> ExecutorPool:
        """`n` warm executors, `cls(**kwargs)`, for concurrent sessions (see ExecutorPool)."""
        return ExecutorPool(lambda: cls(**kwargs), n, recycle=recycle, max_uses=max_uses)

