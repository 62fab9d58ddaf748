"""Undo a common slip: code that stores its result in a variable named `final_answer`.

    final_answer = compute()          final_answer_value = compute()
    final_answer(final_answer)   ->   final_answer(final_answer_value)

The variable is renamed wherever Python's scoping rules say it is that variable; calls
`final_answer(...)` keep their name, so they reach the real tool. Edits are made at the exact
source positions (AST positions, asttokens tokens), so comments, strings and formatting stay
as they were, and code that never binds the name comes back unchanged.

Left alone on purpose: a parameter, function or class named `final_answer` and a plain
`from m import final_answer` (deliberate definitions, and renaming a parameter would break
keyword calls), and class attributes (renaming would break `Cls.final_answer`).
"""

from __future__ import annotations

import ast
import unicodedata
from typing import TYPE_CHECKING

from executors.base import FINAL_ANSWER_NAME as NAME

if TYPE_CHECKING:
    import asttokens
_NEW_NAME = "final_answer_value"


class _Scope:
    __slots__ = ("kind", "parent", "binds", "hands_off", "is_global", "is_nonlocal", "uses")

    def __init__(self, kind: str, parent: _Scope | None):
        self.kind = kind  # module | function | class | comprehension
        self.parent = parent
        self.binds = False  # the name is assigned, deleted, imported as, caught as… here
        self.hands_off = False  # …or bound on purpose (parameter, def, class, plain import)
        self.is_global = False
        self.is_nonlocal = False
        self.uses: list[tuple[str, ast.AST]] = []  # (how, node) occurrences of the name here


def fix_final_answer(code: str) -> str:
    """Rename a variable that shadows `final_answer`, so the real `final_answer(...)` is called.

    Returns `code` unchanged (the same string) when it does not assign `final_answer`, or when
    it does not parse. The result always parses when the input does.
    """
    if NAME not in code or _only_called(code):
        return code
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    collector = _Collector(_Scope("module", None))
    try:
        collector.visit(tree)
    except RecursionError:
        return code
    edits = _edits(code, collector.scopes)
    if not edits:
        return code
    new = _fresh_name(code)
    out, last = [], 0
    for start, end, text in sorted(edits):
        if start < last:
            continue
        out.append(code[last:start])
        out.append(text.replace("{new}", new))
        last = end
    out.append(code[last:])
    fixed = "".join(out)
    try:
        ast.parse(fixed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    return fixed


def _only_called(code: str) -> bool:
    """True when every `final_answer` in the text is followed by `(`: a call (or a `def`),
    never a binding. Saves parsing the code in the common case."""
    pos = code.find(NAME)
    while pos >= 0:
        end = pos + len(NAME)
        before = code[pos - 1] if pos else " "
        after = end
        while after < len(code) and code[after] in " \t":
            after += 1
        nxt = code[after : after + 1]
        if not (before.isalnum() or before == "_") and nxt != "(":
            if not (after == end and (nxt.isalnum() or nxt == "_")):  # not a longer identifier
                return False
        pos = code.find(NAME, end)
    return True


def _fresh_name(code: str) -> str:
    name, k = _NEW_NAME, 1
    while name in code:  # any occurrence, even in a string: cheap and never collides
        k += 1
        name = f"{_NEW_NAME}_{k}"
    return name


class _Collector:
    """Walk the tree, noting where the name occurs and which scope binds it."""

    def __init__(self, module: _Scope):
        self.scopes = [module]

    def visit(self, node: ast.AST, scope: _Scope | None = None) -> None:
        scope = scope or self.scopes[0]
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node, scope)
        else:
            self.children(node, scope)

    def children(self, node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self.visit(child, scope)

    def new_scope(self, kind: str, parent: _Scope) -> _Scope:
        scope = _Scope(kind, parent)
        self.scopes.append(scope)
        return scope

    # names ---------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name, scope: _Scope) -> None:
        if node.id == NAME:
            if not isinstance(node.ctx, ast.Load):
                scope.binds = True
            scope.uses.append(("name", node))

    def visit_Call(self, node: ast.Call, scope: _Scope) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == NAME:
            scope.uses.append(("callee", node.func))  # stays: it must reach the real tool
        else:
            self.visit(node.func, scope)
        for child in (*node.args, *node.keywords):
            self.visit(child, scope)

    def visit_NamedExpr(self, node: ast.NamedExpr, scope: _Scope) -> None:
        target = scope
        while target.kind == "comprehension":  # `:=` binds in the enclosing function
            target = target.parent
        self.visit(node.target, target)
        self.visit(node.value, scope)

    def visit_Global(self, node: ast.Global, scope: _Scope) -> None:
        if NAME in node.names:
            scope.is_global = True
            scope.uses.append(("decl", node))

    def visit_Nonlocal(self, node: ast.Nonlocal, scope: _Scope) -> None:
        if NAME in node.names:
            scope.is_nonlocal = True
            scope.uses.append(("decl", node))

    def visit_alias(self, node: ast.alias, scope: _Scope) -> None:
        if node.asname == NAME:
            scope.binds = True
            scope.uses.append(("last", node))
        elif node.asname is None and node.name.split(".")[0] == NAME:
            scope.binds = scope.hands_off = True

    def visit_ExceptHandler(self, node: ast.ExceptHandler, scope: _Scope) -> None:
        if node.name == NAME:
            scope.binds = True
            scope.uses.append(("except", node))
        self.children(node, scope)

    def visit_MatchAs(self, node: ast.MatchAs, scope: _Scope) -> None:
        if node.name == NAME:
            scope.binds = True
            scope.uses.append(("last", node))
        self.children(node, scope)

    def visit_MatchStar(self, node: ast.MatchStar, scope: _Scope) -> None:
        self.visit_MatchAs(node, scope)  # same shape: the name is the node's last token

    def visit_MatchMapping(self, node: ast.MatchMapping, scope: _Scope) -> None:
        if node.rest == NAME:
            scope.binds = True
            scope.uses.append(("rest", node))
        self.children(node, scope)

    # scopes --------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef, scope: _Scope) -> None:
        for child in node.decorator_list:
            self.visit(child, scope)
        self.visit_arguments_outside(node.args, scope)
        if node.returns is not None:
            self.visit(node.returns, scope)
        if node.name == NAME:
            scope.binds = scope.hands_off = True
        inner = self.new_scope("function", scope)
        self.bind_parameters(node.args, inner)
        for stmt in node.body:
            self.visit(stmt, inner)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda, scope: _Scope) -> None:
        self.visit_arguments_outside(node.args, scope)
        inner = self.new_scope("function", scope)
        self.bind_parameters(node.args, inner)
        self.visit(node.body, inner)

    def visit_arguments_outside(self, args: ast.arguments, scope: _Scope) -> None:
        """Defaults and annotations are evaluated where the function is defined."""
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.visit(default, scope)
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation, scope)

    def bind_parameters(self, args: ast.arguments, scope: _Scope) -> None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.arg == NAME:
                scope.binds = scope.hands_off = True

    def visit_ClassDef(self, node: ast.ClassDef, scope: _Scope) -> None:
        for child in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(child, scope)
        if node.name == NAME:
            scope.binds = scope.hands_off = True
        inner = self.new_scope("class", scope)
        for stmt in node.body:
            self.visit(stmt, inner)

    def visit_comprehension_node(self, node, scope: _Scope, parts) -> None:
        first, *rest = node.generators
        self.visit(first.iter, scope)  # the first iterable is evaluated outside
        inner = self.new_scope("comprehension", scope)
        self.visit(first.target, inner)
        for cond in first.ifs:
            self.visit(cond, inner)
        for gen in rest:
            self.visit(gen, inner)
        for part in parts:
            self.visit(part, inner)

    def visit_ListComp(self, node, scope):
        self.visit_comprehension_node(node, scope, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node, scope):
        self.visit_comprehension_node(node, scope, [node.key, node.value])


