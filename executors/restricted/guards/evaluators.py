"""Strings that libraries evaluate as Python go through the policy.

pandas `eval`/`query`, numexpr, sympy's `sympify`/`parse_expr` and `lambdify`, patsy's and
formulaic's formulas (statsmodels' `smf.ols("y ~ np.log(x)", df)`) and typing's forward
references compile a string the model wrote (or built from what the model wrote), then run it
with the library's own globals, where nothing of the policy applies. The capability guard sees
the compile (audit event `compile`) and asks `check_library_source` about the string: what the
policy would refuse in model code is refused there too, and so is what the policy allows in
model code only because a runtime check goes with it (there is none in a library's evaluation):
the sandbox's checked builtins (getattr, type, vars, print, ...), the guarded attributes
(`__class__`, `format`, `mro`, ...) and every underscore attribute. Code a library builds itself
from its own names (networkx's argmap, scipy's argument parsers, sympy's import lines) is listed
in the capability table (`LIBRARY_CODE_GENERATORS`) and compiles without this check.

`EVALUATORS` records the entry points known to do this (from docs/library-capabilities.md), with
the rule applied, so a user can see them; the guard's compile check is what enforces it and also
covers entry points nobody listed.
"""

from __future__ import annotations

import ast
import re

from ..compiler.checker import inspect_tree
from ..compiler.policy import GUARDED_LOADS

# Names a library writes into the source it compiles for the model's own expression (names only,
# never attributes): pandas turns `@x` into `__pd_eval_local_x` (and `` `a b` `` into
# `BACKTICK_QUOTED_STRING_a_b`); lambdify names its function `_lambdifygenerated` and its dummy
# arguments `_Dummy_38`.
_LIBRARY_NAMES = re.compile(r"__pd_eval_local_(\w+)|_(lambdifygenerated)|_(Dummy_\d+)")
# Builtins the sandbox hands model code as checked versions: in a library's evaluation they would
# be the unchecked ones.
RAW_UNSAFE_NAMES = frozenset({"getattr", "hasattr", "setattr", "delattr", "vars", "dir", "type",
                              "print"})

EVALUATORS: dict[str, str] = {
    "pandas.eval": "the expression is checked with the policy when pandas compiles it",
    "pandas.DataFrame.eval": "the expression is checked with the policy",
    "pandas.DataFrame.query": "the expression is checked with the policy",
    "numexpr.evaluate": "the expression is checked with the policy",
    "typing.get_type_hints": "string annotations are checked with the policy (hidden anyway)",
    "typing.ForwardRef": "checked with the policy (hidden anyway)",
    "sympy.sympify / sympy.parsing.sympy_parser.parse_expr": "the transformed expression "
        "(Symbol('x')**Integer(2)...) and its evaluate=False syntax tree are checked",
    "sympy.lambdify": "the generated function is checked (its own names allowed)",
    "statsmodels.formula.api (patsy, formulaic)": "each term of the formula is checked as "
        "an expression when the formula library evaluates it",
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
    tree = _parse(source)
    if tree is None:
        return "the source does not parse as Python"
    _library_names(tree)
    violations = inspect_tree(tree)
    if violations:
        return violations[0].message
    return _unchecked(tree)


def _library_names(tree: ast.AST) -> None:
    """The names a library writes itself lose their underscore (only names, never attributes)."""
    for node in ast.walk(tree):
        for field in ("id", "arg", "name"):
            value = getattr(node, field, None)
            if type(value) is str and value.startswith("_"):
                match = _LIBRARY_NAMES.fullmatch(value)
                if match is not None:
                    setattr(node, field, next(g for g in match.groups() if g))


def _unchecked(tree: ast.AST) -> str | None:
    """What the policy allows model code only with a runtime check, which a library's own
    evaluation does not have."""
    for node in ast.walk(tree):
        if type(node) is ast.Name and node.id in RAW_UNSAFE_NAMES:
            return (f"'{node.id}' is not available in a string a library evaluates (the "
                    "sandbox's checked version does not apply there)")
        if type(node) is ast.Attribute and (node.attr.startswith("_") or node.attr in GUARDED_LOADS):
            return (f"the attribute '{node.attr}' is not available in a string a library "
                    "evaluates")
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
