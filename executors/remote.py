"""RemoteExecutor: everything common to executors that run code in a worker over a byte channel.

A subclass supplies only how to start a worker and reach it. The interface to implement:

    class MyExecutor(RemoteExecutor):
        def _start_worker(self) -> WorkerHandle:
            '''Start a fresh worker (`python worker.py`) and return a handle; raise ExecutorError
            when it cannot be started. Do not send anything: the base class sends `configure`.'''
        def _package_paths(self) -> list[str]:       # optional
            '''Directories the worker should put on sys.path so that, under the restricted
            policy, it can import `executors.restricted` (default: none).'''
        def _on_close(self) -> None:                  # optional: release place-specific resources

    class WorkerHandle(ABC):          # one running worker
        channel: Channel              # its byte channel
        def alive(self) -> bool       # still running?
        def kill(self) -> None        # hard-kill the worker and everything it spawned, reap it;
                                      # idempotent, never raises, returns quickly (< ~1 s)
        def exit_description(self) -> str   # after death: "exited with code 3",
                                            # "was killed by signal SIGSEGV", ... ("" if unknown)

    class Channel(ABC):               # raw bytes; framing is done here, not in the channel
        def write(self, data: bytes, timeout: float | None) -> None
            '''Write all of data or raise TimeoutError (deadline) / OSError (peer gone).'''
        def read(self, max_bytes: int, timeout: float | None) -> bytes
            '''Return 1..max_bytes bytes as soon as any are available; b"" at EOF (the worker is
            gone); raise TimeoutError when nothing arrives within timeout (None = wait forever).
            timeout=0 is a non-blocking poll: between requests the base class checks that the
            worker is silent (stray bytes or EOF there mean: replace it).'''
        def close(self) -> None       # idempotent

The worker reports and the base class handles: a soft deadline inside the worker (variables kept),
the hard deadline here at Limits.timeout_s + kill_grace_s (class attribute; kill + restart), and
`Result.restart` (the worker asks to be replaced, e.g. threads or child processes left running
after a timeout). `restarts` counts replacements; the next ExecutionResult after one says
state_lost=True. `pool(n, **kwargs)` gives an ExecutorPool of warm executors for concurrent runs.

Everything else is here: lazy start, the configure handshake, frames with deadlines, tool calls
dispatched to host callables (a tool exception goes back as `tool_error`), and failure handling:
a timeout, a dead worker or a broken/hostile frame kills the worker, starts a fresh one and comes
back as an `ExecutionResult` with an `ExecutionError` and `state_lost=True` - never as an exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .base import (
    FINAL_ANSWER_NAME,
    ExecutionError,
    ExecutionResult,
    ExecutorBase,
    ExecutorError,
    Limits,
    normalize_imports,
    normalize_tools,
)
from .protocol import (
    MAX_FRAME_BYTES,
    Configure,
    ErrorReply,
    Execute,
    FrameBuffer,
    FrameTooLarge,
    Ok,
    Ping,
    Pong,
    ProtocolError,
    RegisterTools,
    Reset,
    Result,
    SetVariables,
    Shutdown,
    ToolCall,
    ToolErrorReply,
    ToolResult,
    decode_value,
    encode_value,
    parse_worker_message,
)
from .worker import truncate_text

__all__ = ["Channel", "WorkerHandle", "RemoteExecutor", "ExecutorPool"]

POLICIES = ("restricted", "open")


class Channel(ABC):
    """A bidirectional byte stream to one worker (see the module docstring)."""

    @abstractmethod
    def write(self, data: bytes, timeout: float | None) -> None: ...

    @abstractmethod
    def read(self, max_bytes: int, timeout: float | None) -> bytes: ...

    @abstractmethod
    def close(self) -> None: ...


class WorkerHandle(ABC):
    """One running worker (see the module docstring)."""

    channel: Channel

    @abstractmethod
    def alive(self) -> bool: ...

    @abstractmethod
    def kill(self) -> None: ...

    def exit_description(self) -> str:
        return ""


class _WorkerDied(Exception):
    pass


class _Deadline(Exception):
    pass


class _Slot:
    """Holds the live handle so a finalizer can kill it without keeping the executor alive."""

    __slots__ = ("handle",)

    def __init__(self) -> None:
        self.handle: WorkerHandle | None = None

    def kill(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            with contextlib.suppress(Exception):
                handle.channel.write(Shutdown().frame(), 0.05)
            with contextlib.suppress(Exception):
                handle.kill()
            with contextlib.suppress(Exception):
                handle.channel.close()


class RemoteExecutor(ExecutorBase):
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
        self._slot = _Slot()
        self._frames = FrameBuffer(self.max_frame_bytes)
        self._next_id = 0
        self._configure_id: int | None = None  # configure sent, ack not read yet
        self._closed = False
        self._restarts = 0
        self._lost = False  # a restart happened that no ExecutionResult has reported yet
        self._finalizer = weakref.finalize(self, _Slot.kill, self._slot)

    # -- subclass interface ---------------------------------------------------------------------
    def _start_worker(self) -> WorkerHandle:
        raise NotImplementedError(f"{type(self).__name__} must implement _start_worker()")

    def _package_paths(self) -> list[str]:
        return []

    def _on_close(self) -> None:
        pass

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> RemoteExecutor:
        """Start the worker now (otherwise the first call does). Raises ExecutorError on failure."""
        with self._lock:
            self._check_open()
            self._ready()
        return self

    def __enter__(self) -> RemoteExecutor:
        return self.start()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._slot.kill()
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

    def _spawn(self) -> None:
        """Start a worker and send `configure` without waiting for the answer."""
        handle = self._start_worker()
        self._slot.handle = handle
        self._frames = FrameBuffer(self.max_frame_bytes)
        cid = self._new_id()
        message = Configure(
            id=cid,
            policy=self.policy,
            tools=sorted(self._tools),
            authorized_imports=list(self.authorized_imports),
            limits={
                "timeout_s": self.limits.timeout_s,
                "max_operations": self.limits.max_operations,
                "max_output_chars": self.limits.max_output_chars,
                "max_memory_mb": self.limits.max_memory_mb,
                "max_recursion_depth": self.limits.max_recursion_depth,
            },
            max_frame_bytes=self.max_frame_bytes,
            package_paths=self._package_paths(),
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
        if self._slot.handle is None:
            self._spawn()
        if self._configure_id is not None:
            cid = self._configure_id
            deadline = time.monotonic() + self.startup_timeout_s
            try:
                reply = self._recv(deadline)
            except (_WorkerDied, _Deadline, ProtocolError) as exc:
                why = self._slot.handle.exit_description() if self._slot.handle else ""
                self._discard()
                raise ExecutorError(
                    f"the {type(self).__name__} worker failed to start: "
                    f"{_describe_failure(exc, why)}"
                ) from None
            if isinstance(reply, ErrorReply) and reply.id == cid:
                self._discard()
                raise ExecutorError(f"the worker refused its configuration: {reply.message}")
            if not (isinstance(reply, Ok) and reply.id == cid):
                self._discard()
                raise ExecutorError(f"the worker answered {reply.op!r} to configure")
            self._configure_id = None
        return self._slot.handle  # type: ignore[return-value]

    def _discard(self) -> None:
        self._slot.kill()
        self._configure_id = None

    def _restart(self) -> None:
        """Kill the worker and start a fresh one (not waiting for it to boot)."""
        self._discard()
        self._restarts += 1
        self._lost = True
        if not self._closed:
            with contextlib.suppress(ExecutorError):
                self._spawn()

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # -- frames -----------------------------------------------------------------------------------
    def _send(self, message, deadline: float | None) -> None:
        handle = self._slot.handle
        assert handle is not None
        data = message.frame(self.max_frame_bytes)
        try:
            handle.channel.write(data, _remaining(deadline))
        except TimeoutError:
            raise _Deadline from None
        except OSError as exc:
            raise _WorkerDied(str(exc)) from None

    def _recv(self, deadline: float | None):
        handle = self._slot.handle
        assert handle is not None
        frames = self._frames
        while True:
            body = frames.next_frame()  # FrameTooLarge is a ProtocolError
            if body is not None:
                return parse_worker_message(body)
            try:
                chunk = handle.channel.read(1 << 16, _remaining(deadline))
            except TimeoutError:
                raise _Deadline from None
            except OSError as exc:
                raise _WorkerDied(str(exc)) from None
            if not chunk:
                raise _WorkerDied("the worker closed its channel")
            frames.feed(chunk)

    def _request(self, message, what: str):
        """Send a control message and wait for its ok. Breakage kills/restarts and raises."""
        if self._replace_if_unclean():
            self._ready()
        deadline = time.monotonic() + max(10.0, 2 * (self.limits.timeout_s or 5.0))
        try:
            self._send(message, deadline)
            reply = self._recv(deadline)
        except (_WorkerDied, _Deadline, ProtocolError) as exc:
            why = self._slot.handle.exit_description() if self._slot.handle else ""
            self._restart()
            raise ExecutorError(f"the worker failed during {what}: {_describe_failure(exc, why)}") from None
        except BaseException:
            self._restart()
            raise
        if isinstance(reply, ErrorReply) and reply.id == message.id:
            return reply
        if isinstance(reply, (Ok, Pong)) and reply.id == message.id:
            return reply
        self._restart()
        raise ExecutorError(f"the worker answered {reply.op!r} to {what}")

    # -- the contract -----------------------------------------------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        with self._lock:
            self._check_open()
            started = time.perf_counter()
            self._replace_if_unclean()
            self._ready()
            lost, self._lost = self._lost, False
            rid = self._new_id()
            try:
                frame = Execute.model_construct(id=rid, code=code).frame(self.max_frame_bytes)
            except FrameTooLarge:
                return ExecutionResult(
                    error=ExecutionError("ValueError", f"the code is too large to send ({len(code)} characters)"),
                )
            timeout = self.limits.timeout_s
            deadline = None if timeout is None else time.monotonic() + timeout + self.kill_grace_s
            try:
                self._send_raw(frame, deadline)
                while True:
                    msg = self._recv(deadline)
                    if isinstance(msg, ToolCall) and msg.id == rid:
                        self._answer_tool_call(msg, deadline)
                        if deadline is not None and time.monotonic() > deadline:
                            raise _Deadline
                        continue
                    if isinstance(msg, Result) and msg.id == rid:
                        result = self._to_result(msg, started)
                        if lost:
                            result = dataclasses.replace(result, state_lost=True)
                        if msg.restart:  # e.g. threads left running after a timeout
                            self._restart()
                            self._lost = False  # reported right here
                            error = result.error or ExecutionError("WorkerCrashed", "")
                            result = dataclasses.replace(result, state_lost=True, error=dataclasses.replace(
                                error, message=f"{error.message} The sandbox had to be restarted "
                                "(something the code started was still running): all variables are lost."))
                        return result
                    raise ProtocolError(f"unexpected {msg.op!r} frame while waiting for the result")
            except _Deadline:
                self._restart()
                return self._failure(
                    "TimeoutError",
                    f"execution exceeded the {timeout} s time limit (Limits.timeout_s) and the "
                    "sandbox was restarted: all variables are lost. Make the code faster or do "
                    "less per step.",
                    started,
                )
            except _WorkerDied:
                why = self._slot.handle.exit_description() if self._slot.handle else ""
                self._restart()
                return self._failure(
                    "WorkerCrashed",
                    f"the sandbox process died while running the code ({why or 'no exit status'}); "
                    "it was restarted and all variables are lost.",
                    started,
                )
            except ProtocolError as exc:
                self._restart()
                return self._failure(
                    "WorkerProtocolError",
                    f"the sandbox broke the host protocol ({str(exc)[:300]}); it was restarted and "
                    "all variables are lost.",
                    started,
                )
            except BaseException:  # KeyboardInterrupt, a tool's BaseException: the worker is mid-call
                self._restart()
                raise

    def _replace_if_unclean(self) -> bool:
        """Between requests the worker must be silent. Bytes waiting here (a frame forged after
        the last result, say) or a worker that died while idle: replace it before going on (the
        next ExecutionResult says state_lost). Returns True when it was replaced."""
        handle = self._slot.handle
        if handle is None or self._configure_id is not None:
            return False
        if not self._frames.pending():
            try:
                chunk = handle.channel.read(1 << 16, 0)
            except TimeoutError:
                return False  # silent, as it should be
            except OSError:
                chunk = b""
            if chunk:
                self._frames.feed(chunk)
        self._restart()
        return True

    def _send_raw(self, data: bytes, deadline: float | None) -> None:
        handle = self._slot.handle
        assert handle is not None
        try:
            handle.channel.write(data, _remaining(deadline))
        except TimeoutError:
            raise _Deadline from None
        except OSError as exc:
            raise _WorkerDied(str(exc)) from None

    def _failure(self, type_: str, message: str, started: float) -> ExecutionResult:
        self._lost = False  # this result reports the restart
        return ExecutionResult(
            error=ExecutionError(type_, message),
            duration_s=time.perf_counter() - started,
            state_lost=True,
        )

    def _to_result(self, msg: Result, started: float) -> ExecutionResult:
        limit = self.limits.max_output_chars
        output = decode_value(msg.output)  # ProtocolError on a bad value
        error = None
        if msg.error is not None:
            e = msg.error
            error = ExecutionError(e.type, truncate_text(e.message, 4000), e.lineno, None if e.line is None else e.line[:500])
        return ExecutionResult(
            output=output,
            logs=truncate_text(msg.logs, limit),
            is_final_answer=msg.is_final_answer,
            error=error,
            duration_s=time.perf_counter() - started,
            output_repr=None if msg.output_repr is None else truncate_text(msg.output_repr, limit),
        )

    def _answer_tool_call(self, msg: ToolCall, deadline: float | None) -> None:
        fn = self._tools.get(msg.name)
        if fn is None:
            reply = ToolErrorReply(call=msg.call, type="NameError", message=f"there is no tool named {msg.name!r}")
        else:
            args = [decode_value(a) for a in msg.args]
            kwargs = {k: decode_value(v) for k, v in msg.kwargs.items()}
            try:
                value = fn(*args, **kwargs)
            except Exception as exc:
                reply = ToolErrorReply(call=msg.call, type=type(exc).__name__, message=_exc_text(exc))
            else:
                try:
                    reply = ToolResult.model_construct(call=msg.call, value=encode_value(value))
                    data = reply.frame(self.max_frame_bytes)
                except Exception as exc:
                    reply = ToolErrorReply(
                        call=msg.call,
                        type=type(exc).__name__,
                        message=f"its result cannot be sent to the sandbox: {_exc_text(exc)}",
                    )
                else:
                    self._send_raw(data, deadline)
                    return
        self._send_raw(reply.frame(self.max_frame_bytes), deadline)

    def register_tools(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Any]) -> None:
        new = normalize_tools(tools)
        with self._lock:
            self._check_open()
            self._tools.update(new)
            if self._slot.handle is not None:
                self._ready()
                self._request(RegisterTools(id=self._new_id(), tools=sorted(new)), "register_tools")

    def set_variables(self, values: Mapping[str, Any]) -> None:
        if not isinstance(values, Mapping):
            raise TypeError("set_variables needs a mapping of names to values")
        for name in values:
            if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"variable name {name!r} must be a public Python identifier")
            if name == FINAL_ANSWER_NAME or name in self._tools:
                raise ValueError(f"variable name {name!r} is taken by a tool")
        encoded = encode_value(dict(values))
        with self._lock:
            self._check_open()
            self._ready()
            try:
                message = SetVariables(id=self._new_id(), values=encoded)
                message.frame(self.max_frame_bytes)
            except FrameTooLarge as exc:
                raise ValueError(f"variables too large to send to the sandbox: {exc}") from None
            reply = self._request(message, "set_variables")
            if isinstance(reply, ErrorReply):
                raise ValueError(reply.message)

    def reset(self) -> None:
        with self._lock:
            self._check_open()
            if self._slot.handle is None:
                return
            self._ready()
            try:
                self._request(Reset(id=self._new_id()), "reset")
            except ExecutorError:
                pass  # the worker was replaced: its state is gone, which is what reset wants
            self._lost = False  # nothing the caller wanted kept was lost

    def ping(self) -> float:
        """Round-trip a no-op frame; returns the seconds it took (starts the worker if needed)."""
        with self._lock:
            self._check_open()
            self._ready()
            t0 = time.perf_counter()
            self._request(Ping(id=self._new_id()), "ping")
            return time.perf_counter() - t0

    @classmethod
    def pool(cls, n: int, **kwargs: Any) -> ExecutorPool:
        """`n` warm executors built with `cls(**kwargs)` for concurrent runs (see ExecutorPool)."""
        return ExecutorPool(lambda: cls(**kwargs), n)


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


def _exc_text(exc: BaseException) -> str:
    try:
        return truncate_text(str(exc), 4000)
    except Exception:
        return f"<{type(exc).__name__} with an unprintable message>"


def _describe_failure(exc: BaseException, why: str) -> str:
    if isinstance(exc, _Deadline):
        text = "it did not answer in time"
    elif isinstance(exc, _WorkerDied):
        text = "it died"
    else:
        text = f"it sent a bad frame: {str(exc)[:300]}"
    return f"{text} ({why})" if why else text


class ExecutorPool:
    """A fixed set of warm executors handed out one per agent run.

        with SubprocessExecutor.pool(4, tools=tools) as pool:
            with pool.acquire() as ex:      # blocks until one is free
                ex.execute("...")
            # on release the executor is reset, so the next run starts with empty state

    Thread-safe; executors start in parallel on the first `start()`/`acquire()`.
    """

    def __init__(self, factory: Callable[[], Any], n: int) -> None:
        if n < 1:
            raise ValueError("a pool needs at least one executor")
        self._all = [factory() for _ in range(n)]
        self._free: queue.Queue = queue.Queue()
        for ex in self._all:
            self._free.put(ex)
        self._closed = False

    def __len__(self) -> int:
        return len(self._all)

    def start(self) -> ExecutorPool:
        threads = [threading.Thread(target=ex.start, daemon=True) for ex in self._all if hasattr(ex, "start")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None) -> Iterator[Any]:
        if self._closed:
            raise ExecutorError("the executor pool is closed")
        try:
            ex = self._free.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no free executor within {timeout} s") from None
        try:
            yield ex
        finally:
            try:
                ex.reset()
            except Exception:
                pass
            self._free.put(ex)

    def close(self) -> None:
        self._closed = True
        for ex in self._all:
            ex.close()

    def __enter__(self) -> ExecutorPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