def _owner(scope: _Scope, module_binds: bool) -> _Scope | None:
    """The scope whose variable the name means inside `scope` (None: the real final_answer)."""
    module = scope
    while module.parent is not None:
        module = module.parent
    s: _Scope | None = scope
    first = True
    while s is not None:
        if s.is_global or s is module:
            return module if module_binds else None
        if s.is_nonlocal:
            first = False
            s = s.parent
            continue
        if s.binds and (first or s.kind != "class"):
            return s
        first = False
        s = s.parent
    return None


def _edits(code: str, scopes: list[_Scope]) -> list[tuple[int, int, str]]:
    module = scopes[0]
    module_binds = module.binds or any(s.is_global and s.binds for s in scopes)
    module_hands_off = module.hands_off or any(s.is_global and s.hands_off for s in scopes)
    wanted: list[tuple[str, ast.AST]] = []
    for scope in scopes:
        for how, node in scope.uses:
            if how == "callee":
                continue
            owner = _owner(scope, module_binds)
            if owner is None or owner.kind == "class":
                continue
            if owner.hands_off or (owner is module and module_hands_off):
                continue
            wanted.append((how, node))
    if not wanted:
        return []
    import asttokens  # on first use: it costs ~60 ms to import and most actions never need it

    lines = asttokens.LineNumbers(code)
    atok: asttokens.ASTTokens | None = None
    edits = []
    for how, node in wanted:
        if how == "name":
            start = lines.line_to_offset(node.lineno, lines.from_utf8_col(node.lineno, node.col_offset))
            end = lines.line_to_offset(
                node.end_lineno, lines.from_utf8_col(node.end_lineno, node.end_col_offset)
            )
            spans = [(start, end)]
        else:
            atok = atok or asttokens.ASTTokens(code)
            spans = _token_spans(atok, how, node)
        for start, end in spans:
            if unicodedata.normalize("NFKC", code[start:end]) == NAME:
                edits.append((start, end, "{new}"))
    return edits


def _token_spans(atok: asttokens.ASTTokens, how: str, node: ast.AST) -> list[tuple[int, int]]:
    """Where the name sits in nodes that hold it as a plain string (as-names, global, …)."""
    if how == "last":
        tok = atok.get_token_from_utf8(node.end_lineno, node.end_col_offset - 1)
        return [(tok.startpos, tok.endpos)]
    first = atok.get_token_from_utf8(node.lineno, node.col_offset)
    last = atok.get_token_from_utf8(node.end_lineno, max(0, node.end_col_offset - 1))
    spans, prev, tok = [], None, first
    while True:
        if tok.type == 1 and unicodedata.normalize("NFKC", tok.string) == NAME:  # NAME token
            if (
                how == "decl"
                or (how == "except" and prev is not None and prev.string == "as")
                or (how == "rest" and prev is not None and prev.string == "**")
            ):
                spans.append((tok.startpos, tok.endpos))
                if how != "decl":
                    break
        if tok.index >= last.index or tok.type == 0:  # ENDMARKER
            break
        prev, tok = tok, atok.next_token(tok)
    return spans
