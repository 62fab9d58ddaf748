"""A lie (`attacks/frames.py`) played against the host: the real RemoteExecutor, a scripted worker.

`LyingWorker` is a RemoteExecutor whose worker is a `ScriptedChannel` in this process: it answers
`configure` like a worker, then answers the request a lie is for (a step, or get_variables) with
the lie's bytes, and then closes the channel or goes silent. Silence costs no time: a read with
nothing queued raises TimeoutError at once, as a real one would once its timeout had passed. The
worker the host starts after killing the liar is honest (`1 + 1` is 2), so the judge also sees
that the executor goes on.

`judge_lie(lie)` returns a `WireVerdict`: what the host did (the step's error type, or the
values it took) and every way it failed (raised, hung, grew past its bound, left the liar alive,
an unclear error, a value over the bounds table in its hands, unusable afterwards).
"""

from __future__ import annotations

import dataclasses
import functools
import time
import tracemalloc
from typing import Any

from ...base import ExecutionResult, ExecutorError, Limits
from ...worker.bounds import BOUNDS
from ...worker.bounds.numbers import decimal_over, int_over
from .host_touches import touch_like_a_host

__all__ = ["LyingWorker", "ScriptedChannel", "WireVerdict", "judge_lie", "memory_bound"]  # noqa: F822 - (made at first use: __getattr__)

#: what touching the values a host took may cost it: a copy or two of its text (repr, json), a few MB
TOUCH_BYTES = 2 * BOUNDS.text_bytes + 16 * 2**20
#: the step errors a lie may end in (each says the sandbox was restarted)
CLEAR_ERRORS = ("WorkerProtocolError", "WorkerCrashed", "TimeoutError")


def memory_bound(max_frame_bytes: int) -> int:
    """What the host may hold at once while it reads one frame: the frame in its buffer, as bytes
    and as text (3 × the frame); the parsed message, at most Bounds.containers lists and dicts
    (~240 bytes each with their slots: a tag's dict has three keys) and Bounds.values other
    values (~40 bytes); the decoded value is built in place; 32 MB to spare."""
    return 3 * max_frame_bytes + BOUNDS.containers * 240 + BOUNDS.values * 40 + 32 * 2**20


def _protocol():
    from ...remote import protocol

    return protocol


class _ScriptedChannel:  # (+ remote.link.Channel, at first use: _classes)
    """A worker in this process: `lie` (bytes, pre-rendered) answers the `trigger` request;
    None makes an honest worker."""

    def __init__(self, lie: bytes | None, trigger: str, end: str) -> None:
        self.lie, self.trigger, self.end = lie, trigger, end
        from ...remote.protocol import FrameBuffer

        self.incoming = FrameBuffer(BOUNDS.frame_bytes)
        self.queue = memoryview(b"")
        self.pending: list[bytes] = []
        self.closed = self.done = False

    def write(self, data: bytes, timeout: float | None) -> None:
        if self.closed or (self.done and self.end == "eof" and self.lie is not None):
            raise BrokenPipeError("the worker is gone")
        self.incoming.feed(data)
        while (body := self.incoming.next_frame()) is not None:
            self._answer(_protocol().unpack_message(body))

    def _answer(self, msg: dict) -> None:
        op, rid = msg["op"], msg.get("id")
        if self.lie is not None and op == self.trigger and not self.done:
            self.done = True
            self._send_raw(self.lie)
            self.lie = b""  # (its bytes are in the queue: hold them once)
            return
        answers = {"configure": {"op": "ok", "id": rid}, "ping": {"op": "pong", "id": rid, "pid": 1},
                   "reset": {"op": "ok", "id": rid}, "register_tools": {"op": "ok", "id": rid},
                   "set_variables": {"op": "ok", "id": rid},
                   "get_variables": {"op": "variables", "id": rid, "values": {}},
                   "execute": {"op": "result", "id": rid, "output": 2}}
        if op in answers and not (self.done and self.lie is not None):
            self._send_raw(_protocol().pack_frame(answers[op]))

    def _send_raw(self, data: bytes) -> None:
        self.pending.append(data)

    def read(self, max_bytes: int, timeout: float | None) -> bytes:
        if not self.queue and self.pending:
            self.queue = memoryview(self.pending.pop(0))
        if self.queue:
            chunk = bytes(self.queue[:max_bytes])
            self.queue = self.queue[max_bytes:]
            return chunk
        if self.closed or (self.done and self.end == "eof" and self.lie is not None):
            return b""
        raise TimeoutError  # (silence: as a real read once its timeout had passed)

    def close(self) -> None:
        self.closed = True


