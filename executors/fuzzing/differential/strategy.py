"""`programs()`: Python source that compiles under CPython, for differential fuzzing.

"data" mode writes programs of the kind models write for data work. `DataProgram` builds one:
a few statements drawn from `STATEMENT_KINDS` (one method `stmt_<kind>` each), then an ending.
Its expressions come from `Expressions` (expressions.py), its idioms from a table
(idioms.py). "grammar" mode takes hypothesmith's programs that `compile()` accepts.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._hypothesis import st
from .data_idioms import DATA_IDIOMS, LIBRARY_IMPORTS
from .expressions import VALUE_TYPES, Expressions, ProgramEnv
from .idioms import IDIOM_IMPORTS, IDIOMS

__all__ = ["programs", "DataProgram", "STATEMENT_KINDS"]

_MODULE_IMPORTS = {
    "math": "import math",
    "statistics": "import statistics",
    "json": "import json",
    "re": "import re",
    "collections": "import collections",
    "itertools": "import itertools",
    "functools": "import functools",
    "dataclasses": "from dataclasses import dataclass, field",
    "enum": "import enum",
    "random": "import random",
    "string": "import string",
    "operator": "import operator",
    "heapq": "import heapq",
    "fractions": "from fractions import Fraction",
    "decimal": "from decimal import Decimal",
    **LIBRARY_IMPORTS,
}

# Statement kinds, repeated by weight (hypothesis samples from this order; "tool" joins, three
# times, when the program has tools).
STATEMENT_KINDS = ("assign", "assign", "assign", "print", "print", "for", "while", "if", "func",
                   "try", "comp", "string", "augassign", "class", "walrus", "match", "gen", "with",
                   "unpack", "lambda", "closure", "dataclass", "enum", "module", "decorator",
                   "exc_chain", "del_assert", "dict_ops", "print_kw", "idiom", "idiom")

_VAR_PREFIX = {"int": "n", "float": "f", "str": "s", "bool": "ok", "list_int": "nums",
               "list_str": "words", "dict": "table"}
_ANNOTATION_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool", "list": "list_int",
                     "List": "list_int", "dict": "dict", "Dict": "dict"}


def tool_specs(tools: Mapping[str, Callable[..., Any]] | None) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """(name, [(param, type, keyword_only)]) for each tool, from its signature and annotations."""
    specs = []
    for name, fn in (tools or {}).items():
        target = getattr(fn, "forward", None) or fn
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            specs.append((name, []))
            continue
        params = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "self":
                continue
            if p.default is not p.empty:
                continue  # keep calls minimal: required parameters only
            ann = p.annotation
            if isinstance(ann, str):
                ann_name = ann.split("[")[0].strip()
            else:
                ann_name = getattr(ann, "__name__", "") if ann is not p.empty else ""
            params.append((p.name, _ANNOTATION_TYPES.get(ann_name, "int"), p.kind == p.KEYWORD_ONLY))
        specs.append((name, params))
    return specs


def _lines(block: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in block.split("\n"))


class DataProgram(Expressions):
    """One data program, built statement by statement from hypothesis draws."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any],
                 tools: Mapping[str, Callable[..., Any]] | None, libraries: tuple[str, ...] = ()) -> None:
        super().__init__(draw, ProgramEnv())
        self.specs = tool_specs(tools)
        self.data_idioms = [name for name, (library, _) in DATA_IDIOMS.items() if library in libraries]

    def build(self, final: str | None) -> str:
        """`final` forces the ending: "none", "expr" (a last expression) or "final" (final_answer)."""
        out = [self.statement() for _ in range(self.draw(st.integers(1, 8)))]
        ending = final if final is not None else self.pick(["none", "expr", "final"])
        if ending == "expr":
            out.append(self.expr(self.pick(VALUE_TYPES), 2))
        elif ending == "final":
            out.append(f"final_answer({self.expr(self.pick(VALUE_TYPES), 2)})")
        head = [_MODULE_IMPORTS[m] for m in sorted(self.env.imports)]
        return "\n".join(head + out) + "\n"

    def statement(self) -> str:
        kinds = list(STATEMENT_KINDS) + (["tool", "tool", "tool"] if self.specs else [])
        kinds += ["data_idiom"] * 6 if self.data_idioms else []
        return getattr(self, f"stmt_{self.pick(kinds)}")()

    def depth(self) -> int:
        return self.draw(st.integers(0, 3))

    # -- simple statements -------------------------------------------------------------------
    def stmt_assign(self) -> str:
        type_ = self.pick(VALUE_TYPES)
        name = self.env.fresh(_VAR_PREFIX[type_])
        line = f"{name} = {self.expr(type_, self.depth())}"
        self.env.vars[type_].append(name)
        return line

    def stmt_print(self) -> str:
        return f"print({self.expr(self.pick(VALUE_TYPES), self.depth())})"

    def stmt_print_kw(self) -> str:
        sep = repr(self.pick([", ", "|", "", "\t"]))
        end = repr(self.pick(["\n", "!\n", " ;\n"]))
        return f"print({self.integer(1)}, {self.text(1)}, {self.numbers(1)}, sep={sep}, end={end})"

    def stmt_augassign(self) -> str:
        if not self.env.vars["int"]:
            return f"print({self.integer(2)})"
        name = self.var("int")
        op = self.pick(["+=", "-=", "*=", "//=", "%="])
        right = self.nonzero() if op in ("//=", "%=") else self.integer(1)
        return f"{name} {op} {right}\nprint({name})"

    def stmt_walrus(self) -> str:
        return f"if (size := len({self.numbers(1)})) > {self.draw(st.integers(0, 4))}:\n    print('size', size)"

    def stmt_unpack(self) -> str:
        return (f"head, *rest = {self.numbers(1)} + [0]\nprint(head, rest)\n"
                f"a, b = {self.integer(1)}, {self.text(1)}\nprint(b, a)")

    def stmt_lambda(self) -> str:
        return (f"key = lambda w: (len(w), w)\n"
                f"print(sorted({self.words(1)}, key=key), max({self.words(1)}, key=key))")

    def stmt_del_assert(self) -> str:
        return f"tmp = {self.numbers(1)}\ndel tmp[0]\nassert isinstance(tmp, list), 'list expected'\nprint(tmp)"

    def stmt_string(self) -> str:
        return self.pick([
            f"print({self.text(2)}.split())",
            f"print(repr({self.text(2)}))",
            f"print(sorted(set({self.text(1)})))",
            f"print({self.text(1)}.find({self.word()}), {self.text(1)}.rfind('a'))",
            f"print({self.text(1)}.partition(' '))",
            f"print([c for c in {self.text(1)} if c.isalpha()])",
            f"print({self.text(1)}.encode('utf-8'))",
        ])

    def stmt_comp(self) -> str:
        name = self.env.fresh("pairs")
        return self.pick([
            f"{name} = {{v: v * v for v in {self.numbers(1)}}}\nprint({name})",
            f"{name} = sorted({{v % 5 for v in {self.numbers(1)}}})\nprint({name})",
            f"{name} = [(a, b) for a in range(3) for b in {self.words(1)} if a < len(b)]\nprint({name})",
            f"print(list(v for v in {self.numbers(1)} if v))",
        ])

    def stmt_dict_ops(self) -> str:
        name = self.env.fresh("table")
        code = (f"{name} = {self.table(1)}\n{name}[{self.word()}] = {self.integer(1)}\n"
                f"{name}.setdefault({self.word()}, 0)\nfor key, val in sorted({name}.items()):\n"
                f"    print(key, val)\nprint(len({name}), {self.word()} in {name})")
        self.env.vars["dict"].append(name)
        return code

    def stmt_tool(self) -> str:
        name, params = self.pick(self.specs)
        n_positional = self.draw(st.integers(0, len(params)))
        args = []
        for index, (pname, type_, kwonly) in enumerate(params):
            value = self.expr(type_, 1)
            keyword_arg = kwonly or index >= n_positional
            args.append(f"{pname}={value}" if keyword_arg else value)
        res = self.env.fresh("res")
        self.env.vars["any"].append(res)
        return f"{res} = {name}({', '.join(args)})\nprint({res})"

    def stmt_idiom(self) -> str:
        k = self.draw(st.integers(1, 9))
        name = self.pick(list(IDIOMS))
        if name in IDIOM_IMPORTS:
            self.env.imports.add(IDIOM_IMPORTS[name])
        return IDIOMS[name](self, k)

    def stmt_data_idiom(self) -> str:
        k = self.draw(st.integers(1, 9))
        library, write = DATA_IDIOMS[self.pick(self.data_idioms)]
        self.env.imports.add(library)
        return write(self, k)

    # -- control flow ------------------------------------------------------------------------
    def stmt_for(self) -> str:
        acc = self.env.fresh("total")
        it = self.pick([self.numbers(2), f"range({self.draw(st.integers(0, 20))})",
                        f"enumerate({self.words(1)})", f"zip({self.numbers(1)}, {self.words(1)})"])
        if it.startswith("enumerate") or it.startswith("zip"):
            body = f"    {acc} += len(str(item))\n    print(item)"
        else:
            body = self.pick([
                f"    {acc} += item",
                f"    if item % 3 == 0:\n        continue\n    {acc} += item * 2",
                f"    if item > {self.lit_int()}:\n        break\n    {acc} -= item",
            ])
        orelse = self.pick(["", f"\nelse:\n    print('done', {acc})"])
        self.env.vars["int"].append(acc)
        return f"{acc} = 0\nfor item in {it}:\n{body}{orelse}\nprint({acc})"

    def stmt_while(self) -> str:
        i = self.env.fresh("i")
        bound = self.draw(st.integers(0, 25))
        self.env.vars["int"].append(i)
        return f"{i} = 0\nwhile {i} < {bound}:\n    {i} += {self.draw(st.integers(1, 4))}\nprint({i})"

    def stmt_if(self) -> str:
        type_ = self.pick(VALUE_TYPES)
        elif_ = self.pick(["", f"elif {self.boolean(1)}:\n    print({self.text(1)})\n"])
        return (f"if {self.boolean(2)}:\n    print({self.expr(type_, 2)})\n{elif_}"
                f"else:\n    print({self.expr(type_, 1)})")

    def stmt_try(self) -> str:
        exc = self.pick(["ZeroDivisionError", "KeyError", "IndexError", "ValueError", "Exception"])
        risky = self.pick([
            f"value = {self.integer(1)} // {self.draw(st.integers(-1, 1))}",
            f"value = {self.table(1)}[{self.word()}]",
            f"value = {self.numbers(1)}[{self.draw(st.integers(-8, 8))}]",
            f"value = int({self.text(1)})",
        ])
        final = self.pick(["", "\nfinally:\n    print('finally')"])
        return (f"try:\n    {risky}\nexcept {exc} as err:\n    print('caught', type(err).__name__)\n"
                f"    value = None\nelse:\n    print('ok', value){final}")

    def stmt_match(self) -> str:
        return (f"match {self.integer(1)}:\n    case 0:\n        print('zero')\n"
                f"    case 1 | 2 | 3:\n        print('small')\n"
                f"    case int(v) if v < 0:\n        print('negative', v)\n"
                f"    case _:\n        print('other')")

    def stmt_exc_chain(self) -> str:
        return ("class AppError(Exception):\n    pass\n\n"
                f"try:\n    try:\n        {{}}[{self.word()}]\n    except KeyError as inner:\n"
                "        raise AppError('lookup failed') from inner\n"
                "except AppError as outer:\n    print(outer, type(outer.__cause__).__name__)")

    # -- definitions -------------------------------------------------------------------------
    def stmt_func(self) -> str:
        name = self.env.fresh("calc")
        arity = self.draw(st.integers(0, 3))
        params = ["a", "b", "c"][:arity]
        saved = self.env.vars["int"]
        self.env.vars["int"] = list(params)
        default = self.draw(st.booleans()) and arity > 0
        body_expr = self.integer(2)
        self.env.vars["int"] = saved
        sig = ", ".join(params)
        if default:
            sig = ", ".join(params[:-1] + [f"{params[-1]}={self.draw(st.integers(-5, 5))}"])
        docs = self.pick(["", '    """Compute something."""\n'])
        body = self.pick([
            f"    return {body_expr}",
            f"    result = {body_expr}\n    if result < 0:\n        return -result\n    return result",
        ])
        self.env.funcs.append((name, arity))
        return f"def {name}({sig}):\n{docs}{body}\nprint({name}({', '.join(self.integer(1) for _ in range(arity))}))"

    def stmt_class(self) -> str:
        name = self.env.fresh("Box")
        inst = self.env.fresh("box")
        extra = self.pick([
            "",
            "    def __eq__(self, other):\n        return isinstance(other, type(self)) and self.total() == other.total()\n",
            f"    def __add__(self, other):\n        return {name}(self.a + other.a, self.b + other.b)\n",
            "    @property\n    def double(self):\n        return 2 * self.total()\n",
            "    @classmethod\n    def zero(cls):\n        return cls(0, 0)\n\n    @staticmethod\n    def unit():\n        return 1\n",
            "    def __len__(self):\n        return abs(self.a) % 7\n\n    def __iter__(self):\n        yield self.a\n        yield self.b\n",
        ])
        sub = self.draw(st.booleans())
        code = (f"class {name}:\n    def __init__(self, a, b=1):\n        self.a = a\n        self.b = b\n\n"
                f"    def total(self):\n        return self.a + self.b\n\n"
                f"    def __repr__(self):\n        return f'{name}({{self.a}}, {{self.b}})'\n{extra}")
        ctor = name
        if sub:
            ctor = self.env.fresh("Sub")
            code += (f"\n\nclass {ctor}({name}):\n    def total(self):\n"
                     f"        return super().total() * 2\n")
        code += f"\n{inst} = {ctor}({self.integer(1)}, {self.integer(1)})\nprint({inst}, {inst}.total())"
        self.env.classes.append(name)
        self.env.instances.append(inst)
        return code

    def stmt_gen(self) -> str:
        name = self.env.fresh("gen")
        return (f"def {name}(limit):\n    for k in range(limit):\n        if k % 2:\n            yield k * k\n"
                f"print(list({name}({self.draw(st.integers(0, 15))})), sum({name}(5)))")

    def stmt_with(self) -> str:
        name = self.env.fresh("Ctx")
        return (f"class {name}:\n    def __enter__(self):\n        print('enter')\n        return self\n\n"
                f"    def __exit__(self, kind, value, tb):\n        print('exit', kind is None)\n        return False\n\n"
                f"with {name}() as ctx:\n    print({self.text(1)})")

    def stmt_closure(self) -> str:
        name = self.env.fresh("counter")
        return (f"def {name}():\n    count = 0\n    def bump(step=1):\n        nonlocal count\n"
                f"        count += step\n        return count\n    return bump\n"
                f"tick = {name}()\ntick()\nprint(tick({self.draw(st.integers(1, 9))}))")

    def stmt_dataclass(self) -> str:
        self.env.imports.add("dataclasses")
        name = self.env.fresh("Row")
        return (f"@dataclass\nclass {name}:\n    label: str\n    qty: int = 0\n    tags: list = field(default_factory=list)\n\n"
                f"rows = [{name}({self.word()}, {self.integer(0)}), {name}({self.word()})]\n"
                f"rows.sort(key=lambda r: (r.qty, r.label))\nprint(rows)")

    def stmt_enum(self) -> str:
        self.env.imports.add("enum")
        name = self.env.fresh("Level")
        return (f"class {name}(enum.Enum):\n    LOW = 1\n    HIGH = 2\n\n"
                f"print({name}.LOW, {name}(2).name, [m.value for m in {name}])")

    def stmt_decorator(self) -> str:
        return ("def logged(fn):\n    def wrapper(*args, **kwargs):\n        print('call', fn.__name__, args)\n"
                "        return fn(*args, **kwargs)\n    return wrapper\n\n"
                f"@logged\ndef scaled(x, factor=2):\n    return x * factor\n\n"
                f"print(scaled({self.integer(1)}, factor={self.draw(st.integers(-3, 3))}))")

    def stmt_module(self) -> str:
        mod = self.pick(["json", "re", "math", "itertools", "functools", "heapq",
                         "fractions", "decimal", "random", "operator", "string"])
        self.env.imports.add(mod)
        # Every entry is written (and draws) before one is chosen: the draws stay as they were.
        return {
            "json": f"print(json.dumps({self.table(1)}, sort_keys=True))\nprint(json.loads('[1, 2.5, \"x\", null]'))",
            "re": f"print(re.findall(r'[a-z]+', {self.text(1)}), re.sub(r'\\d', '#', {self.text(1)}))",
            "math": f"print(math.gcd({self.integer(1)}, {self.integer(1)}), math.floor({self.floating(1)}), math.pi)",
            "itertools": f"print(list(itertools.chain({self.numbers(1)}, {self.numbers(1)})), list(itertools.islice(itertools.count(3), 4)))",
            "functools": f"print(functools.reduce(lambda x, y: x * 2 + y, {self.numbers(1)}, 0))",
            "heapq": f"heap = {self.numbers(1)}\nheapq.heapify(heap)\nprint(heapq.nsmallest(2, heap))",
            "fractions": f"print(Fraction({self.integer(1)}, {self.nonzero()}) + Fraction(1, 3))",
            "decimal": f"print(Decimal('{self.draw(st.integers(0, 999))}.{self.draw(st.integers(0, 99))}') * 3)",
            "random": f"rng = random.Random({self.draw(st.integers(0, 99))})\nprint(rng.randint(1, 100), rng.choice({self.words(1)}))",
            "operator": f"print(sorted({self.table(1)}.items(), key=operator.itemgetter(1)))",
            "string": f"print(string.ascii_lowercase[:{self.draw(st.integers(0, 26))}], string.capwords({self.text(1)}))",
        }[mod]


