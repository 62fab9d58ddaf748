"""What the model reads about its step: errors with their line, and values as text.

Every function here may meet model-defined `__repr__`/`__str__`: none of them lets an exception
out, and none of them runs host code paths that a model object could subvert.
"""

from __future__ import annotations

import sys
from typing import Any

from ...base import ExecutionError, Limits
from ...worker.display import display_text
from ...worker.figures import is_pil_image, pil_description
from ...worker.wire import cut_middle as truncate_middle
from ..capabilities import CapabilityError
from ..compiler.checker import Violation
from ..guards.errors import ImportPolicyError, LimitExceeded
from ..limits.watchdog import Interrupt

# From CPython 3.14 C code recurses until the thread's stack is nearly used up, not to the
# recursion limit: repr() of a list nested 100,000 deep then takes ~10 s before its RecursionError
# (each level scans the ones it is inside), in C, where no interrupt lands, so a step's time limit
# could not hold while its value is shown. Up to 3.13 the C recursion limit stopped it at once.
_STACK_BOUND = sys.version_info >= (3, 14)
_NESTING = ((list, list.__iter__), (tuple, tuple.__iter__),
           (dict, lambda d: (*dict.keys(d), *dict.values(d))),
            (set, set.__iter__), (frozenset, frozenset.__iter__))


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Is `value` a builtin container nested (through builtin containers) deeper than `limit`?
    Each container is walked once, with the builtin types' own iterators: no code of the
    value's runs, and the walk meets the step's interrupts."""
    stack, seen = [(value, 0)], set()
    while stack:
        item, depth = stack.pop()
        kind = next((k for k in _NESTING if isinstance(item, k[0])), None)
        if kind is None:
            continue
        if depth > limit:
            return True
        if id(item) not in seen:
            seen.add(id(item))
            stack.extend((child, depth + 1) for child in kind[1](item))
    return False


def safe_repr(value: Any, limit: int = 20_000) -> str:
    """repr(value), or the plain object repr if the model's __repr__ fails; head and tail kept
    within `limit` characters."""
    if _STACK_BOUND and isinstance(value, (list, tuple, dict, set, frozenset)) and \
            nested_deeper_than(value, sys.getrecursionlimit()):
        return f"<{type(value).__name__} nested deeper than the recursion limit: not shown>"
    try:
        text = repr(value)
        if type(text) is not str:
            raise TypeError
    except BaseException:  # noqa: BLE001 - model-defined __repr__ may raise anything
        text = object.__repr__(value)
    return truncate_middle(text, limit)


def safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text if type(text) is str else ""
    except BaseException:  # noqa: BLE001
        return ""


def locate(exc: BaseException, sources: dict[str, list[str]]) -> tuple[int | None, str | None]:
    """The innermost line of the model's own code in the traceback (not ours, not a library's)."""
    lineno = lines = None
    tb = exc.__traceback__
    while tb is not None:  # (another thread may change `sources`: look each one up once)
        found = sources.get(tb.tb_frame.f_code.co_filename)
        if found is not None:
            lineno, lines = tb.tb_lineno, found
        tb = tb.tb_next
    if lineno is None or lines is None:
        return None, None
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else None
    return lineno, line


def describe_error(exc: BaseException, limits: Limits, reason: str | None,
                   where: tuple[int | None, str | None]) -> ExecutionError:
    """The error a step's exception becomes; `reason` is why the run state stopped the code
    (a limit), if it did."""
    if isinstance(exc, LimitExceeded):
        reason = exc.reason
    lineno, line = where
    limit_error = _limit_error(exc, limits, reason)
    if limit_error is not None:
        return ExecutionError(limit_error[0], limit_error[1], lineno, line)
    name = type(exc).__name__
    message = truncate_middle(safe_str(exc) or f"{name} was raised (with no message)",
                              limits.max_output_chars)
    if isinstance(exc, ImportPolicyError):
        return ExecutionError("ImportError", message, lineno, line)
    if isinstance(exc, CapabilityError):  # the kind every model knows; the message names the grant
        return ExecutionError("PermissionError", message, lineno, line)
    return ExecutionError(name, message, lineno, line)


def limit_stop_error(exc: BaseException, limits: Limits, reason: str | None,
                     where: tuple[int | None, str | None]) -> ExecutionError | None:
    """The error of a step a limit stopped (the deadline, the budget, an interrupt), or None.
    Runs no model code (no str() of the exception), so it is made while interrupts are paused:
    a deadline already past would otherwise cut the rendering short before the error is named."""
    if type(exc) is LimitExceeded:
        reason = exc.reason
    if reason not in ("timeout", "operations") and type(exc) not in (Interrupt, LimitExceeded):
        return None
    limit_error = _limit_error(exc, limits, reason)
    return None if limit_error is None else ExecutionError(limit_error[0], limit_error[1], *where)


def _limit_error(exc: BaseException, limits: Limits, reason: str | None) -> tuple[str, str] | None:
    """(type, message) when a limit stopped the code, written to say which setting it was."""
    if reason == "timeout" or isinstance(exc, Interrupt):
        within = f"within {limits.timeout_s:g} s " if limits.timeout_s is not None else ""
        return ("TimeoutError", f"the code did not finish {within}(Limits.timeout_s); "
                "do less work per step or use a faster method")
    if reason == "operations":
        return ("OperationLimitError", f"the code exceeded the budget of {limits.max_operations:,} "
                "loop iterations this executor was given (Limits.max_operations); look for a loop "
                "that never ends, or do less work per step (fewer or shorter loops)")
    if isinstance(exc, LimitExceeded):
        return ("TimeoutError", "the code was stopped by the sandbox's limits "
                "(Limits.timeout_s / max_operations); do less work per step")
    if isinstance(exc, SystemError) and "without exception set" in safe_str(exc):
        # CPython bug: some containers (deque * n) fail an allocation under the memory cap
        # without setting MemoryError.
        exc = MemoryError()
    if isinstance(exc, MemoryError):
        return ("MemoryError", safe_str(exc) or "the code needed more memory than the sandbox "
                f"allows ({limits.max_memory_mb} MB, Limits.max_memory_mb); work on smaller pieces")
    if isinstance(exc, RecursionError):
        return ("RecursionError", f"maximum recursion depth of {limits.max_recursion_depth} exceeded "
                "(Limits.max_recursion_depth); use a loop instead of deep recursion")
    return None


def syntax_error(exc: SyntaxError, lines: list[str]) -> ExecutionError:
    lineno = exc.lineno
    line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else exc.text
    message = exc.msg
    if exc.offset and line is not None:
        message = f"{message} (column {exc.offset})"
    return ExecutionError(type(exc).__name__, message, lineno, line.rstrip("\n") if line else None)


def policy_error(violations: list[Violation], lines: list[str]) -> ExecutionError:
    first = violations[0]
    line = lines[first.lineno - 1] if first.lineno and 0 < first.lineno <= len(lines) else None
    message = first.message
    if len(violations) > 1:
        more = "; ".join(
            f"line {v.lineno}: {v.message}" for v in violations[1:4]
        )
        extra = f" (and {len(violations) - 4} more)" if len(violations) > 4 else ""
        message = f"{message}. Also: {more}{extra}"
    return ExecutionError("PolicyError", message, first.lineno, line)


def describe_value(value: Any, limit: int) -> str:
    """output_repr: tables and arrays like a notebook shows them, a PIL image by its size (its
    pixels come back as an attachment), anything else its repr."""
    if is_pil_image(value):
        return pil_description(value)
    text = display_text(value, limit)
    if text is None:
        return safe_repr(value, limit)
    return text if type(text) is str else str.__str__(text)  # (a model's str subclass: its data)
