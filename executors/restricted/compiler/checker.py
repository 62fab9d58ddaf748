"""The policy check: every node of the model's AST against the tables in policy.py.

Collects every place where the code leaves the whitelist (all of them, so the model can fix its
code in one go). The walk is the instrumenter's (instrument.py): a step's tree is checked and
instrumented in one pass, each node shown to `PolicyChecker.look` before its children.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .policy import (
    ALLOWED_NODES,
    DEFINABLE_DUNDERS,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    GUARDED_LOADS,
    INTERCHANGE_DUNDERS,
    READABLE_DUNDERS,
    REFUSED_DUNDERS,
    REFUSED_NODE_ADVICE,
    SHADOWABLE_BUILTINS,
    is_private_name,
)


@dataclass(frozen=True)
class Violation:
    message: str
    lineno: int | None
    col: int | None = None


class PolicyChecker:
    """Collects every place where the code leaves the whitelist (a dispatch only for the node
    kinds that need a look: this runs on every new source)."""

    def __init__(self, reserved_names: frozenset[str] = frozenset()) -> None:
        self.violations: list[Violation] = []
        self.reserved = reserved_names
        self.methods: set[int] = set()  # ids of FunctionDefs directly in a class body
        self.class_stmts: set[int] = set()  # ids of statements directly in a class body
        self.slots_ok: set[int] = set()  # ids of checked `__slots__` Name targets
        self.bound: set[str] = set()  # names the code binds (assigns, defines, imports, ...)
        # loads of SHADOWABLE_BUILTINS: refused unless the code binds that name itself
        self.shadow_loads: list[tuple[str, Violation]] = []

    def refuse(self, node: ast.AST, message: str) -> None:
        self.violations.append(
            Violation(message, getattr(node, "lineno", None), getattr(node, "col_offset", None))
        )

    def look(self, node: ast.AST, kind: type) -> None:
        """One node, before its children (the walk is instrument.Instrumenter's)."""
        if kind not in ALLOWED_NODES:
            advice = REFUSED_NODE_ADVICE.get(kind.__name__, "rewrite it with plain statements")
            self.refuse(node, f"'{kind.__name__}' syntax is not allowed: {advice}")
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node)

    def sorted_violations(self) -> list[Violation]:
        """Every violation, by position (call once the walk is done)."""
        found = self.violations + [v for name, v in self.shadow_loads if name not in self.bound]
        return sorted(found, key=lambda v: (v.lineno or 0, v.col or 0))

    def check_name(self, node: ast.AST, name: str | None, *, store: bool = False,
                   variable: bool = False) -> None:
        if name is None:
            return
        if store:
            self.bound.add(name)
        elif variable and name in SHADOWABLE_BUILTINS:
            # the model's own variable named `input` (scipy's docs: `input = np.zeros(...)`):
            # allowed when the code binds the name; the sandbox's builtins have none of these
            # names, so a load before the assignment is a NameError, never the builtin
            self.shadow_loads.append((name, Violation(
                f"'{name}' is not available: {FORBIDDEN_BUILTINS[name]}",
                getattr(node, "lineno", None), getattr(node, "col_offset", None))))
            return
        if name.startswith("_") and name != "_":
            if name == "__name__" and not store:
                return
            self.refuse(
                node,
                f"the name '{name}' is not allowed: names starting with '_' are reserved; "
                f"use a name without the leading underscore",
            )
            return
        if store and name in self.reserved:
            self.refuse(
                node,
                f"'{name}' is a built-in tool and cannot be reassigned or deleted; "
                f"use another variable name (e.g. '{name}_result')",
            )
        if not store and name in FORBIDDEN_BUILTINS:
            self.refuse(node, f"'{name}' is not available: {FORBIDDEN_BUILTINS[name]}")
        if store and name in FORBIDDEN_ATTRIBUTES:
            # A class attribute or dataclass field by that name would make match patterns read
            # the interpreter attribute of the same name.
            self.refuse(node, f"the name '{name}' is reserved by the interpreter; use another name")

    # -- handlers (no recursion: the walk visits children) ----------------------------------------
    def on_Name(self, node: ast.Name) -> None:
        name = node.id
        load = type(node.ctx) is ast.Load
        if load and name[0] != "_" and name not in FORBIDDEN_BUILTINS:
            return  # (most names: nothing to check)
        if id(node) in self.slots_ok:
            return
        self.check_name(node, name, store=not load, variable=True)

    def on_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr.startswith("_"):
            if is_private_name(attr):
                return  # checked at run time: only on the model's own objects
            if not (type(node.ctx) is ast.Load and attr in READABLE_DUNDERS):
                why = INTERCHANGE_DUNDERS.get(attr) or "attributes starting with '_' are private"
                self.refuse(node, f"the attribute '{attr}' is not allowed: {why}")
        elif attr in FORBIDDEN_ATTRIBUTES:
            self.refuse(node, f"the attribute '{attr}' is not allowed: it exposes interpreter internals")

    def on_FunctionDef(self, node: ast.FunctionDef) -> None:
        name = node.name
        if id(node) in self.methods and name.startswith("__") and name.endswith("__"):
            if name not in DEFINABLE_DUNDERS:
                why = REFUSED_DUNDERS.get(name)
                self.refuse(node, f"defining the method '{name}' is not allowed in this sandbox"
                            + (f": {why}" if why else ""))
        elif id(node) in self.methods and is_private_name(name):
            pass  # a private helper method of the model's own class
        else:
            self.check_name(node, name, store=True)

    def on_Assign(self, node: ast.Assign) -> None:
        # `__slots__ = ("x", "y")` directly in a class body: literal public names only.
        if (len(node.targets) == 1 and type(node.targets[0]) is ast.Name
                and node.targets[0].id == "__slots__" and id(node) in self.class_stmts):
            value = node.value
            names = value.elts if type(value) in (ast.Tuple, ast.List) else [value]
            if all(type(n) is ast.Constant and isinstance(n.value, str) and n.value.isidentifier()
                   and not n.value.startswith("_") and n.value not in FORBIDDEN_ATTRIBUTES
                   for n in names):
                self.slots_ok.add(id(node.targets[0]))
            else:
                self.refuse(node, "__slots__ must be a literal tuple of public attribute names")

    def on_ClassDef(self, node: ast.ClassDef) -> None:
        self.check_name(node, node.name, store=True)
        for kw in node.keywords:
            self.refuse(
                kw,
                f"class keyword '{kw.arg}' is not allowed (no metaclasses or class hooks); "
                "use a plain class",
            )
        for stmt in node.body:
            if type(stmt) is ast.FunctionDef:
                self.methods.add(id(stmt))
            self.class_stmts.add(id(stmt))

    def on_arg(self, node: ast.arg) -> None:
        if node.arg.startswith("_") and node.arg != "_":
            self.check_name(node, node.arg, store=True)
        elif node.arg in SHADOWABLE_BUILTINS:
            self.bound.add(node.arg)
    # String annotations (forward references) are allowed: what would eval() them
    # (typing.get_type_hints, ForwardRef) is hidden, and singledispatch.register checks them.

    def on_TypeAlias(self, node: ast.AST) -> None:  # `type X = ...` (3.12+)
        self.check_name(node, node.name.id, store=True)  # (the walk skips `name` fields)

    def on_TypeVar(self, node: ast.AST) -> None:  # (and ParamSpec, TypeVarTuple: 3.12+)
        self.check_name(node, node.name, store=True)

    def on_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and node.arg.startswith("_"):
            self.refuse(node, f"the keyword argument '{node.arg}' is not allowed (leading '_')")

    def on_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.check_name(node, name, store=True)

    def on_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.check_name(node, node.name, store=True)

    def on_MatchAs(self, node: ast.AST) -> None:
        self.check_name(node, node.name, store=True)

    def on_MatchMapping(self, node: ast.AST) -> None:
        self.check_name(node, node.rest, store=True)

    def on_MatchClass(self, node: ast.AST) -> None:
        # Keyword sub-patterns read attributes natively: no runtime guard sees them.
        for attr in node.kwd_attrs:
            if attr.startswith("_") or attr in FORBIDDEN_ATTRIBUTES or attr in GUARDED_LOADS:
                self.refuse(node, f"matching on the attribute '{attr}' is not allowed")

    def on_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if any(part.startswith("_") for part in alias.name.split(".")):
                self.refuse(node, f"importing '{alias.name}' is not allowed (private module)")
            bound = alias.asname or alias.name.split(".")[0]
            self.check_name(node, bound, store=True)

    def on_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.refuse(node, "relative imports are not allowed; import modules by their full name")
        module = node.module or ""
        if module.startswith("_"):
            self.refuse(node, f"importing from '{module}' is not allowed (private module)")
        # (from a private module below a public package: the importer hands out only the names
        # the public package exports as the same objects, sandbox_modules.py)
        for alias in node.names:
            if alias.name == "*":
                self.refuse(node, f"'from {module} import *' is not allowed; import the names you need")
                continue
            self.check_name(node, alias.name)
            self.check_name(node, alias.asname or alias.name, store=True)


_HANDLERS = {
    getattr(ast, name[3:]): getattr(PolicyChecker, name)
    for name in dir(PolicyChecker)
    if name.startswith("on_") and hasattr(ast, name[3:])
}
_HANDLERS[ast.Nonlocal] = PolicyChecker.on_Global
if hasattr(ast, "MatchStar"):
    _HANDLERS[ast.MatchStar] = PolicyChecker.on_MatchAs
for _kind in ("ParamSpec", "TypeVarTuple"):
    if hasattr(ast, _kind):
        _HANDLERS[getattr(ast, _kind)] = PolicyChecker.on_TypeVar


def inspect_tree(tree: ast.AST, reserved_names: frozenset[str] = frozenset()) -> list[Violation]:
    """Every violation in the tree, sorted by position (the tree is not changed)."""
    from .instrument import Instrumenter

    checker = PolicyChecker(reserved_names)
    Instrumenter(checker, rewrite=False).visit(tree)
    return checker.sorted_violations()
