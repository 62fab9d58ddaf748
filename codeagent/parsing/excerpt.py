"""Show the model the line its code failed on, with a caret under the spot."""

from __future__ import annotations

import unicodedata


def source_excerpt(
    code: str,
    where: SyntaxError | int | None,
    col: int | None = None,
    end_col: int | None = None,
) -> str:
    """The offending line of `code`, numbered, with carets under the error.

    `where` is a `SyntaxError` (its line, offset and end offset are used) or a 1-based line
    number (e.g. a runtime error's); `col`/`end_col` are 0-based character columns. Without a
    column the whole statement on that line is underlined. Returns "" when the line is unknown.

        3 |     total = sum(prices
          |                ^
    """
    if isinstance(where, SyntaxError):
        lineno = where.lineno
        if where.offset and where.offset > 0:
            col = where.offset - 1
            if where.end_offset and where.end_offset > where.offset and where.end_lineno in (
                None,
                lineno,
            ):
                end_col = where.end_offset - 1
    else:
        lineno = where
    if not isinstance(lineno, int) or lineno < 1:
        return ""
    lines = code.replace("\r\n", "\n").split("\n")
    if lineno > len(lines):
        if not isinstance(where, SyntaxError):
            return ""
        # "unexpected EOF": point just past the end of the last line
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
        lineno, col, end_col = len(lines), len(lines[-1].rstrip()), None
    line = lines[lineno - 1].rstrip()
    number = f"{lineno:>4} | "
    gutter = " " * (len(number) - 2) + "| "
    if col is None:
        body = line.lstrip()
        if not body:
            return f"{number}{line}"
        col, end_col = len(line) - len(body), len(line)
    col = max(0, min(col, len(line)))
    end_col = col + 1 if end_col is None or end_col <= col else min(end_col, max(len(line), col + 1))
    pad = "".join(ch if ch == "\t" else " " * _width(ch) for ch in line[:col])
    carets = "^" * max(1, sum(_width(ch) for ch in line[col:end_col]))
    return f"{number}{line}\n{gutter}{pad}{carets}"


def _width(ch: str) -> int:
    """Terminal columns a character takes: CJK and other wide characters take two."""
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
