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
"""

from __future__ import annotations

import sys

__all__ = ["display_text", "table_kind"]

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
        return _cut(text, limit)
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


def _cut(text: str, limit: int) -> str:
    half = limit // 2 - 30
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n... [{omitted:,} characters omitted] ...\n{text[-half:]}"
