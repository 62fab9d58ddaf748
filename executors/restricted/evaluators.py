"""Strings that libraries evaluate as Python go through the policy.

pandas `eval`/`query`, numexpr and typing's forward references compile a string the model wrote,
then run it with the library's own globals, where nothing of the policy applies. The capability
guard sees the compile (audit event `compile`) and asks `check_library_source` about the string:
what the policy would refuse in model code is refused there too.

`EVALUATORS` records the entry points known to do this (from docs/library-capabilities.md), with
the rule applied, so a user can see them; the guard's compile check is what enforces it and also
covers entry points nobody listed.
"""

from __future__ import annotations

import ast
import re

from .checker import inspect_tree

# Names a library writes into the source it compiles for the model's own expression:
# pandas turns `@x` into `__pd_eval_local_x` and `` `a b` `` into `BACKTICK_QUOTED_STRING_a_b`.
_LIBRARY_NAMES = re.compile(r"\b__pd_eval_local_(\w+)")

EVALUATORS: dict[str, str] = {
    "pandas.eval": "the expression is checked with the policy when pandas compiles it",
    "pandas.DataFrame.eval": "the expression is checked with the policy",
    "pandas.DataFrame.query": "the expression is checked with the policy",
    "numexpr.evaluate": "the expression is checked with the policy",
    "typing.get_type_hints": "string annotations are checked with the policy (hidden anyway)",
    "typing.ForwardRef": "checked with the policy (hidden anyway)",
    "matplotlib.ticker.StrMethodFormatter": "a format string, not compiled: its fields are "
                                            "attribute lookups on floats only",
    "logging.Formatter": "format fields over a LogRecord; logging is not authorized by default",
}


def check_library_source(source: object) -> str | None:
    """Why the policy refuses `source` (a str, bytes or AST a library is compiling), or None."""
    if isinstance(source, ast.AST):
        # An AST's strings may be str subclasses whose methods lie to the checker: check the
        # source it stands for, as text (join and unparse copy their data in C), parsed anew.
        try:
            source = ast.unparse(source)
        except Exception:  # noqa: BLE001 - not an AST the compiler would take either
            return "the syntax tree cannot be checked"
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError:
            return "the source is not UTF-8 text"
    if type(source) is not str:
        return f"cannot check a {type(source).__name__}"
    source = _LIBRARY_NAMES.sub(r"\1", source)
    tree = _parse(source)
    if tree is None:
        return "the source does not parse as Python"
    violations, _needed = inspect_tree(tree)
    if violations:
        return violations[0].message
    return None


def _parse(source: str) -> ast.AST | None:
    for mode in ("exec", "eval"):
        try:
            return ast.parse(source, mode=mode)
        except (SyntaxError, ValueError):
            continue
        except (MemoryError, RecursionError):
            return None
    return None
