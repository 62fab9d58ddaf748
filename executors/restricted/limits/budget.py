"""The per-runtime run state: the operation budget, the deadline, metered iteration, the final
answer. Shared by the guards (which charge it) and the watchdog (which expires it).

Everything here runs inside model code's calls, so it is written for speed first: one Python call
per loop (not per iteration), C-speed chunked iteration.

How `_for(it)` charges a loop (`guard_iter`), cheapest first — a loop of a few items entered
thousands of times must cost about what CPython's loop costs:
- a sized builtin (list, range, dict view, ...): its length, up front;
- a generator the model's own code made (a generator function, a generator expression): nothing,
  and it is handed back as it is: every loop inside it is metered where it runs, and its frames
  reach the eval breaker, where the deadline's interrupt lands (without a budget, any generator:
  only the deadline matters then, and Python frames always meet it);
- an iterator over a builtin container, and enumerate/zip/map/filter/reversed over such (as deep
  as 8 wrappers): the number of items it can still give (their exact length hints, read through
  `__reduce__` of those exact types), up front;
- anything else: consumed in C-speed chunks of 32, then 256, up to 4096 items, each charged and
  the clock checked before it (an endless C iterator stops at the budget or the deadline).
Charging up front may count items a loop never reaches (it breaks early): the budget counts the
work a loop may do, which is what stops runaway code.
"""

from __future__ import annotations

import itertools
import operator
import time
from types import GeneratorType
from typing import Any

from ...base import FinalAnswer
from ..capabilities import GUARD
from ..compiler.names import LIVE, STEP_FILE_PREFIX
from ..guards.errors import LimitExceeded, SandboxFinished
from ..guards.generators import GeneratorTracker

# Sized builtins whose length is known up front: charged to the operation budget at loop entry.
SIZED_TYPES = frozenset({
    range, list, tuple, str, bytes, bytearray, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
})
# Iterators over builtin containers: their length hint is exact (the items still to come).
_CONTAINER_ITERATORS = frozenset(type(iter(x)) for x in (
    [], (), range(0), range(1 << 64), "", "\u00e9", b"", bytearray(), {}, set(), {}.values(),
    {}.items(),
    reversed([]), reversed(range(0)), reversed({}), reversed({}.values()), reversed({}.items()),
)) | {reversed}
_WRAPPERS = frozenset({enumerate, zip, map, filter})
UNMETERED = 1 << 62  # `max_ops` when there is no operation budget
_MAX_WRAPPERS = 8
_length_hint = operator.length_hint
_STOP = object()
_chain = itertools.chain
_islice = itertools.islice
_from_iterable = itertools.chain.from_iterable


def _model_made(gen: GeneratorType) -> bool:
    """The generator runs the model's own code (its loops are metered where they run). Reading
    `gi_code` is an audit event: the capability guard is told it is ours (its rule would allow
    it anyway, at the price of a call into the hook)."""
    step = GUARD.current()
    if step is None:
        code = gen.gi_code
    else:
        busy, step.busy = step.busy, True
        try:
            code = gen.gi_code
        finally:
            step.busy = busy
    return code.co_filename.startswith(STEP_FILE_PREFIX)


def _bound(it: Any) -> int | None:
    """How many items `it` can still give, when that is known without running any of its code
    (see the module docstring); None otherwise."""
    kind = type(it)
    if kind in _CONTAINER_ITERATORS:
        return _length_hint(it)
    for _ in range(_MAX_WRAPPERS):
        if kind not in _WRAPPERS:
            return None
        parts = it.__reduce__()[1]
        if kind is enumerate or kind is filter:
            it = parts[0] if kind is enumerate else parts[1]
        else:  # zip, map: as many items as the shortest known part (zip/map stop there)
            best = None
            for part in parts if kind is zip else parts[1:]:
                bound = len(part) if type(part) in SIZED_TYPES else _bound(part)
                if bound is not None and (best is None or bound < best):
                    best = bound
            return best
        kind = type(it)
        if kind in _CONTAINER_ITERATORS:
            return _length_hint(it)
    return None


FINAL_ANSWER_USAGE = "final_answer(value) or final_answer(answer=value)"


class RunState:
    """Per-runtime accounting shared by the guards and the watchdog."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.ops = 0
        self.max_ops = UNMETERED
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
        self.host_tracing: Any = None  # the host's trace/profile functions, off for the step
        self.host_monitoring = False  # the step's events hidden from sys.monitoring tools

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
        """`for x in it` → `for x in _for(it)` (see the module docstring)."""
        kind = type(it)
        if kind in SIZED_TYPES:
            n = len(it)
        elif kind is GeneratorType and (self.max_ops == UNMETERED or _model_made(it)):
            return it
        else:
            n = _bound(it)
            if n is None:
                return self._metered(it)
        if self.ops + n <= self.max_ops:
            self.ops += n
            return it
        return self._metered(it)  # (charged as it goes: the budget ends inside the loop)

    def _metered(self, it: Any) -> Any:
        it = iter(it)
        self.check_clock()
        n = min(32, self.max_ops - self.ops)
        if n <= 0:
            self.expire("operations")
            self.dead()
        self.ops += n
        return _chain(_islice(it, n), _from_iterable(self._chunks(it, 256)))

    def _chunks(self, it: Any, size: int) -> Any:
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
        limit = self.max_ops - self.ops if self.max_ops < UNMETERED else 10_000_000
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
