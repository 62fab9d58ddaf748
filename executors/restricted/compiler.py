"""Source to code object: parse → policy check → instrument → compile, with a cache.

Each distinct source gets its own file name (`<step-N>`), which is how tracebacks are mapped back
to the model's lines and how the host guard recognises functions the model defined.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from collections.abc import Callable
from types import CodeType

from ..base import ExecutionError
from .checker import inspect_tree
from .instrument import instrument
from .names import STEP_FILE_PREFIX
from .report import policy_error, syntax_error

_MAX_SOURCES = 64
_CACHE_SIZE = 256

Compiled = tuple[CodeType | None, ExecutionError | None, str]


class StepCompiler:
    """`reserved_names()`: the names the code may not rebind (tools, final_answer); asked only
    when a source is compiled, not on a cache hit."""

    def __init__(self, reserved_names: Callable[[], frozenset[str]]) -> None:
        self._reserved_names = reserved_names
        self._cache: OrderedDict[str, Compiled] = OrderedDict()
        self.sources: OrderedDict[str, list[str]] = OrderedDict()  # file name -> lines
        self._step = 0

    def clear(self) -> None:
        """Forget compiled code (the reserved names changed: a new tool)."""
        self._cache.clear()

    def compile(self, code: str) -> Compiled:
        """(code object or None, the error for the model or None, the file name)."""
        key = code
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        self._step += 1
        filename = f"{STEP_FILE_PREFIX}{self._step}>"
        lines = code.splitlines()
        entry = (*_compile(code, filename, lines, self._reserved_names()), filename)
        self.sources[filename] = lines
        while len(self.sources) > _MAX_SOURCES:
            self.sources.popitem(last=False)
        self._cache[key] = entry
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return entry


def _compile(code: str, filename: str, lines: list[str],
             reserved_names: frozenset[str]) -> tuple[CodeType | None, ExecutionError | None]:
    try:
        tree = ast.parse(code, filename=filename, mode="exec")
    except SyntaxError as exc:
        return None, syntax_error(exc, lines)
    except (ValueError, MemoryError, RecursionError) as exc:
        return None, ExecutionError(type(exc).__name__, f"the code could not be parsed: {exc}")
    violations, needed = inspect_tree(tree, reserved_names)
    if violations:
        return None, policy_error(violations, lines)
    try:
        return compile(instrument(tree, needed), filename, "exec", dont_inherit=True), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return None, ExecutionError(type(exc).__name__, str(exc), getattr(exc, "lineno", None))
