"""A frame body measured before it is parsed: the JSON parser allocates whatever a frame
describes (`[{},{},...]` in 32 MB is ten million objects), so the host counts first.

`check_body(body, bounds)` raises FrameBounds when the frame holds more JSON values or containers
than a message may (one value tree and its envelope), or nests deeper than the codec does
(checked when the host's recursion limit is high enough for the C parser to overflow the stack
first). The count is `[` + `{` + `,` + 1, which for compact JSON is the number of values with an
empty container counted twice (the encoder spends the same). Counting is byte counting in C
(`bytes.count`) over the whole frame, strings included: an upper bound, exact enough for almost
every frame. Only a frame over it is counted again outside its strings, a megabyte at a time
(split at the quotes that are not escaped), so the recount holds a few megabytes whatever the frame.

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
    """(values, containers) of a compact JSON text (see the module docstring); counted outside
    its strings when `exact`, else an upper bound."""
    if exact:
        containers, commas = _outside(body)
    else:
        containers, commas = body.count(b"[") + body.count(b"{"), body.count(b",")
    return containers + commas + 1, containers


def check_body(body: bytes, bounds: Bounds, trees: int = 1) -> None:
    """Raise FrameBounds when `body` (a JSON text) holds more than `trees` value trees may."""
    max_values = trees * bounds.values + ENVELOPE_VALUES
    max_containers = trees * bounds.containers + ENVELOPE_VALUES
    values, containers = json_counts(body, exact=False)
    exact = values > max_values or containers > max_containers
    if exact:
        values, containers = json_counts(body, exact=True)
        if values > max_values:
            raise FrameBounds(f"the frame holds {values:,} JSON values, over the {max_values:,} "
                              "a message may (Bounds.values)")
        if containers > max_containers:
            raise FrameBounds(f"the frame holds {containers:,} JSON arrays and objects, over the "
                              f"{max_containers:,} a message may (Bounds.containers)")
    if sys.getrecursionlimit() > _SAFE_RECURSION and containers > 2 * bounds.depth:
        depth = _depth(body, exact)
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


_CHUNK = 1 << 20
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_COUNTED = bytes(b for b in range(256) if b not in b'"[]{},')
_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}


def _outside_parts(body: bytes):
    """The brackets and commas of `body` outside its JSON strings, a chunk at a time. A quote escaped by an odd
    run of backslashes is no delimiter (pairs of backslashes go first, then escaped quotes);
    where the JSON is broken the parser stops at the same place this goes wrong."""
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    # only quotes and what is counted stay: the pieces between quotes are then mostly empty or
    # one byte, which CPython does not allocate
    body = body.translate(None, _NOT_COUNTED)
    inside = False
    for start in range(0, len(body), _CHUNK):
        parts = body[start:start + _CHUNK].split(b'"')
        yield b"".join(parts[1::2] if inside else parts[0::2])
        if len(parts) % 2 == 0:  # an odd number of quotes: the next chunk starts on the other side
            inside = not inside


def _outside(body: bytes) -> tuple[int, int]:
    """(containers, commas) outside the strings of `body`."""
    containers = commas = 0
    for part in _outside_parts(body):
        containers += part.count(b"[") + part.count(b"{")
        commas += part.count(b",")
    return containers, commas


def _depth(body: bytes, exact: bool) -> int:
    """The deepest nesting of brackets in a JSON text (outside its strings when `exact`)."""
    import itertools

    parts = _outside_parts(body) if exact else (body,)
    brackets = b"".join(part.translate(None, _NOT_BRACKETS) for part in parts)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)
