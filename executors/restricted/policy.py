"""The restricted policy: a whitelist of what model code may write, checked on the AST.

Everything not listed here is refused before the code runs. Runtime guards (restricted_guards)
cover what the AST cannot show: computed attribute names, format fields, module members.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Statement and expression kinds model code may use. Async code, `global` tricks aside, is
# refused: there is no event loop in the sandbox, and coroutine frames are escape material.
ALLOWED_NODES: frozenset[type] = frozenset(
    getattr(ast, name)
    for name in (
        # module / statements
        "Module", "Expr", "FunctionDef", "ClassDef", "Return", "Delete", "Assign", "AugAssign",
        "AnnAssign", "For", "While", "If", "With", "Match", "Raise", "Try", "TryStar", "Assert",
        "Import", "ImportFrom", "Global", "Nonlocal", "Pass", "Break", "Continue",
        # expressions
        "BoolOp", "NamedExpr", "BinOp", "UnaryOp", "Lambda", "IfExp", "Dict", "Set", "ListComp",
        "SetComp", "DictComp", "GeneratorExp", "Yield", "YieldFrom", "Compare", "Call",
        "FormattedValue", "JoinedStr", "Constant", "Attribute", "Subscript", "Starred", "Name",
        "List", "Tuple", "Slice",
        # contexts, operators, helpers
        "Load", "Store", "Del", "And", "Or", "Add", "Sub", "Mult", "MatMult", "Div", "Mod", "Pow",
        "LShift", "RShift", "BitOr", "BitXor", "BitAnd", "FloorDiv", "Invert", "Not", "UAdd",
        "USub", "Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "Is", "IsNot", "In", "NotIn",
        "comprehension", "ExceptHandler", "arguments", "arg", "keyword", "alias", "withitem",
        "match_case", "MatchValue", "MatchSingleton", "MatchSequence", "MatchMapping",
        "MatchClass", "MatchStar", "MatchAs", "MatchOr",
    )
    if hasattr(ast, name)
)

REFUSED_NODE_ADVICE: dict[str, str] = {
    "AsyncFunctionDef": "async code is not supported here; write ordinary (synchronous) functions",
    "Await": "async code is not supported here; call functions directly",
    "AsyncFor": "async code is not supported here; use a normal for loop",
    "AsyncWith": "async code is not supported here; use a normal with statement",
}

# Dunder methods a user class may define. Not here on purpose: __del__ (runs at garbage
# collection, on the host, after the step), __init_subclass__/__set_name__/__class_getitem__
# (hooks run by class machinery), __getattribute__/__setattr__/__delattr__, __reduce__*.
DEFINABLE_DUNDERS: frozenset[str] = frozenset({
    "__init__", "__new__", "__post_init__", "__repr__", "__str__", "__format__", "__bytes__",
    "__hash__", "__bool__", "__len__", "__length_hint__", "__iter__", "__next__", "__reversed__",
    "__contains__", "__getitem__", "__setitem__", "__delitem__", "__missing__", "__getattr__",
    "__call__", "__enter__", "__exit__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__matmul__", "__rmatmul__", "__truediv__", "__rtruediv__", "__itruediv__",
    "__floordiv__", "__rfloordiv__", "__ifloordiv__", "__mod__", "__rmod__", "__imod__",
    "__divmod__", "__rdivmod__", "__pow__", "__rpow__", "__ipow__", "__lshift__", "__rlshift__",
    "__rshift__", "__rrshift__", "__and__", "__rand__", "__iand__", "__or__", "__ror__", "__ior__",
    "__xor__", "__rxor__", "__ixor__", "__neg__", "__pos__", "__abs__", "__invert__",
    "__round__", "__trunc__", "__floor__", "__ceil__", "__int__", "__float__", "__complex__",
    "__index__",
})

# Dunder attributes model code may read (`super().__init__(...)`, `f.__name__`). Everything else
# starting with "_" is refused: __class__/__bases__/__subclasses__/__globals__/__self__/... are
# the classic ways out. (`type(x)` gives what `x.__class__` would, minus `type`'s 3-arg form.)
READABLE_DUNDERS: frozenset[str] = (DEFINABLE_DUNDERS - {
    "__new__", "__getattr__",
    # these compute huge numbers in one C call; the operators themselves are size-checked
    "__pow__", "__rpow__", "__ipow__", "__lshift__", "__rlshift__",
}) | {
    "__class__",  # rewritten to the sandbox's type(): never hands out `type` or a metaclass
    "__dict__",  # rewritten: only of the model's own objects
    "__name__", "__qualname__", "__doc__", "__module__", "__cause__", "__context__",
    "__suppress_context__", "__notes__",
}

# Underscore names that are public API (namedtuple): readable on any object.
PUBLIC_UNDERSCORE_NAMES: frozenset[str] = frozenset({
    "_asdict", "_replace", "_fields", "_make", "_field_defaults",
})


def is_private_name(name: str) -> bool:
    """`_x`: a single-underscore attribute. Allowed only on objects the model's code created
    (checked at run time); `__x` (name-mangled) and dunders are not private names."""
    return name.startswith("_") and not name.startswith("__") and len(name) > 1


# Public (non-underscore) attributes that still reach interpreter internals.
# RestrictedPython's INSPECT_ATTRIBUTES are all in here (a test keeps it so); the constant is
# copied rather than imported so that a worker process starts without importing RestrictedPython.
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset({
    "f_generator", "co_code",
}) | {
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "f_back", "f_builtins", "f_code", "f_globals", "f_locals",
    "f_trace", "f_trace_lines", "f_trace_opcodes", "tb_frame", "tb_next", "co_code",
    "func_globals", "func_code",
}

# Attribute names whose value is wrapped at runtime (not refused): str.format / format_map can
# walk attributes through their fields ("{0.__class__}"), so they get checked templates.
FORMAT_ATTRIBUTES: frozenset[str] = frozenset({"format", "format_map"})

# Attribute loads rewritten to a runtime guard (see instrument.py / guards.py):
# `__class__` → sandbox type(); `__init__` → refuses re-initialising host objects;
# `register` → refuses ABC registration (it changes isinstance() for the whole process).
GUARDED_LOADS: frozenset[str] = FORMAT_ATTRIBUTES | {"__class__", "__init__", "register", "__dict__", "mro"}

# Builtins that do not exist in the sandbox, with what to do instead (shown to the model).
FORBIDDEN_BUILTINS: dict[str, str] = {
    "open": "files are not accessible from this sandbox; work with the data the tools return",
    "eval": "dynamic evaluation is not allowed; write the code directly",
    "exec": "dynamic execution is not allowed; write the code directly",
    "compile": "compiling code is not allowed; write the code directly",
    "globals": "namespace introspection is not allowed; use your variables directly",
    "locals": "namespace introspection is not allowed; use your variables directly",

    "input": "there is no user to read input from; use the data you have",
    "breakpoint": "debuggers are not available",
    "help": "interactive help is not available",
    "exit": "call final_answer(...) to finish, or just let the code end",
    "quit": "call final_answer(...) to finish, or just let the code end",
    "memoryview": "memoryview is not available",
    "__import__": "use an import statement",
    "__build_class__": "use a class statement",
}

# Members of authorized modules that are hidden from model code, with the reason. Module-valued
# attributes and underscore names are hidden generically (see restricted_modules).
HIDDEN_MODULE_MEMBERS: dict[str, dict[str, str]] = {
    "io": {"*": "only io.StringIO and io.BytesIO are available (no files)"},
    "string": {"Formatter": "it walks attributes through format fields; use f-strings"},
    "typing": {
        "get_type_hints": "it evaluates annotation strings",
        "ForwardRef": "it evaluates annotation strings",
    },
    "dataclasses": {"make_dataclass": "build classes with a class statement"},
    "time": {
        "tzset": "it changes the process time zone",
        "clock_settime": "it sets the system clock",
        "clock_settime_ns": "it sets the system clock",
    },
    "calendar": {
        "setfirstweekday": "it changes a process-wide setting; pass firstweekday to a Calendar",
        "different_locale": "it changes the process locale",
    },
    "zoneinfo": {"reset_tzpath": "it changes a process-wide setting"},
    "copy": {"dispatch_table": "not needed here"},
    "enum": {
        "global_enum": "it writes into another module's namespace",
        "global_enum_repr": "not needed here",
        "global_flag_repr": "not needed here",
        "global_str": "not needed here",
        "ReprEnum": "use Enum, IntEnum or StrEnum",
        "EnumType": "metaclasses are not available",
        "EnumMeta": "metaclasses are not available",
    },
    "uuid": {
        "getnode": "it inspects the host's network interfaces",
        "uuid1": "it inspects the host's network interfaces; use uuid.uuid4()",
    },
    "csv": {
        "field_size_limit": "it changes a process-wide setting",
        "register_dialect": "it changes a process-wide registry; pass dialect options directly",
        "unregister_dialect": "it changes a process-wide registry",
    },
    "random": {"SystemRandom": "use random.Random"},
    "functools": {"singledispatchmethod": "not needed here"},
    "pprint": {"PrettyPrinter": "use pprint.pprint or pprint.pformat"},
}

# Members that survive the generic rules but are replaced by a guarded version.
IO_ALLOWED = frozenset({"StringIO", "BytesIO"})


@dataclass(frozen=True)
class Violation:
    message: str
    lineno: int | None
    col: int | None = None


# Node kinds whose presence means the instrumenter has work to do (see instrument.py).
_INSTRUMENTED = (
    ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.comprehension, ast.ExceptHandler,
)


class PolicyChecker:
    """Collects every place where the code leaves the whitelist, in one flat walk of the tree
    (a dispatch only for the node kinds that need a look: this runs on every step)."""

    def __init__(self, reserved_names: frozenset[str] = frozenset()) -> None:
        self.violations: list[Violation] = []
        self.reserved = reserved_names
        self.methods: set[int] = set()  # ids of FunctionDefs directly in a class body
        self.class_stmts: set[int] = set()  # ids of statements directly in a class body
        self.slots_ok: set[int] = set()  # ids of checked `__slots__` Name targets
        self.needs_instrumenting = False

    def refuse(self, node: ast.AST, message: str) -> None:
        self.violations.append(
            Violation(message, getattr(node, "lineno", None), getattr(node, "col_offset", None))
        )

    def run(self, tree: ast.AST) -> None:
        allowed = ALLOWED_NODES
        handlers = _HANDLERS
        instrumented = _INSTRUMENTED
        for node in ast.walk(tree):
            kind = type(node)
            if kind not in allowed:
                advice = REFUSED_NODE_ADVICE.get(kind.__name__, "rewrite it with plain statements")
                self.refuse(node, f"'{kind.__name__}' syntax is not allowed: {advice}")
                continue
            handler = handlers.get(kind)
            if handler is not None:
                handler(self, node)
            if not self.needs_instrumenting and (
                isinstance(node, instrumented)
                or (kind is ast.BinOp and type(node.op) in (ast.Pow, ast.LShift))
                or (kind is ast.AugAssign and type(node.op) in (ast.Pow, ast.LShift))
                or (kind is ast.Attribute
                    and (type(node.ctx) is not ast.Load or node.attr in GUARDED_LOADS
                         or node.attr.startswith("_")))
                or kind in (ast.Yield, ast.YieldFrom, ast.GeneratorExp, ast.Match)
            ):
                self.needs_instrumenting = True

    def check_name(self, node: ast.AST, name: str | None, *, store: bool = False) -> None:
        if name is None:
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
        if id(node) in self.slots_ok:
            return
        self.check_name(node, node.id, store=type(node.ctx) is not ast.Load)

    def on_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr.startswith("_"):
            if is_private_name(attr):
                return  # checked at run time: only on the model's own objects
            if not (type(node.ctx) is ast.Load and attr in READABLE_DUNDERS):
                self.refuse(
                    node,
                    f"the attribute '{attr}' is not allowed: attributes starting with '_' are "
                    f"private",
                )
        elif attr in FORBIDDEN_ATTRIBUTES:
            self.refuse(node, f"the attribute '{attr}' is not allowed: it exposes interpreter internals")

    def on_FunctionDef(self, node: ast.FunctionDef) -> None:
        name = node.name
        if id(node) in self.methods and name.startswith("__") and name.endswith("__"):
            if name not in DEFINABLE_DUNDERS:
                self.refuse(node, f"defining the method '{name}' is not allowed in this sandbox")
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
    # String annotations (forward references) are allowed: what would eval() them
    # (typing.get_type_hints, ForwardRef) is hidden, and singledispatch.register checks them.

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
        if any(part.startswith("_") for part in module.split(".")):
            self.refuse(node, f"importing from '{module}' is not allowed (private module)")
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


def inspect_tree(tree: ast.AST, reserved_names: frozenset[str] = frozenset()) -> tuple[list[Violation], bool]:
    """(violations sorted by position, whether the tree needs instrumenting)."""
    checker = PolicyChecker(reserved_names)
    checker.run(tree)
    violations = sorted(checker.violations, key=lambda v: (v.lineno or 0, v.col or 0))
    return violations, checker.needs_instrumenting

