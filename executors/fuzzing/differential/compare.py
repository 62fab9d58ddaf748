"""Classifying a program's result against the CPython reference: equal, refused, divergent or
mismatch (see `Outcome`)."""

from __future__ import annotations

import re
from typing import Any

from ...base import ExecutionResult, Limits
from .oracle import Reference

__all__ = ["REFUSAL_TYPES", "compare_with_reference", "is_plain", "normalize"]

# Error types by which an executor refuses or stops a program (never compared with CPython).
# Any other error where CPython raised nothing (or something else) is "divergent".
REFUSAL_TYPES = frozenset({
    "PolicyError", "TimeoutError", "OperationLimitError", "MemoryError", "RecursionError",
    "OutputLimitError", "LimitError", "SecurityError", "SyntaxError", "ImportError",
    "ModuleNotFoundError", "ToolError", "WorkerCrashed",
})

_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is built from plain data only (so its repr is the same everywhere)."""
    if depth > 20:
        return False
    if type(value) in _PLAIN:
        return True
    if type(value) in (list, tuple, set, frozenset):
        return all(is_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in value.items())
    return False


def normalize(text: str) -> str:
    """Drop what legitimately differs between two runs: addresses and module prefixes."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", text)
    text = re.sub(r"<([A-Za-z_][\w.]*\.)?(\w+) object", r"<\2 object", text)
    text = re.sub(r"<(class|enum) '([\w.<>]+\.)?(\w+)'>", r"<\1 '\3'>", text)
    return text


def _compare_output(r: ExecutionResult, ref: Reference) -> str | None:
    """Why the executor's value differs from CPython's, or None."""
    if is_plain(ref.output) and is_plain(r.output):
        if repr(r.output) != repr(ref.output):
            return f"output {r.output!r:.200} != CPython's {ref.output!r:.200}"
    elif is_plain(ref.output) and r.output_repr is not None:
        if r.output_repr != repr(ref.output):
            return f"output {r.output_repr:.200} != CPython's {ref.output!r:.200}"
    elif ref.output is not None:
        ours_text = r.output_repr if r.output_repr is not None else (r.output if isinstance(r.output, str) else None)
        if ours_text is not None and normalize(ours_text) != normalize(repr(ref.output)):
            return f"output {ours_text:.200} != CPython's {normalize(repr(ref.output)):.200}"
    elif r.output is not None:
        return f"output {r.output_repr or type(r.output).__name__:.200} but CPython's is None"
    return None


def _compare_success(r: ExecutionResult, ref: Reference, limits: Limits) -> tuple[str, str]:
    if not ref.ok:
        return "mismatch", f"executor succeeded, CPython raised {ref.error_type}"
    ours, theirs = normalize(r.logs), normalize(ref.logs)
    if len(ref.logs) > limits.max_output_chars:
        n = limits.max_output_chars // 3
        ours, theirs = ours[:n], theirs[:n]
    if ours != theirs:
        return "mismatch", f"printed output differs:\n  executor: {r.logs[:300]!r}\n  cpython:  {ref.logs[:300]!r}"
    if bool(r.is_final_answer) != ref.is_final_answer:
        return "mismatch", f"is_final_answer {r.is_final_answer} != CPython's {ref.is_final_answer}"
    problem = _compare_output(r, ref)
    return ("mismatch", problem) if problem else ("equal", "")


def compare_with_reference(r: ExecutionResult, ref: Reference, limits: Limits) -> tuple[str, str]:
    """(status, detail) of an executor result against the CPython reference."""
    err = r.error
    if err is None:
        return _compare_success(r, ref, limits)
    if err.type == ref.error_type and err.type not in ("TimeoutError", "MemoryError", "RecursionError"):
        return "equal", f"both raised {err.type}"
    detail = f"{err.type}: {err.message[:200]}" + (f" (CPython: {ref.error_type or 'ok'})")
    if err.type not in REFUSAL_TYPES:
        # An ordinary exception CPython did not raise: a feature the executor lacks, or its bug.
        return "divergent", detail
    return "refused", detail
