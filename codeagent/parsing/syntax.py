"""Is this text Python, and does it do anything? The checks every parser tier confirms a guess with."""

from __future__ import annotations

import ast

from .excerpt import source_excerpt

__all__ = ["looks_like_code", "try_parse", "trim", "first_statement_acts"]


def looks_like_code(tree: ast.Module, source: str | None = None) -> bool:
    """True if a parsed reply does something: a call, an assignment, an import, control flow…

    A reply made only of bare names, constants, comparisons or annotations (`Paris`, `yes`,
    `42`, `not sure`, `Answer: Paris`) is prose that happens to parse, not code.
    """
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr):
            if _expression_acts(stmt.value, source):
                return True
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            continue  # `Answer: Paris` parses as a bare annotation
        elif isinstance(stmt, ast.Pass):
            continue
        else:
            return True
    return False


def trim(code: str) -> str:
    """Drop blank lines around the code and trailing blanks, never the first line's indent."""
    code = code.rstrip()
    start = 0
    while True:
        nl = code.find("\n", start)
        if nl < 0 or code[start:nl].strip():
            return code[start:]
        start = nl + 1


def try_parse(code: str, notes: list[str] | None = None, where: str = "") -> ast.Module | None:
    """The module `code` parses to, else None (a syntax error is described in `notes`, for the model)."""
    try:
        return ast.parse(code)
    except SyntaxError as err:
        if notes is not None:
            notes.append("syntax:" + _describe_syntax_error(code, err, where))
        return None
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None


def first_statement_acts(code: str) -> bool:
    """Does the reply open with a line of real code (`x = 1`, `import os`, `f(x)`)?"""
    tree = try_parse(code.split("\n", 1)[0])
    return tree is not None and looks_like_code(tree)


def _describe_syntax_error(code: str, err: SyntaxError, where: str) -> str:
    excerpt = source_excerpt(code, err)
    head = f"The code {where} is not valid Python: {err.msg} (line {err.lineno})."
    return f"{head}\n{excerpt}" if excerpt else head


def _expression_acts(node: ast.expr, source: str | None) -> bool:
    """Does this expression statement do anything (call, subscript, comprehension…)?"""
    if isinstance(node, ast.Call) and source is not None and _prose_call(node, source):
        return False
    for sub in ast.walk(node):
        if isinstance(
            sub,
            (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.Subscript, ast.Lambda,
             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr),
        ):
            return True
    return False


def _prose_call(node: ast.Call, source: str) -> bool:
    """`Paris (France)`: a capitalised word, a space, words in parentheses — a phrase."""
    if not isinstance(node.func, ast.Name) or not node.func.id[:1].isupper():
        return False
    if node.keywords or not all(isinstance(a, (ast.Name, ast.Constant)) for a in node.args):
        return False
    line = source.split("\n", node.func.end_lineno)[node.func.end_lineno - 1]
    after = line.encode("utf-8")[node.func.end_col_offset : node.func.end_col_offset + 1]
    return after == b" "