@st.composite
def _data_programs(draw: Any, tools: Mapping[str, Callable[..., Any]], final: str | None,
                   libraries: tuple[str, ...] = ()) -> str:
    return DataProgram(draw, tools, libraries).build(final)


def data_libraries(authorized_imports: Iterable[str] | None) -> tuple[str, ...]:
    """The libraries with idioms (numpy, pandas) that `authorized_imports` allows ("numpy",
    "numpy.*", "*") and that this Python can import (the CPython reference runs here)."""
    names = [] if authorized_imports is None or isinstance(authorized_imports, str) else list(authorized_imports)
    out = []
    for library in LIBRARY_IMPORTS:
        allowed = any(n == "*" or n == library or n.startswith(library + ".") for n in names)
        if allowed and importlib.util.find_spec(library) is not None:
            out.append(library)
    return tuple(out)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    return True


def programs(
    tools: Mapping[str, Callable[..., Any]] | None = None,
    mode: str = "data",
    *,
    ending: str | None = None,
    authorized_imports: Iterable[str] | None = None,
) -> st.SearchStrategy[str]:
    """Strategy for Python source code (str) that compiles under CPython.

    mode="data": programs of the kind models write for data work (assignments, loops,
    comprehensions, functions, classes, string/number/collection operations, authorized imports,
    and calls of `tools` with arguments generated from their annotations), deterministic and
    bounded so that most run to completion identically under CPython and a correct executor.
    mode="grammar": grammar-level programs from `hypothesmith` (slow: ~0.5–3 s each), filtered by
    `compile()`. mode="all": either. `ending` forces the last statement: "none", "expr" (a
    last expression whose value is the output) or "final" (a `final_answer(...)` call).
    authorized_imports: when they allow numpy or pandas (and this Python has them), data
    programs also use their idioms (data_idioms.py).

        @given(programs(tools={"add": add}))
        def test_cpython_equal(code): ...
    """
    if mode == "data":
        return _data_programs(dict(tools or {}), ending, data_libraries(authorized_imports))
    if mode == "grammar":
        try:
            import hypothesmith
        except ImportError as exc:  # pragma: no cover
            raise ImportError("programs(mode='grammar') needs hypothesmith: pip install hypothesmith") from exc
        return st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()).filter(_compiles)
    if mode == "all":
        return st.one_of(programs(tools, "data", ending=ending, authorized_imports=authorized_imports),
                         programs(tools, "grammar"))
    raise ValueError(f"programs(mode=...) must be 'data', 'grammar' or 'all', got {mode!r}")
