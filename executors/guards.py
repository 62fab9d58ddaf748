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

from .base import FinalAnswer
from .policy import FORBIDDEN_ATTRIBUTES, FORMAT_ATTRIBUTES, READABLE_DUNDERS

# Sized builtins whose length is known up front: charged to the operation budget at loop entry.
SIZED_TYPES = frozenset({
    range, list, tuple, str, bytes, bytearray, dict, set, frozenset,
    type({}.keys()), type({}.values()), type({}.items()),
})
_STOP = object()
_chain = itertools.chain
_islice = itertools.islice
_from_iterable = itertools.chain.from_iterable

MAX_INT_BITS = 4_000_000  # ~1.2 million decimal digits: larger powers take seconds in C


class PolicyError(Exception):
    """Model code tried something the sandbox does not allow (raised at run time)."""


class ImportPolicyError(PolicyError, ImportError):
    """An import the sandbox does not allow (also an ImportError, as for a missing module)."""


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
        raise LimitExceeded(reason or "finished")

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


def guarded_pow(base: Any, exp: Any, mod: Any = None) -> Any:
    if mod is None:
        if type(exp) is int and exp > 64 and isinstance(base, int) and base not in (0, 1, -1):
            bits = base.bit_length() * exp
            if bits > MAX_INT_BITS:
                raise _too_big(f"{base} ** {exp}", bits)
        return base**exp
    return builtins.pow(base, exp, mod)


def guarded_lshift(value: Any, shift: Any) -> Any:
    if type(shift) is int and isinstance(value, int) and value and shift > MAX_INT_BITS:
        raise _too_big(f"{value} << {shift}", shift + value.bit_length())
    return value << shift


# -- attributes ----------------------------------------------------------------------------------
def check_attr_name(name: Any, *, write: bool = False) -> str:
    if type(name) is not str:
        raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
    if name.startswith("_"):
        if write or name not in READABLE_DUNDERS:
            raise PolicyError(f"the attribute '{name}' is not allowed: attributes starting with '_' are private")
    elif name in FORBIDDEN_ATTRIBUTES:
        raise PolicyError(f"the attribute '{name}' is not allowed: it exposes interpreter internals")
    return name


_formatter_parse = string.Formatter().parse
_checked_templates: dict[str, bool] = {}


def check_format_template(template: Any) -> None:
    if type(template) is not str:
        return
    if template in _checked_templates:
        return
    for _literal, field, spec, _conv in _formatter_parse(template):
        if field:
            _first, rest = _string.formatter_field_name_split(field)
            for is_attr, key in rest:
                if is_attr:
                    check_attr_name(key)
        if spec and "{" in spec:
            check_format_template(spec)
    if len(_checked_templates) < 4096:
        _checked_templates[template] = True


def fmt_attr(obj: Any, name: str) -> Any:
    """`x.format` / `x.format_map` with the template's fields checked before formatting."""
    method = getattr(obj, name)
    if isinstance(obj, str):
        def bound(*args: Any, **kwargs: Any) -> Any:
            check_format_template(obj)
            return method(*args, **kwargs)

        return bound
    if isinstance(obj, type) and issubclass(obj, str):
        def unbound(template: Any, *args: Any, **kwargs: Any) -> Any:
            check_format_template(template)
            return method(template, *args, **kwargs)

        return unbound
    return method


_MISSING = object()


def safe_getattr(obj: Any, name: Any, default: Any = _MISSING) -> Any:
    check_attr_name(name)
    if name in FORMAT_ATTRIBUTES:
        try:
            return fmt_attr(obj, name)
        except AttributeError:
            if default is _MISSING:
                raise
            return default
    if default is _MISSING:
        return getattr(obj, name)
    return getattr(obj, name, default)


def safe_hasattr(obj: Any, name: Any) -> bool:
    check_attr_name(name)
    return hasattr(obj, name)


def safe_setattr(obj: Any, name: Any, value: Any) -> None:
    check_attr_name(name, write=True)
    setattr(obj, name, value)


def safe_delattr(obj: Any, name: Any) -> None:
    check_attr_name(name, write=True)
    delattr(obj, name)


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
