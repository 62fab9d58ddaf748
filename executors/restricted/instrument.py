"""AST instrumentation for the restricted runtime: the checks the sandbox relies on at run time.

What is inserted, and why it is cheap:
- `_live or _dead()` at every function entry, loop body (inside functions) and except handler: two bytecodes while
  the run is live. The watchdog flips `_live` at the deadline (and it is False between steps), so
  code that swallows the interrupt, or model code called by the host later, stops at once.
- `for x in _for(it)`: one call per loop, not per iteration. Sized builtins are charged to the
  operation budget up front; anything else is consumed in C-speed chunks that are charged and
  checked between chunks.
- `while` loops become `for _loop in _for(_forever): if not test: break`, metered the same way.
- `**` / `<<` go through size checks; `.format` / `.format_map` through a field check.
- The last expression statement's value is stored for `ExecutionResult.output`.
"""

from __future__ import annotations

import ast

from .policy import FORMAT_ATTRIBUTES, GUARDED_LOADS, PUBLIC_UNDERSCORE_NAMES, is_private_name

RESULT_NAME = "_result_"
LIVE = "_live"


def _located(node: ast.AST, src: ast.AST) -> ast.AST:
    """Give a new node (and its new children) the position of `src` (cheaper than
    ast.fix_missing_locations over the whole tree)."""
    lineno = getattr(src, "lineno", 1)
    col = getattr(src, "col_offset", 0)
    end_lineno = getattr(src, "end_lineno", lineno)
    end_col = getattr(src, "end_col_offset", col)
    stack = [node]
    while stack:
        n = stack.pop()
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = lineno, col, end_lineno, end_col
            stack.extend(ast.iter_child_nodes(n))
        elif not n._attributes:
            stack.extend(ast.iter_child_nodes(n))
    return node


def _name(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Load())


def _call(fn: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_name(fn), args=list(args), keywords=[])


def _live_check() -> ast.Expr:
    return ast.Expr(ast.BoolOp(op=ast.Or(), values=[_name(LIVE), _call("_dead")]))


def _with_check(body: list[ast.stmt], node: ast.AST) -> list[ast.stmt]:
    check = _live_check()
    _located(check, body[0] if body else node)
    return [check, *body]


class Instrumenter(ast.NodeTransformer):
    """Loop bodies get a liveness check only inside functions: module-level and class-level
    code runs only within its step (the watchdog's interrupt and the except-handler checks
    stop it), and there a check would be a LOAD_NAME per iteration, the costliest kind."""

    def __init__(self) -> None:
        self.function_depth = 0

    def visit_Constant(self, node: ast.Constant) -> ast.AST:  # skip NodeVisitor's legacy hooks
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return node

    def _loop_body(self, body: list[ast.stmt], node: ast.AST) -> list[ast.stmt]:
        return _with_check(body, node) if self.function_depth else body

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1
        body = node.body
        doc = (
            body[:1]
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
            else []
        )
        rest = body[len(doc):]
        node.body = doc + _with_check(rest, node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        guard = ast.BoolOp(op=ast.Or(), values=[_name(LIVE), _call("_dead")])
        node.body = _located(ast.BoolOp(op=ast.And(), values=[guard, node.body]), node.body)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.iter = _located(_call("_for", node.iter), node.iter)
        node.body = self._loop_body(node.body, node)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        if node.orelse:
            # while/else: keep the loop, meter each iteration with a call (rare construct).
            tick = _located(ast.Expr(_call("_tick")), node)
            node.body = [tick, *node.body]
            return node
        stop = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=[ast.Break()], orelse=[])
        _located(stop, node.test)
        loop = ast.For(
            target=ast.Name(id="_loop", ctx=ast.Store()),
            iter=_call("_for", _name("_forever")),
            body=self._loop_body([stop, *node.body], node),
            orelse=[],
            type_comment=None,
        )
        return _located(loop, node)

    def visit_Match(self, node: ast.AST) -> ast.AST:
        # Positional class patterns read the attributes a class lists in __match_args__, which
        # a dynamically made class could fill with anything: check those names first.
        self.generic_visit(node)
        classes: list[ast.expr] = []
        for case in node.cases:
            for sub in ast.walk(case.pattern):
                if type(sub) is ast.MatchClass and sub.patterns:
                    classes.append(_as_load(sub.cls))
        if not classes:
            return node
        check = _located(ast.Expr(_call("_match_check", *classes)), node)
        return [check, node]

    def visit_Yield(self, node: ast.AST) -> ast.AST:
        # The host may resume a generator after the step: check again after every resume.
        self.generic_visit(node)
        check = ast.BoolOp(op=ast.Or(), values=[_name(LIVE), _call("_dead")])
        pair = ast.Tuple(elts=[node, check], ctx=ast.Load())
        return _located(ast.Subscript(value=pair, slice=ast.Constant(0), ctx=ast.Load()), node)

    visit_YieldFrom = visit_Yield

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        # A generator expression may be consumed by the host after the step: check per item.
        self.generic_visit(node)
        guard = ast.BoolOp(op=ast.Or(), values=[_name(LIVE), _call("_dead")])
        node.elt = _located(ast.BoolOp(op=ast.And(), values=[guard, node.elt]), node.elt)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = _located(_call("_for", node.iter), node.iter)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        node.body = _with_check(node.body, node)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        fn = {ast.Pow: "_pow", ast.LShift: "_lshift"}.get(type(node.op))
        if fn is None:
            return node
        return _located(_call(fn, node.left, node.right), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        fn = {ast.Pow: "_pow", ast.LShift: "_lshift"}.get(type(node.op))
        if fn is None:
            return node
        # x **= y  ->  x = _pow(x, y). For attribute/subscript targets the target expression is
        # evaluated twice; acceptable for these rare operators.
        load = _as_load(node.target)
        assign = ast.Assign(targets=[node.target], value=_call(fn, load, node.value))
        return _located(assign, node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        attr = node.attr
        private = is_private_name(attr) and attr not in PUBLIC_UNDERSCORE_NAMES
        if type(node.ctx) is not ast.Load:
            # obj.attr = v / del obj.attr  ->  _w(obj).attr ...: no writes into host objects.
            guard = "_wp" if private else "_w"
            node.value = _located(_call(guard, node.value), node.value)
            return node
        if private:
            return _located(_call("_pattr", node.value, ast.Constant(attr)), node)
        if attr in GUARDED_LOADS:
            fn = "_fmt_attr" if attr in FORMAT_ATTRIBUTES else "_attr"
            return _located(_call(fn, node.value, ast.Constant(attr)), node)
        return node


def _as_load(target: ast.expr) -> ast.expr:
    import copy

    clone = copy.deepcopy(target)
    for sub in ast.walk(clone):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return clone


def instrument(tree: ast.Module, needed: bool = True) -> ast.Module:
    """Insert the runtime checks and capture the last expression's value (in place).
    `needed=False` (the policy walk found nothing to instrument) only does the latter."""
    if needed:
        tree = Instrumenter().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = _located(
            ast.Assign(targets=[ast.Name(id=RESULT_NAME, ctx=ast.Store())], value=last.value), last
        )

    return tree
