"""A frame body measured before it is parsed: the JSON parser allocates whatever a frame
describes (`[{},{},...]` in 32 MB is ten million objects), so the host counts first.

`check_body(body, bounds, trees)` raises ValueError when the frame holds more JSON values or
containers than `trees` value trees may (plus the envelope), or nests deeper than the codec does
(checked when the host's recursion limit is high enough for the C parser to overflow the stack
first). Counting is byte counting in C (`bytes.count`): every `,` `[` `{` outside and inside
strings is an upper bound, exact enough for almost every frame; only a frame over it is counted
again with its strings blanked out (one regular-expression pass), which is exact for compact JSON.

`int_literal(bounds)` is the parser's `parse_int`: a literal over `int_digits` is refused before
`int()` reads it (int() from text is quadratic where `sys.set_int_max_str_digits(0)`).
"""

from __future__ import annotations

import sys

from .numbers import int_over
from .table import ENVELOPE_VALUES, Bounds

__all__ = ["FrameBounds", "check_body", "int_literal", "json_counts"]

# the C parser recurses once per nesting level; past this recursion limit it may run out of stack
_SAFE_RECURSION = 10_000


class FrameBounds(ValueError):
    """A frame over the bounds table (the message says which row)."""


def json_counts(body: bytes, exact: bool) -> tuple[int, int]:
    """(values, containers) of a compact JSON text; an upper bound unless `exact`."""
    if exact:
        body = _strings_blanked(body)
    containers = body.count(b"[") + body.count(b"{")
    values = containers + body.count(b",") + 1
    if exact:  # an empty container has no element the bracket stands for
        values -= body.count(b"[]") + body.count(b"{}")
    return values, containers


def check_body(body: bytes, bounds: Bounds, trees: int = 1) -> None:
    """Raise FrameBounds when `body` (a JSON text) holds more than `trees` value trees may."""
    max_values = trees * bounds.values + ENVELOPE_VALUES
    max_containers = trees * bounds.containers + ENVELOPE_VALUES
    values, containers = json_counts(body, exact=False)
    if values > max_values or containers > max_containers:
        values, containers = json_counts(body, exact=True)
        if values > max_values:
            raise FrameBounds(f"the frame holds {values:,} JSON values, over the {max_values:,} "
                              "a message may (Bounds.values)")
        if containers > max_containers:
            raise FrameBounds(f"the frame holds {containers:,} JSON arrays and objects, over the "
                              f"{max_containers:,} a message may (Bounds.containers)")
    if sys.getrecursionlimit() > _SAFE_RECURSION and containers > 2 * bounds.depth:
        depth = _depth(_strings_blanked(body))
        if depth > 2 * bounds.depth + 10:
            raise FrameBounds(f"the frame nests {depth:,} levels deep (Bounds.depth)")


def int_literal(bounds: Bounds):
    """The JSON parser's `parse_int`: `int(text)` for a literal of at most `int_digits` digits."""
    longest = bounds.int_digits + 1  # (a minus sign)

    def parse_int(text: str) -> int:
        if len(text) < 20:
            return int(text)
        if len(text) > longest:
            raise FrameBounds(f"an int literal of {len(text):,} digits, over the "
                              f"{bounds.int_digits:,} a number may have (Bounds.int_digits)")
        value = int(text)
        why = int_over(value, bounds)
        if why is not None:
            raise FrameBounds(why)
        return value

    return parse_int


_STRING = None


def _strings_blanked(body: bytes) -> bytes:
    """`body` with every JSON string literal made `""` (a string's brackets and commas are text).
    Where the JSON is broken the parser stops at the same place this pass goes wrong."""
    global _STRING
    if _STRING is None:
        import re  # (host side only, and only for large frames: the worker never imports re here)

        _STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
    return _STRING.sub(b'""', body)


def _depth(body: bytes) -> int:
    """The deepest nesting of brackets in a JSON text whose strings are blanked."""
    import itertools

    steps = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}
    brackets = body.translate(None, bytes(b for b in range(256) if b not in steps))
    return max(itertools.accumulate(map(steps.__getitem__, brackets)), default=0)
