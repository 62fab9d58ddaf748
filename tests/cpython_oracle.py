"""Run a snippet in plain CPython the way an executor should: the reference for differential tests.

`run_cpython(code)` executes `code` in a fresh namespace with stdout captured and returns what an
executor returns: the printed text, the value of the last expression statement, and the error
(type, message, line number) if the code raised. Coverage tests compare executors against it.
"""

from __future__ import annotations

import ast
import contextlib
import decimal
import io
import sys
import traceback
from dataclasses import dataclass
from typing import Any

SNIPPET_FILENAME = "<snippet>"


@dataclass
class Reference:
    logs: str
    output: Any
    error_type: str | None = None
    error_message: str | None = None
    error_lineno: int | None = None


def split_last_expression(code: str) -> tuple[ast.Module, ast.Expression | None]:
    """The module without its trailing expression statement, and that expression (if any)."""
    tree = ast.parse(code, SNIPPET_FILENAME)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        ast.fix_missing_locations(last)
    return tree, last


def _error_lineno(exc: BaseException) -> int | None:
    if isinstance(exc, SyntaxError):
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SNIPPET_FILENAME]
    return frames[-1].lineno if frames else None


def run_cpython(code: str | list[str], namespace: dict[str, Any] | None = None) -> Reference:
    """Execute one snippet (or several, sharing state, like successive execute() calls).

    For a list, the result is that of the last snippet; earlier snippets must not fail.
    """
    ns: dict[str, Any] = {"__name__": "__main__"} if namespace is None else namespace
    snippets = [code] if isinstance(code, str) else list(code)
    ref = Reference("", None)
    for snippet in snippets:
        ref = _run_one(snippet, ns)
        if ref.error_type is not None and snippet is not snippets[-1]:
            raise AssertionError(f"reference run failed in an earlier snippet: {ref}")
    return ref


def _run_one(code: str, ns: dict[str, Any]) -> Reference:
    buf = io.StringIO()
    output: Any = None
    try:
        tree, last = split_last_expression(code)
        body = compile(tree, SNIPPET_FILENAME, "exec")
        tail = compile(last, SNIPPET_FILENAME, "eval") if last is not None else None
        # localcontext: snippets that set getcontext().prec must not change the test process.
        with contextlib.redirect_stdout(buf), decimal.localcontext():
            exec(body, ns)
            if tail is not None:
                output = eval(tail, ns)
    except Exception as exc:  # the snippet's own error, like an executor's result.error
        return Reference(buf.getvalue(), None, type(exc).__name__, str(exc), _error_lineno(exc))
    finally:
        sys.stdout.flush()
    return Reference(buf.getvalue(), output)
