"""Runtime guards of the restricted runtime: budget, iteration, sizes, attributes, format, print.

Everything here runs inside model code's calls, so it is written for speed first: one Python call
per loop (not per iteration), C-speed chunked iteration, no per-attribute wrappers.
"""

from __future__ import annotations

import _string
import builtins
import itertools
import string
import time
from collections.abc import Callable
from typing import Any

from ..base import FinalAnswer
from .policy import (
    FORBIDDEN_ATTRIBUTES,
    FORMAT_ATTRIBUTES,
    GUARDED_LOADS,
    READABLE_DUNDERS,
    is_private_name,
)

# Sized builtins whose length is known up front: charged to the operation budget at loop entry.
SIZED_TYPES = frozenset({
    range, list, tuple, str, bytes, bytearray, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
})
_STOP = object()
_chain = itertools.chain
_islice = itertools.islice
_from_iterable = itertools.chain.from_iterable

MAX_INT_BITS = 1_000_000  # ~300,000 decimal digits: past that one C operation (a power, a
# division) on such numbers takes seconds, and off the main thread nothing can interrupt it


class PolicyError(Exception):
    """Model code tried something the sandbox does not allow (raised at run time)."""


class ImportPolicyError(PolicyError, ImportError):
    """An import the sandbox does not allow (also an ImportError, as for a missing module)."""


class SandboxFinished(RuntimeError):
    """Model code was called after its step ended (by the host, or through a kept object)."""


class LimitExceeded(BaseException):
    """A resource limit was hit; a BaseException so `except Exception` cannot hide it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
        self.ended = True
        self.fired = False
        self.generation = 0

    # called by the watchdog thread, or by a guard
    def expire(self, reason: str) -> None:
        if self.reason is None or self.reason == "finished":
            self.reason = reason
        self.ns["_live"] = False

    def dead(self) -> None:
        """Raise whatever stops the code now (the `_live` flag is False)."""
        reason = self.reason
        if reason == "final":
            raise FinalAnswer(self.final_value)
        if reason is None and self.ns.get("_live") is True:
            return None
        if reason in (None, "finished"):
            raise SandboxFinished(
                "this object belongs to sandboxed code whose step has ended; it cannot run "
                "outside execute()"
            )
        raise LimitExceeded(reason)

    def check_clock(self) -> None:
        if self.ns["_live"] is not True:
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
        if self.ns["_live"] is not True:
            self.dead()
        self.charge(1)

    # -- final answer --------------------------------------------------------------------------
    def final_answer(self, value: Any = None, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError("final_answer() takes exactly one argument: the answer")
        if not self.final_called:
            self.final_called = True
            self.final_value = value
            self.reason = "final"
            self.ns["_live"] = False
        raise FinalAnswer(self.final_value)


# -- sizes ---------------------------------------------------------------------------------------
def _too_big(what: str, bits: int) -> MemoryError:
    digits = int(bits * 0.30103)
    return MemoryError(
        f"{what} would have about {digits:,} digits, over the sandbox limit of "
        f"{int(MAX_INT_BITS * 0.30103):,}; compute with smaller numbers (or use math.log / floats)"
    )


_int_value = int.__pos__  # the int value of an int subclass, whatever it overrides


def _bits(x: Any) -> int:
    """Bit size of an int, or of a Fraction-like's numerator/denominator; 0 for other types."""
    if isinstance(x, int):
        return int.bit_length(_int_value(x))
    num, den = getattr(x, "numerator", None), getattr(x, "denominator", None)
    if isinstance(num, int) and isinstance(den, int) and not isinstance(x, float):
        return max(int.bit_length(_int_value(num)), int.bit_length(_int_value(den)))
    return 0


def check_pow(base: Any, exp: Any) -> None:
    if isinstance(exp, int):
        e = _int_value(exp)
        if e > 64:
            bits = _bits(base)
            if bits > 1 and bits * e > MAX_INT_BITS:
                raise _too_big(f"a {bits}-bit number ** {e}", bits * e)


def guarded_pow(base: Any, exp: Any, mod: Any = None) -> Any:
    if mod is None:
        check_pow(base, exp)
        return base**exp
    if isinstance(mod, int) and isinstance(exp, int):
        # modular: one squaring of a mod-sized number per exponent bit
        mod_bits, exp_bits = _bits(mod), _bits(exp)
        if mod_bits > 20_000 and mod_bits * exp_bits > 50_000_000:
            raise MemoryError(
                f"pow(x, <{exp_bits}-bit exponent>, <{mod_bits}-bit modulus>) is too slow for the "
                "sandbox; use a smaller modulus or exponent"
            )
    return builtins.pow(base, exp, mod)


def guarded_lshift(value: Any, shift: Any) -> Any:
    if isinstance(shift, int) and isinstance(value, int):
        s = _int_value(shift)
        if value and s > MAX_INT_BITS:
            raise _too_big(f"{value} << {s}", s + _bits(value))
    return value << shift


# -- attributes ----------------------------------------------------------------------------------
def exact_name(name: Any) -> str:
    """An attribute name as an exact str: a str subclass could lie in startswith/__eq__/__hash__
    between our check and the real lookup."""
    if type(name) is str:
        return name
    if isinstance(name, str):
        return str.__str__(name)
    raise TypeError(f"attribute name must be a string, not {type(name).__name__}")


