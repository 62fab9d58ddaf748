"""How a step's value reads as text when it is a table or an array, like a notebook shows it.
Stdlib only: the types are recognized by their module and name, never by importing pandas or
numpy (a step that used neither pays a few attribute reads).

    DataFrame: 1,000 rows × 3 columns
    dtypes: a int64, b float64, c object
           a      b  c
    0      0    0.0  x
    ..   ...    ... ..
    999  999  499.5  x

A DataFrame or Series gets its shape and dtypes, then pandas' own table with the notebook's
defaults whatever the display options say (60 rows at most, else the first and last 5; 20
columns at most; cells cut at 50 characters), so a frame of any size reads the same and fits
the output cap. A numpy array small enough to print whole is its own repr; a larger one gets
its shape and dtype, then numpy's summary (first and last 3 along each axis). If the text is
still over `limit`, fewer rows and columns are tried, then the middle is cut.

`display_text(value, limit)` returns None for any other value (the caller uses repr). It runs
library code on the model's objects: callers run it under the step's limits.

Also here, the one way text is cut everywhere (a step's output, a repr, the worker's result, the
agent's observation, the MCP server's answer): `cut_middle` keeps the head and the tail within
`limit` and puts a note in the middle, `\n... [N characters omitted] ...\n`, whose N is true.
Text already cut is cut again without lying: a note inside the part removed is counted as what it
stood for, so `full_length(cut_middle(text, n)) == full_length(text)` (the law
tests/test_truncation.py holds), and for text with no note `full_length` is `len`.
"""

from __future__ import annotations

import sys

__all__ = ["cut_middle", "cut_parts", "display_text", "full_length", "omitted_note", "table_kind"]

# (rows, min_rows, columns, cell width): the notebook's defaults first, then smaller tries
_SHAPES = ((60, 10, 20, 50), (20, 6, 10, 30), (10, 4, 6, 20))
_ARRAY_WHOLE = 1000  # numpy's own threshold: arrays up to this size print whole
_DTYPES_LISTED = 12  # more columns than this: dtypes are counted, not listed


def table_kind(value) -> str | None:
    """"frame", "series", "array" (a plain numpy ndarray) or None."""
    cls = type(value)
    numpy = sys.modules.get("numpy")
    if numpy is not None and cls is getattr(numpy, "ndarray", None):
        return "array"
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    frame, series = getattr(pandas, "DataFrame", None), getattr(pandas, "Series", None)
    for base in cls.__mro__:
        if base is frame:
            return "frame"
        if base is series:
            return "series"
    return None


def display_text(value, limit: int) -> str | None:
    """The notebook-like text of a DataFrame, Series or ndarray within `limit` characters; None
    for other values or when the library cannot render it (the caller falls back to repr)."""
    kind = table_kind(value)
    if kind is None:
        return None
    try:
        render = _RENDER[kind]
        text = ""
        for shape in _SHAPES:
            text = render(value, *shape)
            if len(text) <= limit:
                return text
        return cut_middle(text, limit)
    except Exception:  # noqa: BLE001 - a library version without these arguments: plain repr
        return None


def _frame(frame, max_rows: int, min_rows: int, max_cols: int, width: int) -> str:
    rows, cols = frame.shape
    header = f"DataFrame: {rows:,} rows × {cols:,} columns"
    body = frame.to_string(max_rows=max_rows, min_rows=min_rows, max_cols=max_cols,
                           max_colwidth=width, show_dimensions=False)
    return f"{header}\n{_dtypes(frame.dtypes)}\n{body}"


def _dtypes(dtypes) -> str:
    pairs = [(str(name), str(dtype)) for name, dtype in dtypes.items()]
    if len(pairs) <= _DTYPES_LISTED:
        return "dtypes: " + ", ".join(f"{_short(name)} {dtype}" for name, dtype in pairs)
    counts: dict[str, int] = {}
    for _, dtype in pairs:
        counts[dtype] = counts.get(dtype, 0) + 1
    return "dtypes: " + ", ".join(f"{dtype}({n})" for dtype, n in sorted(counts.items()))


