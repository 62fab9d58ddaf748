"""AST instrumentation for the restricted runtime: the checks the sandbox relies on at run time.

One pass over the tree does both jobs: each node is shown to the policy checker (checker.py) on
the way down, before its children, and rewritten on the way up, after them. So the checker only
ever sees the model's own nodes, and nothing inserted here is walked again (every name inserted
starts with `_`, which the checker would refuse).

What is inserted, and why it is cheap:
- `_live or _dead()` at every function entry, loop body (inside functions), except handler and
  finally block: two bytecodes while the run is live. The watchdog flips `_live` at the deadline
  (and it is False between steps), so code that swallows the interrupt, or model code called by
  the host later, stops at once.
- Only with an operation budget (`metered`): `for x in _for(it)` and `[... for x in _for(it)]`:
  one call per loop, not per iteration (budget.py says how each kind of iterable is charged);
  `while` loops become `for _loop in _for(_forever): if not test: break`, metered the same way;
  `yield from _for(it)`. Without a budget the time limit bounds the work (the watchdog's
  interrupt lands on any loop's back edge), so loops stay as CPython compiles them.
- `**` / `<<` (and `**=` / `<<=`) go through size checks; `.format` / `.format_map` through a
  field check; attribute writes and `_x` attributes through the host guard.
- Without a budget, `sum`/`any`/`all` of one generator expression call CPython's reducer while
  the name still holds the sandbox's: `(_c_sum if sum is _g_sum else sum)(x for x in xs)`, three
  loads instead of a Python frame (the sandbox's reducer hands a generator over as it is: its
  frames meet the deadline's interrupt). A name the code rebound is called as it is.
- Generator functions get `@_gen` as their innermost decorator: their generators are closed when
  the step ends (guards/generators.py).
- The last expression statement's value is stored for `ExecutionResult.output`.
- What CPython evaluates lazily, when something asks for it (a `type X = ...` alias's value, a
  type parameter's bound, constraints and default, and from 3.14 every annotation, PEP 649), gets
  a lambda body's liveness check unless it only names types (policy.NEWER_SYNTAX says why).

Every name inserted here comes from names.py, where the runtime takes the names it binds.
"""

from __future__ import annotations

import ast
import copy
import sys
from typing import Any

from . import names as n
from .policy import FORMAT_ATTRIBUTES, GUARDED_LOADS, PUBLIC_UNDERSCORE_NAMES, is_private_name

__all__ = ["Instrumenter", "instrument"]

_AST = ast.AST
_LOAD = ast.Load()
_STORE = ast.Store()
_Name = ast.Name
_Call = ast.Call
_Constant = ast.Constant
_Attribute = ast.Attribute

# `a ** b` / `a << b` and their in-place forms: the guard that checks the result's size first.
_SIZE_GUARDS = {ast.Pow: n.POW, ast.LShift: n.LSHIFT}
_INPLACE_SIZE_GUARDS = {ast.Pow: n.IPOW, ast.LShift: n.ILSHIFT}

# Fields that never hold a node the walk must see: names, numbers, Python constants, and the
# context and operator singletons (every one of those kinds is allowed by the policy and has no
# children).
_SCALAR_FIELDS = frozenset({
    "ctx", "op", "ops", "id", "attr", "name", "arg", "module", "asname", "level", "kind",
    "type_comment", "conversion", "simple", "is_async", "kwd_attrs", "rest", "type_ignores",
})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    kind: () if kind in (ast.Constant, getattr(ast, "MatchSingleton", None)) else
    tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)
    for kind in (getattr(ast, name) for name in dir(ast))
    if isinstance(kind, type) and issubclass(kind, ast.AST)
}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:  # (not an ast class: a subclass someone made)
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)
    return fields


def _at(node: Any, src: Any) -> Any:
    """Give one new node the position of `src`."""
    node.lineno = src.lineno
    node.col_offset = src.col_offset
    node.end_lineno = src.end_lineno
    node.end_col_offset = src.end_col_offset
    return node


