"""The codec's words: its tag, its errors, `Repr` (a value that crossed as its repr) and the
reprs it makes, each bounded: `safe_repr` (a model's `__repr__`, in the step), `opaque_repr` (no
code of the value runs), `short_repr` (the host's own text about values that crossed). Stdlib only."""

from __future__ import annotations

from ..bounds import BOUNDS, Bounds
from ..bounds.numbers import decimal_over, int_over

__all__ = ["REPR_CHARS", "REPR_TYPES", "TAG", "NotPlain", "ProtocolError", "Repr", "cut_marker",
           "opaque_repr", "safe_repr", "safe_str", "short_repr"]

TAG = "$t"
REPR_CHARS = 10_000  # the longest repr a value crosses as


class ProtocolError(Exception):
    """A frame or message that breaks the protocol (malformed, oversized, unknown, out of order)."""


class Repr(str):
    """A value that could not cross the boundary as itself: its `repr`, marked as such."""

    __slots__ = ("type_name",)

    def __new__(cls, text: str, type_name: str = "") -> Repr:
        self = super().__new__(cls, text)
        self.type_name = type_name
        return self


# Repr classes of this codec: a restricted worker holds two copies of it (the worker's own
# `worker.codec` and the runtime's `executors.worker.codec`), and the runtime's reprs stay reprs.
REPR_TYPES: set[type] = {Repr}


class NotPlain(Exception):
    """encode_value(strict=True): the value holds something that is not builtin data."""


def safe_repr(value, limit: int = REPR_CHARS) -> str:
    """`repr(value)` cut to `limit` characters (head and tail); a `__repr__` that raises or
    returns a non-str gives a placeholder instead of an exception. Runs the value's `__repr__`:
    for a model's value, only inside the step."""
    try:
        text = repr(value)
    except BaseException as exc:  # a hostile __repr__ must not take the codec down
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        text = f"<unrepresentable {type(value).__name__} object>"
    if type(text) is not str:
        text = f"<unrepresentable {type(value).__name__} object>"
    if len(text) > limit:
        half = limit // 2
        text = f"{text[:half]}...[{len(text) - 2 * half} chars truncated]...{text[-half:]}"
    return text


def opaque_repr(value, limit: int = REPR_CHARS) -> str:
    """A placeholder naming the value's type, computed without calling any of its methods (a
    class's `__qualname__` is the type's own slot)."""
    return f"<{type(value).__qualname__} object>"[:limit]


def safe_str(value) -> str:
    """`str(value)`, or "" when a hostile `__str__` raises or returns a non-str."""
    try:
        text = str(value)
    except BaseException:
        return ""
    return text if type(text) is str else ""


def cut_marker(value, describe, why: str = "", bounds: Bounds = BOUNDS) -> dict:
    """For values too big or deep to walk: a bounded-effort repr (reprlib elides; numbers over
    the bounds are named by their size), and why it is not the value."""
    name = type(value).__name__
    if describe is opaque_repr:
        text = opaque_repr(value)
    else:
        try:
            text = _ShortRepr.of(bounds).repr(value)
        except Exception:
            text = opaque_repr(value)
        if type(text) is not str:
            text = opaque_repr(value)
    if why:
        text = f"<{text[:REPR_CHARS // 2]} did not cross the boundary: {why}>"
    return {TAG: "repr", "v": text[:REPR_CHARS], "type": name}


def short_repr(value, limit: int = 300, bounds: Bounds = BOUNDS) -> str:
    """A repr whose cost is bounded, for the host's own text about values that crossed (builtin
    data, never a model's object): reprlib's elisions (a few items of each container, the ends of
    long strings), numbers over the bounds named by their size; cut to `limit` characters."""
    try:
        text = _ShortRepr.of(bounds).repr(value)
    except Exception:  # noqa: BLE001 - a value reprlib cannot show: its type
        text = opaque_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _ShortRepr:
    """reprlib's Repr (imported when first needed), with ints and Decimals over the bounds named
    by their size: reprlib itself calls repr() of an int, quadratic in its digits."""

    made: dict = {}

    @classmethod
    def of(cls, bounds: Bounds):
        short = cls.made.get(id(bounds))
        if short is None:
            import reprlib

            class Short(reprlib.Repr):
                def repr_int(self, x, level):
                    return "<int>" if int_over(x, bounds) else super().repr_int(x, level)

                def repr_Decimal(self, x, level):
                    return "<Decimal>" if decimal_over(x, bounds) else self.repr_instance(x, level)

                def repr_bytes(self, x, level):  # (reprlib would repr all of it, then cut)
                    return self.repr_str(x, level)

                repr_bytearray = repr_Repr = repr_bytes

            short = cls.made[id(bounds)] = Short()
            short.maxlevel, short.maxstring, short.maxother = 4, 200, 200
        return short
