"""Find JSON values in free text: right after a marker, or wherever they start.

Every scan is linear: a value that fails to decode is skipped past the point where it broke, so
what starts inside a broken value (a truncated document's nested objects) is never read alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["DECODER", "values_after", "values_in", "skip_fence_opener"]

# NaN / Infinity decode to floats; calls.json_source spells them float('nan') / float('inf').
DECODER = json.JSONDecoder(parse_constant=float)
_BLANKS = " \t\r\n"
_SEPARATORS = " \t\r\n,;"  # between the values of one marker: MiniMax lines, Llama's `;`


def _decode(text: str, pos: int) -> tuple[Any, int] | int:
    """(value, end), or the position to resume scanning from when nothing decodes at `pos`."""
    try:
        return DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as err:
        return max(pos + 1, err.pos)  # what starts inside a broken value is part of it
    except (ValueError, RecursionError):  # nested too deep: the openers that follow are inside it
        while pos < len(text) and text[pos] in "{[ \t\r\n":
            pos += 1
        return pos


def skip_fence_opener(text: str, pos: int) -> int:
    """Past blanks and a ```json (or bare ```) line at `pos`: `Action: ```json\\n[...]`."""
    n = len(text)
    while pos < n and text[pos] in _BLANKS:
        pos += 1
    if text.startswith("```", pos):
        nl = text.find("\n", pos)
        if nl >= 0 and text[pos + 3 : nl].strip().lower() in ("", "json", "json5"):
            pos = nl + 1
            while pos < n and text[pos] in _BLANKS:
                pos += 1
    return pos


def values_after(text: str, pos: int, stop: int = -1) -> list[Any]:
    """The JSON values that follow `pos` one after another (blanks, commas or `;` between them),
    up to `stop` (-1: the end); none when something else comes first."""
    stop = len(text) if stop < 0 else stop
    while pos < stop and text[pos] in _BLANKS:
        pos += 1
    if text.startswith("```", pos):
        pos = skip_fence_opener(text, pos)
    out: list[Any] = []
    while pos < stop and text[pos] in "{[":
        try:
            value, pos = DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        out.append(value)
        while pos < stop and text[pos] in _SEPARATORS:
            pos += 1
    return out


def values_in(text: str) -> Iterator[Any]:
    """The JSON objects and arrays in `text`, wherever they start ("I will call {"name": ...}
    now"), in order. A value that decodes is passed over whole: nothing inside a document (a
    pretty-printed one's nested objects on lines of their own) is ever read on its own."""
    m = _OPENER.search(text)
    while m is not None:
        got = _decode(text, m.start())
        if isinstance(got, int):
            end = got
        else:
            value, end = got
            yield value
        m = _OPENER.search(text, end)


_OPENER = re.compile(r"[{\[]")
