"""AST instrumentation for the restricted runtime: the checks the sandbox relies on at run time.

What is inserted, and why it is cheap:
- `_live or _dead()` at every function entry, loop body (inside functions) and except handler: two bytecodes while
  the run is live. The watchdog flips `_live` at the deadline (and it is False between steps), so
  code that swallows the interrupt, or model code called by the host later, stops at once.
- `for x in _for(it)`: one call per loop, not per iteration. Sized builtins are charged to the
  operation budget up front; anything else is consumed in C-speed chunks that are charged and
  checked between chunks.
- `while` loops become `for _loop in _for(_forever): if not test: break`, metered the same way.
- `**` / `<<` (and `**=` / `<<=`) go through size checks; `.format` / `.format_map` through a
  field check; attribute writes and `_x` attributes through the host guard.
- The last expression statement's value is stored for `ExecutionResult.output`.

Every name inserted here comes from names.py, where the runtime takes the names it binds.
"""

from __future__ import annotations

import ast
import copy

from . import names as n
from .policy import FORMAT_ATTRIBUTES, GUARDED_LOADS, PUBLIC_UNDERSCORE_NAMES, is_private_name

# `a ** b` / `a << b` and their in-place forms: the guard that checks the result's size first.
_SIZE_GUARDS = {ast.Pow: n.POW, ast.LShift: n.LSHIFT}
_INPLACE_SIZE_GUARDS = {ast.Pow: n.IPOW, ast.LShift: n.ILSHIFT}


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


def _store(id_: str) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store())


def _alive() -> ast.BoolOp:
    """`_live or _dead()`: two bytecodes while the step runs."""
    return ast.BoolOp(op=ast.Or(), values=[_name(n.LIVE), _call(n.DEAD)])


def _live_check() -> ast.Expr:
    return ast.Expr(_alive())


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
        self.in_class_body = False

    def visit_Constant(self, node: ast.Constant) -> ast.AST:  # skip NodeVisitor's legacy hooks
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return node

    def _loop_body(self, body: list[ast.stmt], node: ast.AST) -> list[ast.stmt]:
        return _with_check(body, node) if self.function_depth else body

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        outer, self.in_class_body = self.in_class_body, True
        self.generic_visit(node)
        self.in_class_body = outer
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.function_depth += 1
        outer, self.in_class_body = self.in_class_body, False
        self.generic_visit(node)
        self.in_class_body = outer
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
        if _makes_generators(node):  # innermost decorator: every generator it makes is tracked
            node.decorator_list.append(_located(_name(n.GEN), node))
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        node.body = _located(ast.BoolOp(op=ast.And(), values=[_alive(), node.body]), node.body)
        if _makes_generators(node):  # `lambda: (yield)`
            return _located(_call(n.GEN, node), node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.iter = _located(_call(n.FOR, node.iter), node.iter)
        node.body = self._loop_body(node.body, node)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        if node.orelse:
            # while/else: keep the loop, meter each iteration with a call (rare construct).
            tick = _located(ast.Expr(_call(n.TICK)), node)
            node.body = [tick, *node.body]
            return node
        stop = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=[ast.Break()], orelse=[])
        _located(stop, node.test)
        loop = ast.For(
            target=_store(n.LOOP_TARGET),
            iter=_call(n.FOR, _name(n.FOREVER)),
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
        check = _located(ast.Expr(_call(n.MATCH_CHECK, *classes)), node)
        return [check, node]

    def visit_Yield(self, node: ast.AST) -> ast.AST:
        # The host may resume a generator after the step: check again after every resume.
        self.generic_visit(node)
        pair = ast.Tuple(elts=[node, _alive()], ctx=ast.Load())
        return _located(ast.Subscript(value=pair, slice=ast.Constant(0), ctx=ast.Load()), node)

    visit_YieldFrom = visit_Yield

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        # A generator expression may be consumed by the host after the step: check per item.
        self.generic_visit(node)
        node.elt = _located(ast.BoolOp(op=ast.And(), values=[_alive(), node.elt]), node.elt)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = _located(_call(n.FOR, node.iter), node.iter)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        node.body = _with_check(node.body, node)
        return node

    def visit_Try(self, node: ast.AST) -> ast.AST:
        # A finally block runs when a generator is closed or collected, at any time: it checks
        # first, as handlers do.
        self.generic_visit(node)
        if node.finalbody:
            node.finalbody = _with_check(node.finalbody, node)
        return node

    visit_TryStar = visit_Try

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        fn = _SIZE_GUARDS.get(type(node.op))
        if fn is None:
            return node
        return _located(_call(fn, node.left, node.right), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.AST]:
        fn = _INPLACE_SIZE_GUARDS.get(type(node.op))
        if fn is None:
            self.generic_visit(node)
            return node
        statements, held = _inplace_statements(node, fn)
        if held and self.in_class_body:
            # the held object would otherwise stay behind as a class attribute
            statements.append(ast.Delete(targets=[ast.Name(id=name, ctx=ast.Del()) for name in held]))
        return [self.visit(_located(stmt, node)) for stmt in statements]

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        attr = node.attr
        private = is_private_name(attr) and attr not in PUBLIC_UNDERSCORE_NAMES
        if type(node.ctx) is not ast.Load:
            # obj.attr = v / del obj.attr  ->  _w(obj).attr ...: no writes into host objects.
            guard = n.PRIVATE_WRITABLE if private else n.WRITABLE
            node.value = _located(_call(guard, node.value), node.value)
            return node
        if private:
            return _located(_call(n.PRIVATE_ATTR, node.value, ast.Constant(attr)), node)
        if attr in GUARDED_LOADS:
            fn = n.FMT_ATTR if attr in FORMAT_ATTRIBUTES else n.ATTR
            return _located(_call(fn, node.value, ast.Constant(attr)), node)
        return node


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp,
           ast.ListComp, ast.SetComp, ast.DictComp)


