"""The CPython reference: run a snippet in plain CPython the way an executor should.

One oracle for the fuzzing campaigns and the differential tests. `run_in_namespace` executes
`code` in a namespace with stdout captured and returns what an executor returns: the printed
text, the value of the last expression statement (or the final answer), and the error (type,
message, line number) if the code raised. `run_cpython` is the fuzzing entry point: a fresh
namespace with the tools, `final_answer`, no stdin, and a time limit.

Only for trusted or already-vetted code: this is not a sandbox.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import decimal
import io
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...base import FinalAnswer

__all__ = ["Reference", "run_cpython", "run_in_namespace", "reference_namespace",
           "split_last_expression", "REFERENCE_BUILTINS"]


@dataclass
class Reference:
    """What CPython did with a snippet. ok: it ran to completion or called final_answer."""

    ok: bool
    logs: str
    output: Any = None
    is_final_answer: bool = False
    error_type: str | None = None
    error_message: str | None = None
    error_lineno: int | None = None


def _unavailable(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name}() is not available in the fuzzing reference")

    return stub


# Builtins of the fuzzing reference: nothing that waits on stdin or leaves the interpreter.
REFERENCE_BUILTINS = dict(vars(builtins))
for _name in ("input", "breakpoint", "help", "exit", "quit", "copyright", "credits", "license"):
    REFERENCE_BUILTINS[_name] = _unavailable(_name)


class _ReferenceTimeout(BaseException):
    pass


def split_last_expression(code: str, filename: str = "<snippet>") -> tuple[ast.Module, ast.Expression | None]:
    """The module without its trailing expression statement, and that expression (if any)."""
    tree = ast.parse(code, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        ast.fix_missing_locations(last)
    return tree, last


def _error_lineno(exc: BaseException, filename: str) -> int | None:
    if isinstance(exc, SyntaxError):
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return frames[-1].lineno if frames else None


@contextlib.contextmanager
def _time_limit(timeout_s: float | None) -> Iterator[None]:
    """SIGALRM after timeout_s, on the main thread only (elsewhere: no limit)."""
    if timeout_s is None or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _ReferenceTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_in_namespace(code: str, namespace: dict[str, Any], *, timeout_s: float | None = None,
                     filename: str = "<snippet>") -> Reference:
    """Execute `code` in `namespace` (kept: successive calls share state, like execute() calls).

    The program's own exceptions come back in the Reference; `final_answer` (when the namespace
    has one raising FinalAnswer) ends the run. The decimal context is restored afterwards, so a
    snippet that sets getcontext().prec does not change this process.
    """
    out = io.StringIO()
    try:
        with _time_limit(timeout_s), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(io.StringIO()), decimal.localcontext():
            tree, last = split_last_expression(code, filename)
            # dont_inherit: this module's `from __future__ import annotations` must not leak into
            # the program (it would stop module-level annotations from being evaluated)
            body = compile(tree, filename, "exec", dont_inherit=True)
            tail = compile(last, filename, "eval", dont_inherit=True) if last is not None else None
            exec(body, namespace)
            value = eval(tail, namespace) if tail is not None else None
        return Reference(True, out.getvalue(), value)
    except FinalAnswer as fa:
        return Reference(True, out.getvalue(), fa.value, is_final_answer=True)
    except _ReferenceTimeout:
        return Reference(False, out.getvalue(), error_type="TimeoutError",
                         error_message=f"the reference run took over {timeout_s} s")
    except BaseException as exc:  # noqa: BLE001 - the program's own exception, reported
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Reference(False, out.getvalue(), error_type=type(exc).__name__,
                         error_message=str(exc), error_lineno=_error_lineno(exc, filename))


def reference_namespace(tools: Mapping[str, Callable[..., Any]] | None = None) -> dict[str, Any]:
    """A fresh namespace as an executor's: the tools, a `final_answer` that ends the run, and
    builtins without stdin or exit."""

    def final_answer(value: Any = None) -> Any:
        raise FinalAnswer(value)

    return {"__name__": "__main__", "__builtins__": REFERENCE_BUILTINS,
            "final_answer": final_answer, **dict(tools or {})}


def run_cpython(code: str, tools: Mapping[str, Callable[..., Any]] | None = None,
                timeout_s: float = 10.0) -> Reference:
    """Run `code` under plain CPython in a fresh namespace, with stdout captured, the same tools
    and a `final_answer` that ends the run; the last expression statement's value is the output.
    Only for trusted or already-vetted code: this is not a sandbox."""
    return run_in_namespace(code, reference_namespace(tools), timeout_s=timeout_s, filename="<fuzz>")