def _series(series, max_rows: int, min_rows: int, max_cols: int, width: int) -> str:
    name = "" if series.name is None else f" {_short(str(series.name))!r}"
    header = f"Series{name}: {len(series):,} values, dtype {series.dtype}"
    body = series.to_string(max_rows=max_rows, min_rows=min_rows, length=False, dtype=False,
                            name=False)
    return f"{header}\n{body}"


def _array(array, max_rows: int, min_rows: int, max_cols: int, width: int) -> str:
    if array.size <= _ARRAY_WHOLE and max_rows == _SHAPES[0][0]:
        return repr(array)
    numpy = sys.modules["numpy"]
    edge = 3 if max_rows == _SHAPES[0][0] else 2
    body = numpy.array2string(array, threshold=_ARRAY_WHOLE, edgeitems=edge, separator=", ",
                              prefix="array(", max_line_width=100)
    shape = "×".join(str(n) for n in array.shape) or "scalar"
    return f"ndarray: shape {shape} ({array.size:,} values), dtype {array.dtype}\narray({body})"


_RENDER = {"frame": _frame, "series": _series, "array": _array}


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Cutting text: head and tail kept, a note with the true count of what the middle held

_NOTE_HEAD = "\n... ["
_NOTE_TAIL = " characters omitted] ...\n"


def omitted_note(count: int) -> str:
    return f"{_NOTE_HEAD}{count:,}{_NOTE_TAIL}"


def _notes(text: str) -> list[tuple[int, int, int]]:
    """(start, end, count) of each note in `text`, left to right; a note is exactly what
    `omitted_note` writes (canonical digits), nothing looser."""
    found: list[tuple[int, int, int]] = []
    i = text.find(_NOTE_HEAD)
    while i >= 0:
        j = i + len(_NOTE_HEAD)
        k = text.find(_NOTE_TAIL, j, j + 40)
        digits = text[j:k] if k > j else ""
        if digits and digits.replace(",", "").isascii() and digits.replace(",", "").isdigit():
            count = int(digits.replace(",", ""))
            if f"{count:,}" == digits:
                end = k + len(_NOTE_TAIL)
                found.append((i, end, count))
                i = text.find(_NOTE_HEAD, end)
                continue
        i = text.find(_NOTE_HEAD, i + 1)
    return found


def full_length(text: str) -> int:
    """How long `text` was before any cut: its length with each note replaced by its count."""
    if _NOTE_HEAD not in text:
        return len(text)
    return len(text) + sum(count - (end - start) for start, end, count in _notes(text))


def cut_middle(text: str, limit: int, head_share: float = 0.5) -> str:
    """`text` within `limit` characters (or one note, if `limit` is shorter than a note): its
    head (`head_share` of the room) and its tail, the middle replaced by a note that counts it
    truly, notes of earlier cuts it swallows included."""
    if len(text) <= limit:
        return text
    notes = _notes(text) if _NOTE_HEAD in text else []
    total = full_length(text) if notes else len(text)
    room = max(limit - len(omitted_note(total)), 0)  # the note's count is at most `total`
    start = int(room * head_share)
    end = len(text) - (room - start)
    if notes and notes[-1][1] - notes[0][0] <= end - start:  # swallow earlier notes: one note shown
        start = min(max(start, notes[-1][1] - (end - start)), notes[0][0])
        end = start + len(text) - room
    for s, e, _ in notes:  # never split a note: widen the middle over it
        if s < start < e:
            start = s
        if s < end < e:
            end = e
    inside = [(s, e, c) for s, e, c in notes if start <= s and e <= end]
    count = end - start + sum(c - (e - s) for s, e, c in inside)
    return text[:start] + omitted_note(count) + text[end:]


def cut_parts(head: str, tail: str, omitted: int, limit: int) -> str:
    """The text whose `head` and `tail` are kept and whose `omitted` characters between them are
    gone (an output buffer's), within `limit`, the note counting them."""
    return cut_middle(f"{head}{omitted_note(omitted)}{tail}" if omitted else head + tail, limit)