def _makes_generators(fn: ast.FunctionDef | ast.Lambda) -> bool:
    """A `yield` in the function's own scope (not in a nested function, class or comprehension)."""
    stack = list(ast.iter_child_nodes(fn)) if isinstance(fn, ast.Lambda) else list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _inplace_statements(node: ast.AugAssign, fn: str) -> tuple[list[ast.stmt], list[str]]:
    """`target op= value` as assignments around the in-place guard `fn`, with the target's parts
    evaluated once and in CPython's order: the object (and key), its current value, `value`.
    Returns the statements and the names that hold the object (and key)."""
    target = node.target
    if type(target) is ast.Attribute:
        hold = ast.Assign(targets=[_store(n.AUG_TARGET)], value=target.value)
        place: ast.expr = ast.Attribute(value=_name(n.AUG_TARGET), attr=target.attr, ctx=ast.Store())
        held = [n.AUG_TARGET]
    elif type(target) is ast.Subscript:
        pair = ast.Tuple(elts=[_store(n.AUG_TARGET), _store(n.AUG_KEY)], ctx=ast.Store())
        hold = ast.Assign(targets=[pair], value=ast.Tuple(elts=[target.value, target.slice], ctx=ast.Load()))
        place = ast.Subscript(value=_name(n.AUG_TARGET), slice=_name(n.AUG_KEY), ctx=ast.Store())
        held = [n.AUG_TARGET, n.AUG_KEY]
    else:  # a name
        return [ast.Assign(targets=[target], value=_call(fn, _as_load(target), node.value))], []
    update = ast.Assign(targets=[place], value=_call(fn, _as_load(place), node.value))
    return [hold, update], held


def _as_load(target: ast.expr) -> ast.expr:
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
            ast.Assign(targets=[_store(n.RESULT)], value=last.value), last
        )

    return tree
