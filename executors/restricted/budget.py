"""The per-runtime run state: the operation budget, the deadline, metered iteration, the final
answer. Shared by the guards (which charge it) and the watchdog (which expires it).

Everything here runs inside model code's calls, so it is written for speed first: one Python call
per loop (not per iteration), C-speed chunked iteration.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from ..base import FinalAnswer
from .errors import LimitExceeded, SandboxFinished
from .generators import GeneratorTracker
from .names import LIVE

# Sized builtins whose length is known up front: charged to the operation budget at loop entry.
SIZED_TYPES = frozenset({
    range, list, tuple, str, bytes, bytearray, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
})
_STOP = object()
_chain = itertools.chain
_islice = itertools.islice
_from_iterable = itertools.chain.from_iterable

FINAL_ANSWER_USAGE = "final_answer(value) or final_answer(answer=value)"


class RunState:
    """Per-runtime accounting shared by the guards and the watchdog."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.ops = 0
        self.max_ops = 1 << 62
        self.deadline = float("inf")
        self.reason: str | None = None
        self.final_called = False
        self.final_value: Any = None
        self.thread_id = 0
        self.in_tool = False
        self.settling = False  # the runtime is finishing the step: never interrupted
        self.ended = True
        self.fired = False
        self.generation = 0
        self.generators = GeneratorTracker()  # closed at the end of every step

    # called by the watchdog thread, or by a guard
    def expire(self, reason: str) -> None:
        if self.reason is None or self.reason == "finished":
            self.reason = reason
        self.ns[LIVE] = False

    def dead(self) -> None:
        """Raise whatever stops the code now (the `_live` flag is False)."""
        reason = self.reason
        if reason == "final":
            raise FinalAnswer(self.final_value)
        if reason is None and self.ns.get(LIVE) is True:
            return None
        if reason in (None, "finished"):
            raise SandboxFinished(
                "this object belongs to sandboxed code whose step has ended; it cannot run "
                "outside execute()"
            )
        raise LimitExceeded(reason)

    def check_clock(self) -> None:
        if self.ns[LIVE] is not True:
            self.dead()
        if time.monotonic() > self.deadline:
            self.expire("timeout")
            self.dead()

    def charge(self, n: int) -> None:
        self.ops += n
        if self.ops > self.max_ops:
            self.expire("operations")
            self.dead()

    # -- iteration ---------------------------------------------------------------------------
    def guard_iter(self, it: Any) -> Any:
        """`for x in it` → `for x in _for(it)`: charge sized builtins up front, chunk the rest."""
        if type(it) in SIZED_TYPES:
            n = len(it)
            if self.ops + n <= self.max_ops:
                self.ops += n
                return it
        return _from_iterable(self._chunks(it))

    def _chunks(self, it: Any) -> Any:
        it = iter(it)
        size = 32
        while True:
            self.check_clock()
            first = next(it, _STOP)
            if first is _STOP:
                return
            n = min(size, self.max_ops - self.ops)
            if n <= 0:
                self.expire("operations")
                self.dead()
            self.ops += n
            yield _chain((first,), _islice(it, n - 1))
            if size < 4096:
                size *= 8

    def guard_range(self, *args: Any) -> Any:
        """The sandbox range(): a real range, unless it is too long to walk within the budget;
        then a BigRange whose iteration is metered (C consumers like deque() or `in` would
        otherwise walk it without any check)."""
        r = range(*args)
        limit = self.max_ops - self.ops if self.max_ops < (1 << 62) else 10_000_000
        if len(r) <= limit:
            return r
        return BigRange(r, self)

    def guard_iter_call(self, obj: Any, *sentinel: Any) -> Any:
        """iter(callable, sentinel) is endless in C: meter it. iter(x) is the real thing."""
        if sentinel:
            return self.guard_iter(iter(obj, *sentinel))
        return iter(obj)

    def tick(self) -> None:
        """One metered iteration (while/else loops)."""
        if self.ns[LIVE] is not True:
            self.dead()
        self.charge(1)

    # -- final answer --------------------------------------------------------------------------
    # -- final answer --------------------------------------------------------------------------
    def final_answer(self, *args: Any, **kwargs: Any) -> None:
        value = one_answer(args, kwargs)
        if not self.final_called:
            self.final_called = True
            self.final_value = value
            self.reason = "final"
            self.ns[LIVE] = False
        raise FinalAnswer(self.final_value)


def one_answer(args: tuple, kwargs: dict[str, Any]) -> Any:
    """The one value given to final_answer(), positionally or as `answer=` (smolagents' name)."""
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and len(kwargs) == 1 and "answer" in kwargs:
        return kwargs["answer"]
    got = ([f"{len(args)} positional value{'s' if len(args) > 1 else ''}"] if args else []) + [
        f"the keyword '{name}'" for name in kwargs]
    raise TypeError(
        f"final_answer() takes exactly one value: {FINAL_ANSWER_USAGE}; "
        f"got {' and '.join(got) or 'none'}"
    )


class BigRange:
    """A range too long to walk within the operation budget: same API, metered iteration."""

    __slots__ = ("_r", "_state")

    def __init__(self, r: range, state: RunState) -> None:
        self._r = r
        self._state = state

    def __iter__(self) -> Any:
        return iter(self._state.guard_iter(_Unsized(self._r)))

    def __reversed__(self) -> Any:
        return iter(self._state.guard_iter(_Unsized(self._r[::-1])))

    def __len__(self) -> int:
        return len(self._r)

    def __contains__(self, x: Any) -> bool:
        return x in self._r

    def __getitem__(self, i: Any) -> Any:
        out = self._r[i]
        return out if isinstance(out, int) else self._state.guard_range(out.start, out.stop, out.step)

    def __eq__(self, other: Any) -> bool:
        return self._r == (other._r if isinstance(other, BigRange) else other)

    def __hash__(self) -> int:
        return hash(self._r)

    def __repr__(self) -> str:
        return repr(self._r)

    def __bool__(self) -> bool:
        return bool(self._r)

    @property
    def start(self) -> int:
        return self._r.start

    @property
    def stop(self) -> int:
        return self._r.stop

    @property
    def step(self) -> int:
        return self._r.step

    def count(self, x: Any) -> int:
        return self._r.count(x)

    def index(self, x: Any) -> int:
        return self._r.index(x)


class _Unsized:
    """Hides a range's type so guard_iter meters it instead of charging it up front."""

    __slots__ = ("it",)

    def __init__(self, it: Any) -> None:
        self.it = it

    def __iter__(self) -> Any:
        return iter(self.it)
