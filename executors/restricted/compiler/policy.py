"""The restricted policy as data: what model code may write, and why the rest is refused.

Everything not allowed here is refused before the code runs (`checker.py` walks the AST against
these tables). What the AST cannot show (computed attribute names, format fields, module
members) is checked at run time by `guards/operations.py`, `host/guard.py` and `libraries/sandbox_modules.py`, from
the same tables.
"""

from __future__ import annotations

import ast

# Statement and expression kinds model code may use. Async code is refused: there is no event
# loop in the sandbox, and coroutine frames are escape material.
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
        # newer syntax, where the running CPython has it (see NEWER_SYNTAX)
        "TypeAlias", "TypeVar", "ParamSpec", "TypeVarTuple", "TemplateStr", "Interpolation",
    )
    if hasattr(ast, name)
)

# Syntax added after 3.11, and why each runs with the guarantees of the rest (none is refused).
# What CPython evaluates lazily, possibly after the step when something asks for it, gets the
# liveness check of a lambda's body (instrument.py `_lazy`): evaluated after the step, it stops.
NEWER_SYNTAX: dict[str, str] = {
    "type X = ... (3.12, PEP 695)": "the alias's value is evaluated when first asked for: it gets "
        "a lambda body's liveness check; the name is checked like any assignment",
    "def f[T](...), class C[T] (3.12, PEP 695)": "type parameters are names, checked like "
        "arguments; a bound, constraints or default (PEP 696, 3.13) is evaluated lazily and gets "
        "the liveness check; a generic class's implicit base is typing.Generic, as in CPython",
    "t'...' template strings (3.14, PEP 750)": "the interpolated expressions are evaluated at "
        "once and checked like an f-string's; the Template holds them unformatted (no __format__ "
        "runs until the model's own code formats them)",
    "deferred annotations (3.14, PEP 649)": "an annotation is evaluated only when asked for "
        "(dataclasses, typing, inspect): one that only names types (names, attributes, "
        "subscripts, `|`) runs nothing of the model's; any other gets the liveness check",
}

# Refused node kinds with what to write instead (others get a generic advice).
REFUSED_NODE_ADVICE: dict[str, str] = {
    "AsyncFunctionDef": "async code is not supported here; write ordinary (synchronous) functions",
    "Await": "async code is not supported here; call functions directly",
    "AsyncFor": "async code is not supported here; use a normal for loop",
    "AsyncWith": "async code is not supported here; use a normal with statement",
}

# Binary operators: a user class may define the plain, the reflected and the in-place dunder of
# each (`__add__`, `__radd__`, `__iadd__`), as in CPython.
BINARY_OPERATORS: tuple[str, ...] = (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
    "and", "or", "xor",
)
OPERATOR_DUNDERS: frozenset[str] = frozenset(
    f"__{prefix}{op}__" for op in BINARY_OPERATORS for prefix in ("", "r", "i")
) | {"__divmod__", "__rdivmod__"}  # divmod has no in-place form

# Dunder methods a user class may define (besides the operators above).
DEFINABLE_DUNDERS: frozenset[str] = OPERATOR_DUNDERS | {
    "__init__", "__new__", "__post_init__", "__repr__", "__str__", "__format__", "__bytes__",
    "__hash__", "__bool__", "__len__", "__length_hint__", "__iter__", "__next__", "__reversed__",
    "__contains__", "__getitem__", "__setitem__", "__delitem__", "__missing__", "__getattr__",
    "__call__", "__enter__", "__exit__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__neg__", "__pos__", "__abs__", "__invert__",
    "__round__", "__trunc__", "__floor__", "__ceil__", "__int__", "__float__", "__complex__",
    "__index__",
}

# Dunder methods a user class may not define, and why (shown to the model). Any other dunder
# outside DEFINABLE_DUNDERS is refused too, with a generic message.
REFUSED_DUNDERS: dict[str, str] = {
    "__del__": "it would run at garbage collection, on the host, after the step",
    "__init_subclass__": "class machinery hooks are not available",
    "__set_name__": "class machinery hooks are not available",
    "__class_getitem__": "class machinery hooks are not available",
    "__getattribute__": "it would intercept every attribute lookup; define __getattr__",
    "__setattr__": "attribute hooks are not available; use methods or properties",
    "__delattr__": "attribute hooks are not available; use methods",
    "__reduce__": "pickling hooks are not available",
    "__reduce_ex__": "pickling hooks are not available",
}

# Operator dunders that compute a huge number in one C call: their operators are size-checked,
# a direct `x.__pow__(y)` would not be.
UNCHECKED_SIZE_DUNDERS: frozenset[str] = frozenset({
    "__pow__", "__rpow__", "__ipow__", "__lshift__", "__rlshift__", "__ilshift__",
})