def _name(id_: str, src: Any) -> ast.Name:
    return _at(_Name(id_, _LOAD), src)


def _call(fn: str, src: Any, *args: ast.expr) -> ast.Call:
    return _at(_Call(_name(fn, src), list(args), []), src)


def _alive(src: Any) -> ast.BoolOp:
    """`_live or _dead()`: two bytecodes while the step runs."""
    return _at(ast.BoolOp(ast.Or(), [_name(n.LIVE, src), _call(n.DEAD, src)]), src)


# From CPython 3.14 annotations are evaluated when asked for, not when the def runs (PEP 649).
DEFERRED_ANNOTATIONS = sys.version_info >= (3, 14)
# The parts of an expression that only names types (`int`, `np.ndarray`, `dict[str, Node]`,
# `int | None`, `*Ts`): evaluating it runs no code of the model's that is not a function (which
# checks at its entry) and no long loop.
_NAMING_TYPES = frozenset({ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Tuple,
                           ast.List, ast.Starred, ast.Load, ast.BinOp, ast.BitOr})


def _lazy(node: Any) -> Any:
    """An expression CPython evaluates when asked for, possibly after the step: with a lambda
    body's check (`_live or _dead()) and expr`), unless it only names types."""
    if node is None or all(type(sub) in _NAMING_TYPES and
                           (type(sub) is not ast.BinOp or type(sub.op) is ast.BitOr)
                           for sub in ast.walk(node)):
        return node
    return _at(ast.BoolOp(ast.And(), [_alive(node), node]), node)


def _with_check(body: list[ast.stmt], node: Any) -> list[ast.stmt]:
    src = body[0] if body else node
    return [_at(ast.Expr(_alive(src)), src), *body]