def check_attr_name(name: Any, *, write: bool = False) -> str:
    name = exact_name(name)
    if name.startswith("_"):
        if write or name not in READABLE_DUNDERS:
            raise PolicyError(f"the attribute '{name}' is not allowed: attributes starting with '_' are private")
    elif name in FORBIDDEN_ATTRIBUTES:
        raise PolicyError(f"the attribute '{name}' is not allowed: it exposes interpreter internals")
    return name


_formatter_parse = string.Formatter().parse
_checked_templates: dict[str, bool] = {}


def check_format_template(template: Any) -> None:
    if not isinstance(template, str):
        return
    exact = type(template) is str  # a str subclass could lie in __eq__/__hash__: no cache
    if exact and template in _checked_templates:
        return
    for _literal, field, spec, _conv in _formatter_parse(template):
        if field:
            _first, rest = _string.formatter_field_name_split(field)
            for is_attr, key in rest:
                if is_attr:
                    check_attr_name(key)
        if spec and "{" in spec:
            check_format_template(spec)
    if exact and len(_checked_templates) < 4096:
        _checked_templates[template] = True


_STR_FORMATTERS = (str.format, str.format_map)


def fmt_attr(obj: Any, name: str) -> Any:
    """`x.format` / `x.format_map` with the template's fields checked before formatting.

    Decided by what the attribute resolves to, not by what `obj` is, so `super().format`,
    str subclasses and `str.format` itself are all covered."""
    method = getattr(obj, name)
    owner = getattr(method, "__self__", None)
    if isinstance(owner, str) and getattr(method, "__name__", None) in ("format", "format_map"):
        def bound(*args: Any, **kwargs: Any) -> Any:
            check_format_template(owner)
            return method(*args, **kwargs)

        return bound
    if method in _STR_FORMATTERS:
        def unbound(template: Any, *args: Any, **kwargs: Any) -> Any:
            check_format_template(template)
            return method(template, *args, **kwargs)

        return unbound
    return method


_MISSING = object()


def match_check(*classes: Any) -> None:
    """Before a match statement: the __match_args__ of its class patterns must be safe names."""
    for cls in classes:
        names = getattr(cls, "__match_args__", ())
        if not isinstance(names, tuple):
            raise PolicyError("__match_args__ must be a tuple of attribute names")
        for name in names:
            if type(name) is not str:
                raise PolicyError("__match_args__ must hold plain strings")
            check_attr_name(name)
            if name in GUARDED_LOADS or name.startswith("_"):
                raise PolicyError(f"matching on the attribute '{name}' is not allowed")


def make_getattr(attr_hook: Callable[[Any, str], Any], private_hook: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """The sandbox getattr(): name checks, and the same runtime guards as `obj.name`."""

    def getattr_(obj: Any, name: Any, default: Any = _MISSING) -> Any:
        name = exact_name(name)
        try:
            if is_private_name(name):
                return private_hook(obj, name)
            check_attr_name(name)
            if name in FORMAT_ATTRIBUTES:
                return fmt_attr(obj, name)
            if name in GUARDED_LOADS:
                return attr_hook(obj, name)
            return getattr(obj, name)
        except AttributeError:
            if default is _MISSING:
                raise
            return default

    getattr_.__name__ = getattr_.__qualname__ = "getattr"
    return getattr_


def make_hasattr(getattr_: Callable[..., Any]) -> Callable[[Any, Any], bool]:
    def hasattr_(obj: Any, name: Any) -> bool:
        try:
            getattr_(obj, name)
        except AttributeError:
            return False
        return True

    hasattr_.__name__ = hasattr_.__qualname__ = "hasattr"
    return hasattr_


def safe_dir(ns: dict[str, Any]) -> Callable[..., list[str]]:
    def dir_(*args: Any) -> list[str]:
        names = builtins.dir(*args) if args else list(ns)
        return sorted(n for n in names if not n.startswith("_"))

    return dir_


# -- output --------------------------------------------------------------------------------------
class OutputBuffer:
    """Keeps the head and the tail of everything printed, within `limit` characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head: list[str] = []
        self.head_size = 0
        self.tail: list[str] = []
        self.tail_size = 0
        self.total = 0

    def write(self, text: str) -> int:
        n = len(text)
        self.total += n
        room = self.head_limit - self.head_size
        if room > 0:
            part = text[:room]
            self.head.append(part)
            self.head_size += len(part)
            text = text[room:]
            if not text:
                return n
        if len(text) >= self.tail_limit:
            self.tail = [text[-self.tail_limit:]]
            self.tail_size = self.tail_limit
            return n
        self.tail.append(text)
        self.tail_size += len(text)
        if self.tail_size > 2 * self.tail_limit:
            joined = "".join(self.tail)[-self.tail_limit:]
            self.tail = [joined]
            self.tail_size = len(joined)
        return n

    def flush(self) -> None:
        pass

    def getvalue(self) -> str:
        head = "".join(self.head)
        tail = "".join(self.tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[-self.tail_limit:]
        omitted = self.total - len(head) - len(tail)
        return f"{head}\n... [{omitted:,} characters omitted] ...\n{tail}"


def make_print(buffer_ref: Callable[[], OutputBuffer]) -> Callable[..., None]:
    _print = builtins.print

    def print(*args: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False) -> None:  # noqa: A001
        _print(*args, sep=sep, end=end, file=buffer_ref() if file is None else file)

    return print


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
