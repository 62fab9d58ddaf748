"""Find JSON values in free text: right after a marker, or wherever they start.

Every scan is linear: a value that fails to decode is skipped past the point where it broke, so
what starts inside a broken value (a truncated document's nested objects) is never read alone.
And a value is decoded from a window that starts at it: `json` writes the line and column of an
error by counting from the start of the text it was given, which would make a reply full of
broken braces cost its length squared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["DECODER", "decode_at", "values_after", "values_in", "skip_fence_opener"]

# NaN / Infinity decode to floats; calls.json_source spells them float('nan') / float('inf').
DECODER = json.JSONDecoder(parse_constant=float)


_WINDOW = 512  # most calls fit; a longer value is decoded again from windows 16 times larger


def _decode(text: str, pos: int) -> tuple[Any, int] | int:
    """(value, end), or the position to resume scanning from when nothing decodes at `pos`. A value
    the first window cuts is read again from windows 16 times larger."""
    n, window = len(text), _WINDOW
    while True:
        end = min(n, pos + window)
        try:
            value, stop = DECODER.raw_decode(text[pos:end])
            return value, pos + stop
        except json.JSONDecodeError as err:
            if end < n and (err.pos >= end - pos - 8 or err.msg.startswith("Unterminated")):
                window *= 16
                continue
            return pos + max(1, err.pos)  # what starts inside a broken value is part of it
        except (ValueError, RecursionError):
            # nested too deep to decode: the whole window is inside that value (resuming at the
            # next opener would decode the same depth again, once per opener)
            return end


def decode_at(text: str, pos: int) -> tuple[Any, int] | None:
    """The JSON value that starts at `pos` and where it ends, or None."""
    got = _decode(text, pos)
    return None if type(got) is int else got  # type: ignore[return-value]


_BLANKS = " \t\r\n"
_BETWEEN = " \t\r\n,;"  # between the values of one marker: MiniMax's lines, Llama's `;`


def skip_fence_opener(text: str, pos: int) -> int:
    """Past blanks and a ```json (or bare ```) line at `pos`: `Action: ```json\n[...]`."""
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


def values_after(text: str, pos: int) -> list[Any]:
    """The JSON values that follow `pos` one after another; none when something else comes first.
    Character loops, not regexes: a blank or two is all there is, and this runs once a call."""
    n = len(text)
    while pos < n and text[pos] in _BLANKS:
        pos += 1
    if text.startswith("```", pos):
        pos = skip_fence_opener(text, pos)
    out: list[Any] = []
    while pos < n and text[pos] in "{[":
        got = _decode(text, pos)
        if type(got) is int:
            break
        value, pos = got  # type: ignore[misc]
        out.append(value)
        while pos < n and text[pos] in _BETWEEN:
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


# Where a JSON object or array can start: `{` before a key or `}`, `[` before a value or `]`. The
# regex skips in C what would be one failed decode per brace (`{{{{...`, `[x]` in prose).
_OPENER = re.compile(r'\{\s*["}]|\[\s*[\[{"\-0-9tfn\]]')