class _HandleBody:  # (+ remote.link.WorkerHandle, at first use)
    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.killed = False

    def alive(self) -> bool:
        return not self.killed

    def kill(self) -> None:
        self.killed = True

    def exit_description(self) -> str:
        return "was killed" if self.killed else ""


@functools.cache
def _classes():
    """ScriptedChannel, _Handle and LyingWorker, made at first use: importing the fuzzing package
    loads no place where code runs (tests/test_fuzz.py), and these subclass the host's side."""
    from ...remote.executor import RemoteExecutor
    from ...remote.link import Channel, WorkerHandle

    channel_class = type("ScriptedChannel", (_ScriptedChannel, Channel), {"__doc__": _ScriptedChannel.__doc__})
    handle_class = type("_Handle", (_HandleBody, WorkerHandle), {})

    class LyingWorker(RemoteExecutor):
        """A RemoteExecutor whose first worker tells `lie` (bytes for the request `trigger`)."""

        def __init__(self, lie: bytes, trigger: str, end: str, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._lie = (lie, trigger, end)
            self.handles: list[Any] = []

        def _start_worker(self) -> WorkerHandle:
            lie, trigger, end = self._lie if not self.handles else (None, "", "eof")
            self._lie = None  # type: ignore[assignment]  (the bytes live in the channel now)
            handle = handle_class(channel_class(lie, trigger, end))
            self.handles.append(handle)
            return handle

    return channel_class, handle_class, LyingWorker


def _protocol_error() -> type:
    return _protocol().ProtocolError


def __getattr__(name: str) -> Any:
    if name in ("ScriptedChannel", "LyingWorker"):
        channel, _, worker = _classes()
        return channel if name == "ScriptedChannel" else worker
    raise AttributeError(name)


@dataclasses.dataclass
class WireVerdict:
    """What the host did with one lie, and what went wrong (`problems`, empty when it held)."""

    outcome: str = ""  # the step's error type, "refused" (an ExecutorError), or "accepted"
    peak_bytes: int = 0  # what the host held at most while it took the lie
    touch_bytes: int = 0  # ... and while it touched what it took (str, int(), format, json, ...)
    seconds: float = 0.0
    problems: list[str] = dataclasses.field(default_factory=list)


def _over_bounds(value: Any, depth: int = 0) -> str | None:
    """A number or container the host took that the bounds table forbids (the decoder's job)."""
    t = type(value)
    if t is int and int_over(value, BOUNDS):
        return "an int over Bounds.int_digits"
    if t.__name__ == "Decimal" and t.__module__ == "decimal" and decimal_over(value, BOUNDS):
        return "a Decimal over the bounds"
    if depth > 2 * BOUNDS.depth + 10:
        return "a value nested over Bounds.depth"
    items = value.values() if t is dict else value if t in (list, tuple, set, frozenset) else ()
    for item in items:
        found = _over_bounds(item, depth + 1)
        if found:
            return found
    return None


def judge_lie(lie: Any, *, max_frame_bytes: int = BOUNDS.frame_bytes, time_limit_s: float = 120.0) -> WireVerdict:
    """Play `lie` (an `attacks.frames.Lie`) against a LyingWorker; see the module docstring."""
    verdict = WireVerdict()
    taken: list[Any] = []

    def probe(*args: Any, **kwargs: Any) -> int:
        taken.extend(args)
        taken.extend(kwargs.values())
        return 1

    data = lie.render(2, max_frame_bytes)  # (configure is request 1, the lie's request is 2)
    trigger = "execute" if lie.scenario == "execute" else "get_variables"
    ex = _classes()[2](data, trigger, lie.end, tools={"probe": probe}, limits=Limits(timeout_s=1.0),
                     max_frame_bytes=max_frame_bytes)
    del data
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        ex.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.monotonic()
        _play(ex, lie, verdict, taken)
        verdict.seconds = time.monotonic() - t0
        verdict.peak_bytes = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        touch_like_a_host(_touchable(taken))  # what a host does with them must stay bounded too
        verdict.touch_bytes = tracemalloc.get_traced_memory()[1] - base
        after = ex.execute("1 + 1")
        if after.error is not None and after.error.type in CLEAR_ERRORS:  # the liar, still serving
            after = ex.execute("1 + 1")
        if after.error is not None or after.output != 2:
            verdict.problems.append(f"unusable afterwards: `1 + 1` gave {after.output!r} / {after.error}")
    except BaseException as exc:  # noqa: BLE001 - anything out of the host is a finding
        verdict.problems.append(f"raised {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        if not tracing:
            tracemalloc.stop()
        ex.close()
    if verdict.peak_bytes > memory_bound(max_frame_bytes):
        verdict.problems.append(f"the host grew by {verdict.peak_bytes / 2**20:.0f} MB")
    if verdict.touch_bytes > TOUCH_BYTES:
        verdict.problems.append(f"touching what it took grew the host by {verdict.touch_bytes / 2**20:.0f} MB")
    if verdict.seconds > time_limit_s:
        verdict.problems.append(f"took {verdict.seconds:.1f} s")
    liar = ex.handles[0] if ex.handles else None
    if verdict.outcome in CLEAR_ERRORS + ("refused",) and liar is not None and not liar.killed:
        verdict.problems.append("the lying worker was not killed")
    for value in taken:
        found = _over_bounds(value)
        if found:
            verdict.problems.append(f"the host took {found}")
    return verdict


def _play(ex: Any, lie: Any, verdict: WireVerdict, taken: list[Any]) -> None:
    """Make the request the lie answers; note what came back (and touch it like a host would)."""
    if lie.scenario == "execute":
        result = ex.execute("the step the worker lies about")
        if not isinstance(result, ExecutionResult):
            verdict.problems.append(f"execute returned a {type(result).__name__}")
            return
        error = result.error
        verdict.outcome = "accepted" if error is None or not result.state_lost else error.type
        if result.state_lost and (error is None or error.type not in CLEAR_ERRORS
                                  or "sandbox" not in error.message):
            verdict.problems.append(f"an unclear error: {error}")
        taken.append(result.output)
    else:
        try:
            values = ex.get_variables()
        except (ExecutorError, KeyError) as exc:
            verdict.outcome = "refused"
            if isinstance(exc, ExecutorError) and "worker" not in str(exc):
                verdict.problems.append(f"an unclear error: {exc}")
            return
        except _protocol_error() as exc:
            verdict.problems.append(f"a ProtocolError reached the caller: {exc}")
            return
        verdict.outcome = "accepted"
        taken.extend(values.values())


def _touchable(values: list[Any], most: int = 2_000) -> list[Any]:
    """The values a host touches: each value when it is small, and always its scalar leaves
    (where a number that grows when formatted would hide), at most `most` of them. Touching a
    million-element list costs the host what it costs any list: that is not what this looks for."""
    out: list[Any] = []
    stack = list(values)
    while stack and len(out) < most:
        value = stack.pop()
        t = type(value)
        if t in (list, tuple, set, frozenset, dict):
            if len(value) <= 100:
                out.append(value)
            stack.extend(list(value.values() if t is dict else value)[:most])
        else:
            out.append(value)
    return out