# Interchange protocols libraries define on their objects (numpy, pandas, polars, pyarrow): each
# allowed (None) or refused (why) by what calling it hands over. Data, or a capsule only another
# library's consumer can open, is what `np.asarray`, `pd.api.interchange.from_dataframe` or
# `pa.table` would take from the object anyway. Model classes still cannot *define* any of them
# (DEFINABLE_DUNDERS): a consumer never trusts a description the model made.
INTERCHANGE_DUNDERS: dict[str, str | None] = {
    "__array__": None,  # an ndarray of the object's data (np.asarray(x))
    "__dataframe__": None,  # the dataframe interchange view of the frame's columns
    "__arrow_c_stream__": None,  # Arrow C data interface: a PyCapsule, opaque to Python code
    "__arrow_c_array__": None,
    "__arrow_c_schema__": None,
    "__arrow_c_device_array__": None,
    "__arrow_c_device_stream__": None,
    "__dlpack__": None,  # a DLPack capsule (np.from_dlpack(x))
    "__dlpack_device__": None,  # (device type, id)
    "__array_interface__": "it describes the array's memory by raw address, for views made "
                           "over any address; use np.asarray(x)",
    "__array_struct__": "a capsule of raw memory addresses; use np.asarray(x)",
    "__cuda_array_interface__": "it describes device memory by raw address",
    "__array_namespace__": "it hands out the library's real module, not the sandbox's view of "
                           "it; import the library instead",
}

# Dunder attributes model code may read (`super().__init__(...)`, `f.__name__`). Everything else
# starting with "_" is refused: __class__/__bases__/__subclasses__/__globals__/__self__/... are
# the classic ways out. (`type(x)` gives what `x.__class__` would, minus `type`'s 3-arg form.)
READABLE_DUNDERS: frozenset[str] = (
    DEFINABLE_DUNDERS - {"__new__", "__getattr__"} - UNCHECKED_SIZE_DUNDERS
) | {
    "__class__",  # rewritten to the sandbox's type(): never hands out `type` or a metaclass
    "__dict__",  # rewritten: only of the model's own objects
    "__name__", "__qualname__", "__doc__", "__module__", "__cause__", "__context__",
    "__suppress_context__", "__notes__",
} | {name for name, refused in INTERCHANGE_DUNDERS.items() if refused is None}

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
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "f_back", "f_builtins", "f_code", "f_globals", "f_locals",
    "f_trace", "f_trace_lines", "f_trace_opcodes", "f_generator", "tb_frame", "tb_next",
    "co_code", "func_globals", "func_code",
})

# Attribute names whose value is wrapped at runtime (not refused): str.format / format_map can
# walk attributes through their fields ("{0.__class__}"), so they get checked templates.
FORMAT_ATTRIBUTES: frozenset[str] = frozenset({"format", "format_map"})

# Attribute loads rewritten to a runtime guard, and why (see instrument.py, host/guard.py).
GUARDED_LOAD_REASONS: dict[str, str] = {
    "format": "its template's fields are checked before formatting",
    "format_map": "its template's fields are checked before formatting",
    "__class__": "answered by the sandbox's type(), never `type` or a metaclass",
    "__init__": "re-initialising host objects is refused",
    "register": "ABC registration changes isinstance() for the whole process",
    "__dict__": "only of the model's own objects",
    "mro": "answers with the sandbox's stand-ins for host classes",
    # methods of native types checked where they are taken (libraries/raw_memory/members.py)
    **dict.fromkeys(("ctypes", "resize", "take", "put", "choose", "from_buffers", "from_arrays", "from_dense",
                     "from_sparse", "from_storage", "from_struct_array", "from_numpy",
                     "from_dense_numpy", "from_scipy", "from_pydata_sparse", "from_tensor"),
                    "a raw-memory route of a native library, checked where it is taken"),
}
GUARDED_LOADS: frozenset[str] = frozenset(GUARDED_LOAD_REASONS)

# Builtins that do not exist in the sandbox, with what to do instead (shown to the model).
FORBIDDEN_BUILTINS: dict[str, str] = {
    "open": "use the readers of an authorized library instead (pandas.read_csv, json.loads of a "
            "tool's text, pathlib.Path(...).read_text() when pathlib is authorized): only files "
            "the executor grants can be read or written",
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

# Forbidden builtins that the model's code may still use as its own variable names (`input` is a
# common one in data code): none is in the sandbox's builtins (a test holds it so), so a name the
# code binds means its own value, and a load before the binding is a NameError.
SHADOWABLE_BUILTINS = frozenset({"input", "help", "exit", "quit", "breakpoint", "memoryview"})

# Members of authorized modules that are hidden from model code, with the reason. Module-valued
# attributes and underscore names are hidden generically (see sandbox_modules.py).
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

# The io members that survive the "*" rule above.
IO_ALLOWED = frozenset({"StringIO", "BytesIO"})