class Instrumenter:
    """The one pass. `checker`: the PolicyChecker shown every node of the model's (None: a
    trusted tree, only rewritten). `rewrite=False`: only check. `metered`: an operation budget
    holds (see the module docstring).

    Loop bodies get a liveness check only inside functions: module-level and class-level code
    runs only within its step (the watchdog's interrupt and the except-handler checks stop it),
    and there a check would be a LOAD_NAME per iteration, the costliest kind."""

    def __init__(self, checker: Any = None, *, metered: bool = True, rewrite: bool = True) -> None:
        self.checker = checker
        self.metered = metered
        self.rewrite = rewrite
        self.function_depth = 0
        self.in_class_body = False
        self.yields: list[bool] | None = None  # set when the current function's scope yields
        look = checker.look if checker is not None else None
        self._look = look
        self._on_name = checker.on_Name if checker is not None else None
        self._rewrites = _REWRITES if rewrite else {}

    # -- the walk ---------------------------------------------------------------------------------
    def visit(self, node: Any) -> Any:
        """The node, rewritten (a statement may become a list of statements)."""
        kind = type(node)
        if self._look is not None:
            self._look(node, kind)
        rewrite = self._rewrites.get(kind)
        if rewrite is not None:
            return rewrite(self, node)
        self.children(node, kind)
        return node

    # Names and constants are half of a tree: the two loops below handle them without a call.
    def children(self, node: Any, kind: type | None = None) -> None:
        fields = _CHILD_FIELDS.get(kind or type(node)) or _child_fields(type(node))
        on_name = self._on_name
        for field in fields:
            value = getattr(node, field, None)
            kind = type(value)
            if kind is list:
                if value:
                    self.visit_list(value)
            elif kind is _Name:
                if on_name is not None:
                    on_name(value)
            elif kind is not _Constant and isinstance(value, _AST):
                new = self.visit(value)
                if new is not value:
                    setattr(node, field, new)

    def visit_list(self, items: list) -> None:
        out = None
        visit = self.visit
        on_name = self._on_name
        for i, item in enumerate(items):
            kind = type(item)
            if kind is _Name:
                if on_name is not None:
                    on_name(item)
                new = item
            elif kind is _Constant or not isinstance(item, _AST):  # (None, global names)
                new = item
            else:
                new = visit(item)
            if out is not None:
                if type(new) is list:
                    out.extend(new)
                else:
                    out.append(new)
            elif new is not item:
                if type(new) is list:
                    out = items[:i]
                    out.extend(new)
                else:
                    items[i] = new
        if out is not None:
            items[:] = out

    def _loop_body(self, body: list[ast.stmt], node: Any) -> list[ast.stmt]:
        return _with_check(body, node) if self.function_depth else body

    def _visit_field(self, node: Any, field: str) -> None:
        value = getattr(node, field, None)
        if type(value) is list:
            self.visit_list(value)
        elif isinstance(value, _AST):
            new = self.visit(value)
            if new is not value:
                setattr(node, field, new)

    def _visit_scope(self, node: Any, yields: list[bool]) -> None:
        """A function's or lambda's fields; its body as its own scope (loops in it are in a
        function). Decorators, defaults and annotations run in the enclosing scope (a `yield`
        there is the enclosing function's)."""
        for field in _child_fields(type(node)):
            if field != "body":
                self._visit_field(node, field)
                continue
            outer = self.yields, self.in_class_body
            self.yields, self.in_class_body = yields, False
            self.function_depth += 1
            try:
                self._visit_field(node, field)
            finally:
                self.function_depth -= 1
                self.yields, self.in_class_body = outer

    # -- rewrites (each visits the node's children itself) -----------------------------------------
    def visit_Module(self, node: ast.Module) -> ast.AST:
        self.visit_list(node.body)
        body = node.body
        if body and type(body[-1]) is ast.Expr:
            last = body[-1]
            body[-1] = _at(ast.Assign([_at(_Name(n.RESULT, _STORE), last)], last.value), last)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        for field in _child_fields(ast.ClassDef):
            if field == "body":
                outer, self.in_class_body = self.in_class_body, True
                self._visit_field(node, field)
                self.in_class_body = outer
            else:
                self._visit_field(node, field)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        yields = [False]
        self._visit_scope(node, yields)
        body = node.body
        first = body[0] if body else None
        doc = 1 if type(first) is ast.Expr and type(first.value) is _Constant and \
            type(first.value.value) is str else 0
        node.body = body[:doc] + _with_check(body[doc:], node)
        if yields[0]:  # innermost decorator: every generator it makes is tracked
            node.decorator_list.append(_name(n.GEN, node))
        if DEFERRED_ANNOTATIONS:
            a = node.args
            for arg in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg):
                if arg is not None:
                    arg.annotation = _lazy(arg.annotation)
            node.returns = _lazy(node.returns)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.children(node, ast.AnnAssign)
        if DEFERRED_ANNOTATIONS:
            node.annotation = _lazy(node.annotation)
        return node

    def visit_TypeAlias(self, node: Any) -> ast.AST:  # `type X = ...` (3.12+)
        self.children(node, type(node))
        node.value = _lazy(node.value)
        return node

    def visit_TypeVar(self, node: Any) -> ast.AST:  # (and ParamSpec, TypeVarTuple: 3.12+)
        self.children(node, type(node))
        bound = getattr(node, "bound", None)
        if type(bound) is ast.Tuple:  # constraints: each one, the tuple stays a tuple
            bound.elts = [_lazy(e) for e in bound.elts]
        elif bound is not None:
            node.bound = _lazy(bound)
        if getattr(node, "default_value", None) is not None:  # (PEP 696, 3.13+)
            node.default_value = _lazy(node.default_value)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        yields = [False]
        self._visit_scope(node, yields)
        node.body = _at(ast.BoolOp(ast.And(), [_alive(node.body), node.body]), node.body)
        if yields[0]:  # `lambda: (yield)`
            return _call(n.GEN, node, node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.children(node, ast.For)
        if self.metered:
            node.iter = _call(n.FOR, node.iter, node.iter)
        node.body = self._loop_body(node.body, node)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.children(node, ast.While)
        if not self.metered:
            node.body = self._loop_body(node.body, node)
            return node
        if node.orelse:
            # while/else: keep the loop, meter each iteration with a call (rare construct).
            node.body = [_at(ast.Expr(_call(n.TICK, node)), node), *node.body]
            return node
        test = node.test
        stop = _at(ast.If(_at(ast.UnaryOp(ast.Not(), test), test), [_at(ast.Break(), test)], []),
                   test)
        return _at(ast.For(_at(_Name(n.LOOP_TARGET, _STORE), node),
                           _call(n.FOR, node, _name(n.FOREVER, node)),
                           self._loop_body([stop, *node.body], node), []), node)

    def visit_Match(self, node: Any) -> Any:
        # Positional class patterns read the attributes a class lists in __match_args__, which
        # a dynamically made class could fill with anything: check those names first (the
        # classes as rewritten: a guarded load stays guarded in the check).
        self.children(node, type(node))
        classes: list[ast.expr] = []
        for case in node.cases:
            for sub in ast.walk(case.pattern):
                if type(sub) is ast.MatchClass and sub.patterns:
                    classes.append(_as_load(sub.cls))
        if not classes:
            return node
        return [_at(ast.Expr(_call(n.MATCH_CHECK, node, *classes)), node), node]

    def visit_Yield(self, node: Any) -> ast.AST:
        # The host may resume a generator after the step: check again after every resume.
        if self.yields is not None:
            self.yields[0] = True
        self.children(node, type(node))
        if type(node) is ast.YieldFrom and self.metered:
            node.value = _call(n.FOR, node.value, node.value)
        pair = _at(ast.Tuple([node, _alive(node)], _LOAD), node)
        return _at(ast.Subscript(pair, _at(_Constant(0), node), _LOAD), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.children(node, ast.Call)
        func, args = node.func, node.args
        if self.metered or type(func) is not _Name or func.id not in n.SANDBOX_REDUCER or \
                node.keywords or not args or type(args[0]) is not ast.GeneratorExp or \
                len(args) > (2 if func.id == "sum" else 1) or type(args[-1]) is ast.Starred:
            return node
        is_sandbox = _at(ast.Compare(func, [ast.Is()], [_name(n.SANDBOX_REDUCER[func.id], func)]), func)
        node.func = _at(ast.IfExp(is_sandbox, _name(n.C_REDUCER[func.id], func),
                                  _at(_Name(func.id, _LOAD), func)), func)
        return node

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        # A generator expression may be consumed by the host after the step: check per item.
        self.children(node, ast.GeneratorExp)
        node.elt = _at(ast.BoolOp(ast.And(), [_alive(node.elt), node.elt]), node.elt)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.children(node, ast.comprehension)
        if self.metered:
            node.iter = _call(n.FOR, node.iter, node.iter)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.children(node, ast.ExceptHandler)
        node.body = _with_check(node.body, node)
        return node

    def visit_Try(self, node: Any) -> ast.AST:
        # A finally block runs when a generator is closed or collected, at any time: it checks
        # first, as handlers do.
        self.children(node, type(node))
        if node.finalbody:
            node.finalbody = _with_check(node.finalbody, node)
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.children(node, ast.BinOp)
        fn = _SIZE_GUARDS.get(type(node.op))
        if fn is None:
            return node
        return _call(fn, node, node.left, node.right)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        fn = _INPLACE_SIZE_GUARDS.get(type(node.op))
        if fn is None:
            self.children(node, ast.AugAssign)
            return node
        target = node.target
        # the target's own node is checked here, its parts below (it is rebuilt, not visited)
        if type(target) is _Name:
            if self._on_name is not None:
                self._on_name(target)
        elif self._look is not None:
            self._look(target, type(target))
        for field in _child_fields(type(target)):
            setattr(target, field, self.visit(getattr(target, field)))
        node.value = self.visit(node.value)
        statements, held = _inplace_statements(node, fn)
        if held and self.in_class_body:
            # the held object would otherwise stay behind as a class attribute
            statements.append(_at(ast.Delete([_at(_Name(h, ast.Del()), node) for h in held]), node))
        return statements

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node.value = self.visit(node.value)
        return _guarded_attribute(node)


_REWRITES = {
    getattr(ast, name[6:]): method for name, method in vars(Instrumenter).items()
    if name.startswith("visit_") and hasattr(ast, name[6:])
}
_REWRITES[ast.YieldFrom] = Instrumenter.visit_Yield
for _kind in ("ParamSpec", "TypeVarTuple"):
    if hasattr(ast, _kind):
        _REWRITES[getattr(ast, _kind)] = Instrumenter.visit_TypeVar
if hasattr(ast, "TryStar"):
    _REWRITES[ast.TryStar] = Instrumenter.visit_Try


def _guarded_attribute(node: ast.Attribute) -> ast.AST:
    """An attribute through the host guard where it needs one (its value already visited)."""
    attr = node.attr
    private = is_private_name(attr) and attr not in PUBLIC_UNDERSCORE_NAMES
    if type(node.ctx) is not ast.Load:
        # obj.attr = v / del obj.attr  ->  _w(obj).attr ...: no writes into host objects.
        guard = n.PRIVATE_WRITABLE if private else n.WRITABLE
        node.value = _call(guard, node.value, node.value)
        return node
    if private:
        return _call(n.PRIVATE_ATTR, node, node.value, _at(_Constant(attr), node))
    if attr in GUARDED_LOADS:
        fn = n.FMT_ATTR if attr in FORMAT_ATTRIBUTES else n.ATTR
        return _call(fn, node, node.value, _at(_Constant(attr), node))
    return node


def _inplace_statements(node: ast.AugAssign, fn: str) -> tuple[list[ast.stmt], list[str]]:
    """`target op= value` as assignments around the in-place guard `fn`, with the target's parts
    (already visited) evaluated once and in CPython's order: the object (and key), its current
    value, `value`. Returns the statements and the names that hold the object (and key)."""
    target = node.target
    if type(target) is _Attribute:
        hold = _at(ast.Assign([_at(_Name(n.AUG_TARGET, _STORE), node)], target.value), node)
        place = _at(_Attribute(_name(n.AUG_TARGET, node), target.attr, _STORE), node)
        current = _at(_Attribute(_name(n.AUG_TARGET, node), target.attr, _LOAD), node)
        held = [n.AUG_TARGET]
        place, current = _guarded_attribute(place), _guarded_attribute(current)
    elif type(target) is ast.Subscript:
        pair = _at(ast.Tuple([_at(_Name(n.AUG_TARGET, _STORE), node),
                              _at(_Name(n.AUG_KEY, _STORE), node)], _STORE), node)
        hold = _at(ast.Assign([pair], _at(ast.Tuple([target.value, target.slice], _LOAD), node)), node)
        place = _at(ast.Subscript(_name(n.AUG_TARGET, node), _name(n.AUG_KEY, node), _STORE), node)
        current = _at(ast.Subscript(_name(n.AUG_TARGET, node), _name(n.AUG_KEY, node), _LOAD), node)
        held = [n.AUG_TARGET, n.AUG_KEY]
    else:  # a name
        load = _at(_Name(target.id, _LOAD), target)
        return [_at(ast.Assign([target], _call(fn, node, load, node.value)), node)], []
    update = _at(ast.Assign([place], _call(fn, node, current, node.value)), node)
    return [hold, update], held


def _as_load(target: ast.expr) -> ast.expr:
    clone = copy.deepcopy(target)
    for sub in ast.walk(clone):
        if hasattr(sub, "ctx"):
            sub.ctx = _LOAD
    return clone


def instrument(tree: ast.Module, metered: bool = True, checker: Any = None) -> ast.Module:
    """Insert the runtime checks and capture the last expression's value (in place), showing
    every node to `checker` first when one is given."""
    return Instrumenter(checker, metered=metered).visit(tree)
