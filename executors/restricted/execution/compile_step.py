"""Source to code object: parse → check and instrument (one pass) → compile, with a cache.

The cache is one per process, shared by every runtime: a model repeats itself, a retry resends
the same block, and a pool's executors run the same snippets. Its key is everything that changes
the result: the source, the names the code may not rebind (tools, final_answer), and whether an
operation budget is metered (the policy is this package's code: one per process). What the
authorized imports and the other limits decide is checked when the code runs, not compiled in.

Each distinct compile gets its own file name (`<step-N>`), which is how tracebacks are mapped back
to the model's lines (`SOURCES`) and how the host guard recognises functions the model defined.
"""

from __future__ import annotations

import ast
import itertools
import threading
from collections import OrderedDict
from types import CodeType

from ...base import ExecutionError
from ..compiler.checker import PolicyChecker
from ..compiler.instrument import Instrumenter
from ..compiler.names import STEP_FILE_PREFIX
from .report import policy_error, syntax_error

__all__ = ["Compiled", "SOURCES", "compile_step"]

_CACHE_SIZE = 256

# (code object or None, the error for the model or None, the file name)
Compiled = tuple[CodeType | None, ExecutionError | None, str]

_lock = threading.Lock()
_cache: OrderedDict[tuple[str, frozenset[str], bool], Compiled] = OrderedDict()
SOURCES: OrderedDict[str, list[str]] = OrderedDict()  # file name -> the source's lines
_numbers = itertools.count(1)
_last: list = [None]  # the entry made or served most recently (the end of both orders)


def compile_step(code: str, reserved_names: frozenset[str], metered: bool) -> Compiled:
    """The compiled step for `code` (from the cache when this exact key was compiled before)."""
    key = (code, reserved_names, metered)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            if hit is not _last[0]:  # (a step repeated: already the most recent of both)
                _cache.move_to_end(key)
                SOURCES.move_to_end(hit[2])
                _last[0] = hit
            return hit
    filename = f"{STEP_FILE_PREFIX}{next(_numbers)}>"
    lines = code.splitlines()
    entry = (*_compile(code, filename, lines, reserved_names, metered), filename)
    with _lock:
        _cache[key] = entry
        SOURCES[filename] = lines
        _last[0] = entry
        while len(_cache) > _CACHE_SIZE:
            _, (_, _, old) = _cache.popitem(last=False)
            SOURCES.pop(old, None)
    return entry


def _compile(code: str, filename: str, lines: list[str], reserved_names: frozenset[str],
             metered: bool) -> tuple[CodeType | None, ExecutionError | None]:
    try:
        tree = ast.parse(code, filename=filename, mode="exec")
    except SyntaxError as exc:
        return None, syntax_error(exc, lines)
    except (ValueError, MemoryError, RecursionError) as exc:
        return None, ExecutionError(type(exc).__name__, f"the code could not be parsed: {exc}")
    checker = PolicyChecker(reserved_names)
    try:
        tree = Instrumenter(checker, metered=metered).visit(tree)
    except RecursionError:
        return None, ExecutionError("RecursionError", "the code is nested too deeply to check; "
                                    "split long expressions into several statements")
    violations = checker.sorted_violations()
    if violations:
        return None, policy_error(violations, lines)
    try:
        return compile(tree, filename, "exec", dont_inherit=True), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return None, ExecutionError(type(exc).__name__, str(exc), getattr(exc, "lineno", None))
