"""Hypothesis strategies that generate programs for fuzzing any executor.

Needs `hypothesis` (and `hypothesmith` for `programs(mode="grammar")`): both come with the
project's `dev` extra, or `pip install hypothesis hypothesmith`. They are imported here, not by
`import executors`, so the executors themselves never depend on them.

    from hypothesis import given
    from executors import LocalExecutor
    from executors.strategies import programs

    @given(programs(tools={"add": add}))
    def test_runs(code):
        assert LocalExecutor(tools={"add": add}).execute(code).error is None or True

Three families:

- `programs()` — valid programs of the kind models write for data work ("data" mode), or
  grammar-level programs from hypothesmith filtered by `compile()` ("grammar" mode).
- `escape_attempts(marker_path, canary_env)` — programs that combine known escape primitives
  with generated glue; each aims at an observable effect (see `EscapeAttempt`).
- `resource_bombs()` — time, memory, output, recursion and process bombs (see `Bomb`).

`executors.testing` turns these into properties (`check_executor(factory)`).
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the user's environment
    raise ImportError(
        "executors.strategies needs hypothesis: pip install hypothesis hypothesmith "
        "(or the project's 'dev' extra)"
    ) from exc

__all__ = [
    "Bomb",
    "EscapeAttempt",
    "REACH_TOKEN",
    "BOMB_KINDS",
    "programs",
    "escape_attempts",
    "resource_bombs",
]

# Printed by an escape attempt only after it called a real `os.getpid()`: proof that the code
# reached a module the restricted policy refuses.
REACH_TOKEN = "FUZZ-REACHED-REFUSED-MODULE"

BOMB_KINDS = ("time", "memory", "output", "recursion", "process")


@dataclass(frozen=True)
class EscapeAttempt:
    """One generated escape program.

    family: the primitive it uses (dunder_walk, format_string, frames, module_pivot, builtins,
        tool_internals, refused_import, direct, hooks are carriers, fullwidth an encoding).
    effect: what it tries to do — "marker" (create `marker_path`), "canary" (print the value of
        the `canary_env` environment variable), "reach" (print REACH_TOKEN after calling a real
        `os.getpid()`) or "tamper" (change process-wide state of the host).
    """

    code: str
    family: str
    effect: str
    carrier: str = "plain"
    encoding: str = "literal"

    @property
    def label(self) -> str:
        return f"{self.family}/{self.effect}/{self.carrier}/{self.encoding}"


@dataclass(frozen=True)
class Bomb:
    """One resource bomb: `kind` is one of BOMB_KINDS, `size` the generated size it uses."""

    kind: str
    code: str
    name: str
    size: int = 0

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


# --------------------------------------------------------------------------------------------
# programs(): data mode
# --------------------------------------------------------------------------------------------

_WORDS = ["apple", "banana", "cherry", "data", "model", "agent", "tool", "alpha", "beta",
          "Zoë", "naïve", "x", "hello world", "A-B", "42", "", "tab\tsep", "ünïcode", "sum"]
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
}


class _Env:
    """Variables in scope, by type, while a data program is being built."""

    def __init__(self) -> None:
        self.vars: dict[str, list[str]] = {
            "int": [], "float": [], "str": [], "bool": [], "list_int": [], "list_str": [],
            "dict": [], "any": [],
        }
        self.funcs: list[tuple[str, int]] = []  # (name, arity) of int functions
        self.classes: list[str] = []  # class names with (a, b) constructors and .total()
        self.instances: list[str] = []
        self.imports: set[str] = set()
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def _lines(block: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in block.split("\n"))


def _tool_specs(tools: Mapping[str, Callable[..., Any]] | None) -> list[tuple[str, list[tuple[str, str, bool]]]]:
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
            kind = {"int": "int", "float": "float", "str": "str", "bool": "bool",
                    "list": "list_int", "List": "list_int", "dict": "dict", "Dict": "dict"}.get(ann_name, "int")
            params.append((p.name, kind, p.kind == p.KEYWORD_ONLY))
        specs.append((name, params))
    return specs


def _data_program(draw: Callable[[st.SearchStrategy[Any]], Any], tools, final: str | None) -> str:
    env = _Env()
    out: list[str] = []
    specs = _tool_specs(tools)

    def lit_int() -> str:
        return str(draw(st.integers(-1000, 1000)))

    def small() -> int:
        return draw(st.integers(0, 12))

    def nonzero() -> str:
        return str(draw(st.integers(1, 97)) * draw(st.sampled_from([1, -1])))

    def word() -> str:
        return repr(draw(st.sampled_from(_WORDS)))

    def var(kind: str) -> str | None:
        names = env.vars[kind]
        return draw(st.sampled_from(names)) if names else None

    def e_int(d: int) -> str:
        options = ["lit", "lit"]
        if env.vars["int"]:
            options += ["var", "var"]
        if d > 0:
            options += ["bin", "bin", "abs", "minmax", "cond"]
            options += ["len_s", "len_l", "sum", "count", "pow", "round", "ord", "get"]
            if env.funcs:
                options.append("call")
            if env.instances:
                options.append("method")
        c = draw(st.sampled_from(options))
        if c == "lit":
            return lit_int()
        if c == "var":
            return var("int")
        if c == "bin":
            op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
            right = nonzero() if op in ("//", "%") else e_int(d - 1)
            return f"({e_int(d - 1)} {op} {right})"
        if c == "abs":
            return f"abs({e_int(d - 1)})"
        if c == "minmax":
            return f"{draw(st.sampled_from(['min', 'max']))}({e_int(d - 1)}, {e_int(d - 1)})"
        if c == "cond":
            return f"({e_int(d - 1)} if {e_bool(d - 1)} else {e_int(d - 1)})"
        if c == "len_s":
            return f"len({e_str(d - 1)})"
        if c == "len_l":
            return f"len({e_list(d - 1)})"
        if c == "sum":
            return draw(st.sampled_from([
                f"sum({e_list(d - 1)})", f"max({e_list(d - 1)}, default=0)",
                f"sum(v * v for v in {e_list(d - 1)})", f"min({e_list(d - 1)}, default=-1)",
            ]))
        if c == "count":
            return f"{e_str(d - 1)}.count({draw(st.sampled_from(['a', 'e', ' ', 'an']))!r})"
        if c == "pow":
            return f"({draw(st.integers(-30, 30))} ** {draw(st.integers(0, 4))})"
        if c == "round":
            return f"round({e_float(d - 1)})"
        if c == "ord":
            return f"ord({repr(draw(st.sampled_from(list('aZ0 é'))))})"
        if c == "get":
            return f"{e_dict(d - 1)}.get({word()}, {lit_int()})"
        if c == "call":
            name, arity = draw(st.sampled_from(env.funcs))
            return f"{name}({', '.join(e_int(d - 1) for _ in range(arity))})"
        if c == "method":
            return f"{draw(st.sampled_from(env.instances))}.total()"
        raise AssertionError(c)

    def e_float(d: int) -> str:
        c = draw(st.sampled_from(["lit", "div", "conv", "sqrt", "mean", "round"] if d > 0 else ["lit"]))
        if c == "lit":
            return repr(draw(st.sampled_from([0.5, 1.25, -3.75, 2.0, 1e-3, 100.125, 0.1])))
        if c == "div":
            return f"({e_int(d - 1)} / {nonzero()})"
        if c == "conv":
            return f"float({e_int(d - 1)})"
        if c == "sqrt":
            env.imports.add("math")
            return f"math.sqrt(abs({e_int(d - 1)}))"
        if c == "mean":
            env.imports.add("statistics")
            return f"statistics.mean([{e_int(0)}, {e_int(0)}, {e_int(0)}])"
        return f"round({e_float(d - 1)}, {draw(st.integers(0, 3))})"

    def e_str(d: int) -> str:
        options = ["lit"]
        if env.vars["str"]:
            options += ["var", "var"]
        if d > 0:
            options += ["method", "concat", "fstring", "join", "slice", "str", "format", "repeat", "percent"]
        c = draw(st.sampled_from(options))
        if c == "lit":
            return word()
        if c == "var":
            return var("str")
        if c == "method":
            m = draw(st.sampled_from(["upper()", "lower()", "strip()", "title()", "capitalize()",
                                      "replace('a', '4')", "swapcase()", "lstrip('a')",
                                      "center(9, '*')", "ljust(6, '.')", "zfill(5)"]))
            return f"{e_str(d - 1)}.{m}"
        if c == "concat":
            return f"({e_str(d - 1)} + {e_str(d - 1)})"
        if c == "fstring":
            spec = draw(st.sampled_from(["", ":>6", ":<4", ":^7", ":+d", ":05d", ":x", ":,", "!r", "=",]))
            fspec = draw(st.sampled_from(["", ":.2f", ":8.3f", ":e", ":.1%", ":g"]))
            # f-string fields stay free of quotes, braces and backslashes (Python 3.10/3.11 rules)
            text = var("str")
            tail = f"|{{{text}!r}}" if text else ""
            return f"f\"[{{({e_int(0)}){spec}}}|{{{e_float(0)}{fspec}}}{tail}]\""
        if c == "join":
            sep = repr(draw(st.sampled_from(["", ", ", "-", "\n", " | "])))
            return f"{sep}.join({e_strlist(d - 1)})"
        if c == "slice":
            a, b = draw(st.integers(-5, 5)), draw(st.integers(-5, 8))
            step = draw(st.sampled_from(["", ":2", ":-1"]))
            return f"{e_str(d - 1)}[{a}:{b}{step}]"
        if c == "str":
            return f"str({draw(st.sampled_from([e_int(d - 1), e_list(d - 1), e_bool(d - 1), e_float(d - 1)]))})"
        if c == "format":
            return f"'{{:>{draw(st.integers(0, 9))}}}|{{}}'.format({e_int(d - 1)}, {e_str(d - 1)})"
        if c == "repeat":
            return f"({e_str(d - 1)} * {draw(st.integers(0, 4))})"
        return f"('%s=%d' % ({e_str(d - 1)}, {e_int(d - 1)}))"

    def e_bool(d: int) -> str:
        c = draw(st.sampled_from(["cmp", "lit", "in", "str", "logic"] if d > 0 else ["lit", "cmp0"]))
        if c == "lit":
            return draw(st.sampled_from(["True", "False"]))
        if c == "cmp0":
            return f"({lit_int()} {draw(st.sampled_from(['<', '>', '==', '!=', '<=', '>=']))} {lit_int()})"
        if c == "cmp":
            return f"({e_int(d - 1)} {draw(st.sampled_from(['<', '>', '==', '!=', '<=', '>=']))} {e_int(d - 1)})"
        if c == "in":
            return f"({e_int(d - 1)} in {e_list(d - 1)})"
        if c == "str":
            return f"{e_str(d - 1)}.{draw(st.sampled_from(['startswith', 'endswith']))}({word()})"
        return f"({e_bool(d - 1)} {draw(st.sampled_from(['and', 'or']))} not {e_bool(d - 1)})"

    def e_list(d: int) -> str:
        options = ["lit"]
        if env.vars["list_int"]:
            options += ["var", "var"]
        if d > 0:
            options += ["sorted", "comp", "range", "concat", "slice", "map", "lens", "acc"]
        c = draw(st.sampled_from(options))
        if c == "lit":
            return "[" + ", ".join(lit_int() for _ in range(draw(st.integers(1, 6)))) + "]"
        if c == "var":
            return var("list_int")
        if c == "sorted":
            key = draw(st.sampled_from(["", ", reverse=True", ", key=abs", ", key=lambda v: (v % 3, -v)"]))
            return f"sorted({e_list(d - 1)}{key})"
        if c == "comp":
            cond = draw(st.sampled_from(["", " if v % 2 == 0", " if v > 0", f" if v != {lit_int()}"]))
            return f"[{draw(st.sampled_from(['v * 2', 'v - 1', 'v // 3', 'abs(v)', 'v * v']))} for v in {e_list(d - 1)}{cond}]"
        if c == "range":
            return f"list(range({draw(st.integers(-3, 5))}, {draw(st.integers(0, 15))}, {draw(st.sampled_from([1, 2, 3]))}))"
        if c == "concat":
            return f"({e_list(d - 1)} + {e_list(d - 1)})"
        if c == "slice":
            return f"{e_list(d - 1)}[{draw(st.sampled_from(['::-1', '1:', ':3', '::2', '-2:']))}]"
        if c == "map":
            return f"list(map(abs, {e_list(d - 1)}))"
        if c == "lens":
            return f"[len(w) for w in {e_strlist(d - 1)}]"
        env.imports.add("itertools")
        return f"list(itertools.accumulate({e_list(d - 1)}))"

    def e_strlist(d: int) -> str:
        c = draw(st.sampled_from(["lit", "split", "comp", "sorted"] if d > 0 else ["lit"]))
        if c == "lit":
            return "[" + ", ".join(word() for _ in range(draw(st.integers(1, 4)))) + "]"
        if c == "split":
            return f"{e_str(d - 1)}.split({draw(st.sampled_from(['', repr(' '), repr('a')]))})"
        if c == "comp":
            return f"[w.upper() for w in {e_strlist(d - 1)} if w]"
        return f"sorted({e_strlist(d - 1)})"

    def e_dict(d: int) -> str:
        options = ["lit"]
        if env.vars["dict"]:
            options += ["var"]
        if d > 0:
            options += ["comp", "zip", "counter"]
        c = draw(st.sampled_from(options))
        if c == "lit":
            return "{" + ", ".join(f"{word()}: {lit_int()}" for _ in range(draw(st.integers(0, 4)))) + "}"
        if c == "var":
            return var("dict")
        if c == "comp":
            return f"{{w: len(w) for w in {e_strlist(d - 1)}}}"
        if c == "zip":
            return f"dict(zip({e_strlist(d - 1)}, {e_list(d - 1)}))"
        env.imports.add("collections")
        return f"dict(collections.Counter({e_str(d - 1)}))"

    def expr(kind: str, d: int) -> str:
        return {"int": e_int, "float": e_float, "str": e_str, "bool": e_bool, "list_int": e_list,
                "list_str": e_strlist, "dict": e_dict}[kind](d)

    def depth() -> int:
        return draw(st.integers(0, 3))

    kinds = ["int", "float", "str", "bool", "list_int", "list_str", "dict"]

    def stmt() -> str:
        choices = ["assign", "assign", "assign", "print", "print", "for", "while", "if",
                   "func", "try", "comp", "string", "augassign", "class", "walrus", "match",
                   "gen", "with", "unpack", "lambda", "closure", "dataclass", "enum", "module",
                   "decorator", "exc_chain", "del_assert", "dict_ops", "print_kw", "idiom", "idiom"]
        if specs:
            choices += ["tool", "tool", "tool"]
        c = draw(st.sampled_from(choices))
        if c == "assign":
            kind = draw(st.sampled_from(kinds))
            name = env.fresh({"int": "n", "float": "f", "str": "s", "bool": "ok", "list_int": "nums",
                              "list_str": "words", "dict": "table"}[kind])
            line = f"{name} = {expr(kind, depth())}"
            env.vars[kind].append(name)
            return line
        if c == "print":
            kind = draw(st.sampled_from(kinds))
            return f"print({expr(kind, depth())})"
        if c == "print_kw":
            sep = repr(draw(st.sampled_from([", ", "|", "", "\t"])))
            end = repr(draw(st.sampled_from(["\n", "!\n", " ;\n"])))
            return f"print({e_int(1)}, {e_str(1)}, {e_list(1)}, sep={sep}, end={end})"
        if c == "augassign":
            if not env.vars["int"]:
                return f"print({e_int(2)})"
            name = var("int")
            op = draw(st.sampled_from(["+=", "-=", "*=", "//=", "%="]))
            right = nonzero() if op in ("//=", "%=") else e_int(1)
            return f"{name} {op} {right}\nprint({name})"
        if c == "for":
            acc = env.fresh("total")
            it = draw(st.sampled_from([e_list(2), f"range({draw(st.integers(0, 20))})",
                                       f"enumerate({e_strlist(1)})", f"zip({e_list(1)}, {e_strlist(1)})"]))
            if it.startswith("enumerate") or it.startswith("zip"):
                body = f"    {acc} += len(str(item))\n    print(item)"
            else:
                body = draw(st.sampled_from([
                    f"    {acc} += item",
                    f"    if item % 3 == 0:\n        continue\n    {acc} += item * 2",
                    f"    if item > {lit_int()}:\n        break\n    {acc} -= item",
                ]))
            orelse = draw(st.sampled_from(["", f"\nelse:\n    print('done', {acc})"]))
            env.vars["int"].append(acc)
            return f"{acc} = 0\nfor item in {it}:\n{body}{orelse}\nprint({acc})"
        if c == "while":
            i = env.fresh("i")
            bound = draw(st.integers(0, 25))
            env.vars["int"].append(i)
            return f"{i} = 0\nwhile {i} < {bound}:\n    {i} += {draw(st.integers(1, 4))}\nprint({i})"
        if c == "if":
            kind = draw(st.sampled_from(kinds))
            elif_ = draw(st.sampled_from(["", f"elif {e_bool(1)}:\n    print({e_str(1)})\n"]))
            return (f"if {e_bool(2)}:\n    print({expr(kind, 2)})\n{elif_}"
                    f"else:\n    print({expr(kind, 1)})")
        if c == "func":
            name = env.fresh("calc")
            arity = draw(st.integers(0, 3))
            params = ["a", "b", "c"][:arity]
            saved = env.vars["int"]
            env.vars["int"] = list(params)
            default = draw(st.booleans()) and arity > 0
            body_expr = e_int(2)
            env.vars["int"] = saved
            sig = ", ".join(params)
            if default:
                sig = ", ".join(params[:-1] + [f"{params[-1]}={draw(st.integers(-5, 5))}"])
            docs = draw(st.sampled_from(["", '    """Compute something."""\n']))
            body = draw(st.sampled_from([
                f"    return {body_expr}",
                f"    result = {body_expr}\n    if result < 0:\n        return -result\n    return result",
            ]))
            env.funcs.append((name, arity))
            return f"def {name}({sig}):\n{docs}{body}\nprint({name}({', '.join(e_int(1) for _ in range(arity))}))"
        if c == "try":
            exc = draw(st.sampled_from(["ZeroDivisionError", "KeyError", "IndexError", "ValueError", "Exception"]))
            risky = draw(st.sampled_from([
                f"value = {e_int(1)} // {draw(st.integers(-1, 1))}",
                f"value = {e_dict(1)}[{word()}]",
                f"value = {e_list(1)}[{draw(st.integers(-8, 8))}]",
                f"value = int({e_str(1)})",
            ]))
            final = draw(st.sampled_from(["", "\nfinally:\n    print('finally')"]))
            return (f"try:\n    {risky}\nexcept {exc} as err:\n    print('caught', type(err).__name__)\n"
                    f"    value = None\nelse:\n    print('ok', value){final}")
        if c == "comp":
            name = env.fresh("pairs")
            return draw(st.sampled_from([
                f"{name} = {{v: v * v for v in {e_list(1)}}}\nprint({name})",
                f"{name} = sorted({{v % 5 for v in {e_list(1)}}})\nprint({name})",
                f"{name} = [(a, b) for a in range(3) for b in {e_strlist(1)} if a < len(b)]\nprint({name})",
                f"print(list(v for v in {e_list(1)} if v))",
            ]))
        if c == "string":
            return draw(st.sampled_from([
                f"print({e_str(2)}.split())",
                f"print(repr({e_str(2)}))",
                f"print(sorted(set({e_str(1)})))",
                f"print({e_str(1)}.find({word()}), {e_str(1)}.rfind('a'))",
                f"print({e_str(1)}.partition(' '))",
                f"print([c for c in {e_str(1)} if c.isalpha()])",
                f"print({e_str(1)}.encode('utf-8'))",
            ]))
        if c == "class":
            name = env.fresh("Box")
            inst = env.fresh("box")
            extra = draw(st.sampled_from([
                "",
                "    def __eq__(self, other):\n        return isinstance(other, type(self)) and self.total() == other.total()\n",
                f"    def __add__(self, other):\n        return {name}(self.a + other.a, self.b + other.b)\n",
                "    @property\n    def double(self):\n        return 2 * self.total()\n",
                "    @classmethod\n    def zero(cls):\n        return cls(0, 0)\n\n    @staticmethod\n    def unit():\n        return 1\n",
                "    def __len__(self):\n        return abs(self.a) % 7\n\n    def __iter__(self):\n        yield self.a\n        yield self.b\n",
            ]))
            sub = draw(st.booleans())
            code = (f"class {name}:\n    def __init__(self, a, b=1):\n        self.a = a\n        self.b = b\n\n"
                    f"    def total(self):\n        return self.a + self.b\n\n"
                    f"    def __repr__(self):\n        return f'{name}({{self.a}}, {{self.b}})'\n{extra}")
            ctor = name
            if sub:
                ctor = env.fresh("Sub")
                code += (f"\n\nclass {ctor}({name}):\n    def total(self):\n"
                         f"        return super().total() * 2\n")
            code += f"\n{inst} = {ctor}({e_int(1)}, {e_int(1)})\nprint({inst}, {inst}.total())"
            env.classes.append(name)
            env.instances.append(inst)
            return code
        if c == "walrus":
            return f"if (size := len({e_list(1)})) > {draw(st.integers(0, 4))}:\n    print('size', size)"
        if c == "match":
            return (f"match {e_int(1)}:\n    case 0:\n        print('zero')\n"
                    f"    case 1 | 2 | 3:\n        print('small')\n"
                    f"    case int(v) if v < 0:\n        print('negative', v)\n"
                    f"    case _:\n        print('other')")
        if c == "gen":
            name = env.fresh("gen")
            return (f"def {name}(limit):\n    for k in range(limit):\n        if k % 2:\n            yield k * k\n"
                    f"print(list({name}({draw(st.integers(0, 15))})), sum({name}(5)))")
        if c == "with":
            name = env.fresh("Ctx")
            return (f"class {name}:\n    def __enter__(self):\n        print('enter')\n        return self\n\n"
                    f"    def __exit__(self, kind, value, tb):\n        print('exit', kind is None)\n        return False\n\n"
                    f"with {name}() as ctx:\n    print({e_str(1)})")
        if c == "unpack":
            return f"head, *rest = {e_list(1)} + [0]\nprint(head, rest)\na, b = {e_int(1)}, {e_str(1)}\nprint(b, a)"
        if c == "lambda":
            return f"key = lambda w: (len(w), w)\nprint(sorted({e_strlist(1)}, key=key), max({e_strlist(1)}, key=key))"
        if c == "closure":
            name = env.fresh("counter")
            return (f"def {name}():\n    count = 0\n    def bump(step=1):\n        nonlocal count\n"
                    f"        count += step\n        return count\n    return bump\n"
                    f"tick = {name}()\ntick()\nprint(tick({draw(st.integers(1, 9))}))")
        if c == "dataclass":
            env.imports.add("dataclasses")
            name = env.fresh("Row")
            return (f"@dataclass\nclass {name}:\n    label: str\n    qty: int = 0\n    tags: list = field(default_factory=list)\n\n"
                    f"rows = [{name}({word()}, {e_int(0)}), {name}({word()})]\n"
                    f"rows.sort(key=lambda r: (r.qty, r.label))\nprint(rows)")
        if c == "enum":
            env.imports.add("enum")
            name = env.fresh("Level")
            return (f"class {name}(enum.Enum):\n    LOW = 1\n    HIGH = 2\n\n"
                    f"print({name}.LOW, {name}(2).name, [m.value for m in {name}])")
        if c == "module":
            mod = draw(st.sampled_from(["json", "re", "math", "itertools", "functools", "heapq",
                                        "fractions", "decimal", "random", "operator", "string"]))
            env.imports.add(mod)
            return {
                "json": f"print(json.dumps({e_dict(1)}, sort_keys=True))\nprint(json.loads('[1, 2.5, \"x\", null]'))",
                "re": f"print(re.findall(r'[a-z]+', {e_str(1)}), re.sub(r'\\d', '#', {e_str(1)}))",
                "math": f"print(math.gcd({e_int(1)}, {e_int(1)}), math.floor({e_float(1)}), math.pi)",
                "itertools": f"print(list(itertools.chain({e_list(1)}, {e_list(1)})), list(itertools.islice(itertools.count(3), 4)))",
                "functools": f"print(functools.reduce(lambda x, y: x * 2 + y, {e_list(1)}, 0))",
                "heapq": f"heap = {e_list(1)}\nheapq.heapify(heap)\nprint(heapq.nsmallest(2, heap))",
                "fractions": f"print(Fraction({e_int(1)}, {nonzero()}) + Fraction(1, 3))",
                "decimal": f"print(Decimal('{draw(st.integers(0, 999))}.{draw(st.integers(0, 99))}') * 3)",
                "random": f"rng = random.Random({draw(st.integers(0, 99))})\nprint(rng.randint(1, 100), rng.choice({e_strlist(1)}))",
                "operator": f"print(sorted({e_dict(1)}.items(), key=operator.itemgetter(1)))",
                "string": f"print(string.ascii_lowercase[:{draw(st.integers(0, 26))}], string.capwords({e_str(1)}))",
            }[mod]
        if c == "decorator":
            return ("def logged(fn):\n    def wrapper(*args, **kwargs):\n        print('call', fn.__name__, args)\n"
                    "        return fn(*args, **kwargs)\n    return wrapper\n\n"
                    f"@logged\ndef scaled(x, factor=2):\n    return x * factor\n\nprint(scaled({e_int(1)}, factor={draw(st.integers(-3, 3))}))")
        if c == "exc_chain":
            return ("class AppError(Exception):\n    pass\n\n"
                    f"try:\n    try:\n        {{}}[{word()}]\n    except KeyError as inner:\n"
                    "        raise AppError('lookup failed') from inner\n"
                    "except AppError as outer:\n    print(outer, type(outer.__cause__).__name__)")
        if c == "del_assert":
            return f"tmp = {e_list(1)}\ndel tmp[0]\nassert isinstance(tmp, list), 'list expected'\nprint(tmp)"
        if c == "dict_ops":
            name = env.fresh("table")
            code = (f"{name} = {e_dict(1)}\n{name}[{word()}] = {e_int(1)}\n"
                    f"{name}.setdefault({word()}, 0)\nfor key, val in sorted({name}.items()):\n"
                    f"    print(key, val)\nprint(len({name}), {word()} in {name})")
            env.vars["dict"].append(name)
            return code
        if c == "idiom":
            return _idiom(draw, lit_int, word, e_list, e_strlist, e_str, env)
        if c == "tool":
            name, params = draw(st.sampled_from(specs))
            n_positional = draw(st.integers(0, len(params)))
            args = []
            for index, (pname, kind, kwonly) in enumerate(params):
                value = expr(kind, 1)
                keyword_arg = kwonly or index >= n_positional
                args.append(f"{pname}={value}" if keyword_arg else value)
            res = env.fresh("res")
            env.vars["any"].append(res)
            return f"{res} = {name}({', '.join(args)})\nprint({res})"
        raise AssertionError(c)

    for _ in range(draw(st.integers(1, 8))):
        out.append(stmt())
    ending = final if final is not None else draw(st.sampled_from(["none", "expr", "final"]))
    if ending == "expr":
        kind = draw(st.sampled_from(kinds))
        out.append(expr(kind, 2))
    elif ending == "final":
        kind = draw(st.sampled_from(kinds))
        out.append(f"final_answer({expr(kind, 2)})")
    head = [_MODULE_IMPORTS[m] for m in sorted(env.imports)]
    return "\n".join(head + out) + "\n"


def _idiom(draw, lit_int, word, e_list, e_strlist, e_str, env: _Env) -> str:
    """Everyday idioms with generated values: the constructs a model reaches for."""
    k = draw(st.integers(1, 9))
    name = draw(st.sampled_from([
        "sets", "dict_merge", "divmod", "conversions", "chained", "slice_assign", "send",
        "yield_from", "global", "raise_from_none", "finally_return", "total_ordering", "lru_cache",
        "groupby", "defaultdict", "deque", "namedtuple", "translate", "textwrap", "datetime",
        "json_indent", "re_sub_fn", "dataclass_order", "enum_auto", "match_patterns",
        "property_setter", "dunder_container", "mro", "sorted_multi", "zip_enumerate",
        "walrus_comp", "format_builtin", "star_call", "nested_comp", "any_all", "str_methods",
        "int_bases", "round_half_even", "exception_args", "else_loops",
    ]))
    if name in {"groupby"}:
        env.imports.add("itertools")
    if name in {"total_ordering", "lru_cache"}:
        env.imports.add("functools")
    if name in {"defaultdict", "deque", "namedtuple"}:
        env.imports.add("collections")
    if name == "dataclass_order":
        env.imports.add("dataclasses")
    if name == "enum_auto":
        env.imports.add("enum")
    if name == "json_indent":
        env.imports.add("json")
    if name == "re_sub_fn":
        env.imports.add("re")
    return {
        "sets": lambda: f"a = set({e_list(1)})\nb = set({e_list(1)})\nprint(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a <= b)",
        "dict_merge": lambda: f"left = {{'a': {lit_int()}, 'b': 2}}\nright = {{'b': {lit_int()}, 'c': 3}}\nprint(left | right, {{**right, **left}})\nleft |= right\nprint(left)",
        "divmod": lambda: f"print(divmod({lit_int()}, {k}), divmod(-{k * 7}, {k}), {lit_int()} % -{k}, -{k * 5} // 3)",
        "conversions": lambda: f"print(bin({k * 37}), hex({lit_int()}), oct({k}), int('{k}{k}', {k + 6 if k + 6 <= 36 else 10}), float('1e{k}'), chr(65 + {k}))",
        "chained": lambda: f"v = {lit_int()}\nprint(-500 < v <= 500, 0 <= v < {k} < 10, v == v != v + 1)",
        "slice_assign": lambda: f"items = list(range(10))\nitems[1:{k}] = ['x', 'y']\ndel items[::3]\nitems[-1:] = []\nprint(items)",
        "send": lambda: "def acc():\n    total = 0\n    while True:\n        got = yield total\n        if got is None:\n            return total\n        total += got\n"
                f"g = acc()\nnext(g)\nfor v in {e_list(1)}:\n    print(g.send(v))",
        "yield_from": lambda: f"def inner(n):\n    yield from range(n)\n    return n * 10\ndef outer():\n    got = yield from inner({k})\n    yield got\nprint(list(outer()))",
        "global": lambda: f"count = 0\ndef bump():\n    global count\n    count += {k}\n    return count\nbump()\nprint(bump(), count)",
        "raise_from_none": lambda: "try:\n    try:\n        int('x')\n    except ValueError:\n        raise KeyError('k') from None\nexcept KeyError as e:\n    print(repr(e), e.__suppress_context__, e.__cause__)",
        "finally_return": lambda: f"def f():\n    try:\n        return {k}\n    finally:\n        print('cleanup')\nprint(f())",
        "total_ordering": lambda: f"@functools.total_ordering\nclass V:\n    def __init__(self, n):\n        self.n = n\n    def __eq__(self, o):\n        return self.n == o.n\n    def __lt__(self, o):\n        return self.n < o.n\n    def __repr__(self):\n        return f'V({{self.n}})'\nprint(sorted([V(x) for x in {e_list(1)}]), V(1) >= V({k}))",
        "lru_cache": lambda: f"@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib({k * 4}), fib.cache_info().hits > 0)",
        "groupby": lambda: f"data = sorted({e_strlist(1)} + {e_strlist(1)}, key=len)\nfor size, group in itertools.groupby(data, key=len):\n    print(size, list(group))",
        "defaultdict": lambda: f"groups = collections.defaultdict(list)\nfor w in {e_strlist(1)}:\n    groups[len(w)].append(w)\nprint(dict(groups), groups[99])",
        "deque": lambda: f"q = collections.deque({e_list(1)}, maxlen={k})\nq.appendleft(0)\nq.rotate(1)\nprint(q, q.pop(), len(q))",
        "namedtuple": lambda: f"Pt = collections.namedtuple('Pt', 'x y')\np = Pt({lit_int()}, y={lit_int()})\nprint(p, p._replace(x=0), p._asdict(), p.x + p.y)",
        "translate": lambda: f"table = str.maketrans('aeiou', '12345', 'xyz')\nprint({e_str(1)}.translate(table))",
        "textwrap": lambda: f"import textwrap\nprint(textwrap.fill({e_str(1)} * {k}, width={k + 10}))\nprint(textwrap.shorten('hello world ' * {k}, width=20))",
        "datetime": lambda: f"import datetime\nd = datetime.date(2024, {k}, {k + 10}) + datetime.timedelta(days={lit_int()})\nprint(d, d.isoformat(), d.weekday(), d.strftime('%Y/%m/%d %A'))",
        "json_indent": lambda: f"print(json.dumps({{'k': {e_list(1)}, 'n': None, 't': True}}, indent={k % 4}, sort_keys=True))",
        "re_sub_fn": lambda: f"print(re.sub(r'\\d+', lambda m: str(int(m.group()) * 2), 'a1 b22 c{k}'), re.split(r'[,;]\\s*', 'x, y;z'))",
        "dataclass_order": lambda: f"@dataclass(order=True, frozen=True)\nclass Card:\n    rank: int\n    suit: str = 'h'\ncards = sorted([Card({lit_int()}), Card({k}, 's'), Card({k})])\nprint(cards, cards[0] < cards[-1], hash(Card(1)) == hash(Card(1)))",
        "enum_auto": lambda: "class Color(enum.Enum):\n    RED = enum.auto()\n    GREEN = enum.auto()\nprint(list(Color), Color(2), Color['RED'].value, Color.RED is Color(1), repr(Color.GREEN))",
        "match_patterns": lambda: f"for item in [{lit_int()}, 'text', [1, 2, 3], {{'kind': 'pt', 'x': {k}}}, (1, 'a'), None]:\n    match item:\n        case int() if item > 0:\n            print('pos', item)\n        case str() as s:\n            print('str', s)\n        case [first, *rest]:\n            print('seq', first, rest)\n        case {{'kind': 'pt', 'x': x}}:\n            print('pt', x)\n        case None:\n            print('none')\n        case _:\n            print('other', item)",
        "property_setter": lambda: f"class Temp:\n    def __init__(self):\n        self._c = 0\n    @property\n    def c(self):\n        return self._c\n    @c.setter\n    def c(self, v):\n        if v < -273:\n            raise ValueError('too cold')\n        self._c = v\nt = Temp()\nt.c = {lit_int()}\nprint(t.c)",
        "dunder_container": lambda: f"class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n    def __len__(self):\n        return len(self.items)\n    def __getitem__(self, i):\n        return self.items[i]\n    def __contains__(self, x):\n        return x in self.items\n    def __call__(self, n):\n        return self.items[:n]\nb = Bag({e_list(1)})\nprint(len(b), b[0], {k} in b, b({k}), list(b), sorted(b))",
        "mro": lambda: "class A:\n    def who(self):\n        return 'A'\nclass B(A):\n    def who(self):\n        return 'B' + super().who()\nclass C(A):\n    def who(self):\n        return 'C' + super().who()\nclass D(B, C):\n    def who(self):\n        return 'D' + super().who()\nprint(D().who(), [k.__name__ for k in D.__mro__], isinstance(D(), A), issubclass(D, (C, int)))",
        "sorted_multi": lambda: f"rows = [{{'n': {word()}, 'v': {lit_int()}}}, {{'n': {word()}, 'v': {lit_int()}}}, {{'n': 'z', 'v': {k}}}]\nprint(sorted(rows, key=lambda r: (-r['v'], r['n'])), max(rows, key=lambda r: r['v'])['n'])",
        "zip_enumerate": lambda: f"for i, (a, b) in enumerate(zip({e_list(1)}, {e_strlist(1)}), start={k}):\n    print(i, a, b)\nprint(list(zip(*[(1, 'a'), (2, 'b')])))",
        "walrus_comp": lambda: f"vals = [y for x in {e_list(1)} if (y := x * 2) > {lit_int()}]\nprint(vals)",
        "format_builtin": lambda: f"print(format({lit_int()}, '>+8,'), format(3.14159, '.{k % 5}f'), format('s', '^5'), '{{:08.3f}}'.format({k}/7), '{{0!r:>12}}'.format('q'))",
        "star_call": lambda: f"def f(a, b=2, *args, c, d=4, **kw):\n    return (a, b, args, c, d, sorted(kw.items()))\nprint(f(1, c={k}), f(*[1, 2, 3], c=0, **{{'e': 5}}), f(1, 2, 3, 4, c=1, d=0, z=9))",
        "nested_comp": lambda: f"m = [[i * j for j in range({k % 5 + 1})] for i in range(3)]\nprint(m, [x for row in m for x in row if x], {{i: [c for c in w] for i, w in enumerate({e_strlist(1)})}})",
        "any_all": lambda: f"vals = {e_list(1)}\nprint(any(v > {lit_int()} for v in vals), all(v % 2 == 0 for v in vals), sum(1 for v in vals if v < 0))",
        "str_methods": lambda: f"t = {e_str(1)}\nprint(t.isdigit(), t.isalpha(), t.casefold(), t.removeprefix('a'), t.splitlines(), t.rjust(8, '_'), t.expandtabs(2), t.count(''), t.rsplit(' ', 1))",
        "int_bases": lambda: f"print(int('ff', 16), int('0b101', 0), int('  {k}  '), (255).to_bytes(2, 'big'), int.from_bytes(b'\\x01\\x00', 'little'), (2 ** {k * 7}).bit_length())",
        "round_half_even": lambda: f"print(round(0.5), round(1.5), round(2.5), round(-{k}.5), round({k}.125, 2), round({lit_int()}, -1))",
        "exception_args": lambda: f"try:\n    raise ValueError('bad', {k})\nexcept ValueError as e:\n    print(e.args, str(e), repr(e))\ntry:\n    {{}}['missing']\nexcept KeyError as e:\n    print(repr(e), e.args)",
        "else_loops": lambda: f"for n in range(2, {k + 12}):\n    for d in range(2, n):\n        if n % d == 0:\n            break\n    else:\n        print('prime', n)\nwhile False:\n    pass\nelse:\n    print('while-else')",
    }[name]()


@st.composite
def _data_programs(draw, tools, final):
    return _data_program(draw, tools, final)


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
) -> st.SearchStrategy[str]:
    """Strategy for Python source code (str) that compiles under CPython.

    mode="data": programs of the kind models write for data work (assignments, loops,
    comprehensions, functions, classes, string/number/collection operations, authorized imports,
    and calls of `tools` with arguments generated from their annotations), deterministic and
    bounded so that most run to completion identically under CPython and a correct executor.
    mode="grammar": grammar-level programs from `hypothesmith` (slow: ~0.5–3 s each), filtered by
    `compile()`. mode="all": either. `ending` forces the last statement: "none", "expr" (a
    last expression whose value is the output) or "final" (a `final_answer(...)` call).

        @given(programs(tools={"add": add}))
        def test_cpython_equal(code): ...
    """
    if mode == "data":
        return _data_programs(dict(tools or {}), ending)
    if mode == "grammar":
        try:
            import hypothesmith
        except ImportError as exc:  # pragma: no cover
            raise ImportError("programs(mode='grammar') needs hypothesmith: pip install hypothesmith") from exc
        return st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()).filter(_compiles)
    if mode == "all":
        return st.one_of(programs(tools, "data", ending=ending), programs(tools, "grammar"))
    raise ValueError(f"programs(mode=...) must be 'data', 'grammar' or 'all', got {mode!r}")


# --------------------------------------------------------------------------------------------
# escape_attempts()
# --------------------------------------------------------------------------------------------

# Modules whose reach is the escape: seen as an attribute of an allowed module, they are pivots.
_POWER_MODULES = ("os", "posix", "sys", "builtins", "subprocess", "io", "_io", "shutil",
                  "importlib", "pathlib", "codecs", "ctypes")

# The preamble of every attempt: `power(h)` takes whatever the primitive produced (module,
# dict of globals, function, class, frame, traceback) and follows it to the effect. It uses only
# public names and computed strings, so a policy that refuses it refuses it for a real reason.
_PREAMBLE = '''\
MARKER = {marker!r}
CANARY = {canary!r}
TOKEN = {token!r}
seen = []
KEYS = ['os', '_os', 'sys', '_sys', 'posix', 'builtins', '_'+'_builtins_'+'_', 'open', 'environ',
        'subprocess', 'importlib', 'io', '_io', 'shutil', 'pathlib', 'codecs', '_'+'_import_'+'_',
        'getpid', 'x', 'a', 'index']
ATTRS = ['os', '_os', 'sys', '_sys', 'builtins', 'posix', '_'+'_builtins_'+'_',
         'f_globals', 'f_builtins', 'f_locals', 'f_back', 'tb_frame', 'tb_next', 'gi_frame',
         'cr_frame', 'ag_frame', '_'+'_globals_'+'_', '_'+'_init_'+'_', '_'+'_self_'+'_',
         '_'+'_func_'+'_', '_'+'_wrapped_'+'_', 'func', '_'+'_call_'+'_', 'modules']


def get(obj, name):
    try:
        return getattr(obj, name, None)
    except BaseException:
        return None


def pick(seq, name):
    for item in seq:
        if get(item, '_'+'_name_'+'_') == name:
            return item


def power(h, depth=0):
    if h is None or depth > 7:
        return
    for s in seen:
        if s is h:
            return
    seen.append(h)
    if isinstance(h, dict):
        for key in KEYS:
            if key in h:
                try:
                    power(h[key], depth + 1)
                except Exception:
                    pass
        return
    if isinstance(h, (list, tuple)):
        for item in h[:20]:
            power(item, depth + 1)
        return
{effect}
    for name in ATTRS:
        try:
            power(get(h, name), depth + 1)
        except Exception:
            pass
    imp = get(h, '_'+'_import_'+'_')
    if get(h, '_'+'_name_'+'_') == '_'+'_import_'+'_':
        imp = h
    if callable(imp):
        try:
            power(imp('os'), depth + 1)
        except Exception:
            pass
'''

_EFFECTS = {
    "canary": '''\
    env = get(h, 'environ')
    if env is not None:
        for key in (CANARY, CANARY.encode()):
            try:
                print('canary:', env[key])
            except Exception:
                pass
    if get(h, 'copy') is not None and get(h, 'putenv') is not None or get(h, 'encodekey') is not None:
        env = h  # the environ mapping itself
        for key in (CANARY, CANARY.encode()):
            try:
                print('canary:', env[key])
            except Exception:
                pass
    getenv = get(h, 'getenv')
    if callable(getenv):
        try:
            print('canary:', getenv(CANARY))
        except Exception:
            pass''',
    "marker": '''\
    for name in ('mkdir', 'touch'):
        fn = get(h, name)
        if callable(fn):
            try:
                fn(MARKER) if name == 'mkdir' else fn()
            except Exception:
                pass
    opener = get(h, 'open')
    if callable(h) and get(h, '_'+'_name_'+'_') == 'open':
        opener = h
    if callable(opener):
        try:
            opener(MARKER, 'w').write('escaped')
        except Exception:
            pass
    runner = get(h, 'run')
    if callable(runner):
        try:
            runner(['touch', MARKER])
        except Exception:
            pass''',
    "reach": '''\
    pid = get(h, 'getpid')
    if callable(h) and get(h, '_'+'_name_'+'_') == 'getpid':
        pid = h
    if callable(pid):
        try:
            print(TOKEN, pid())
        except Exception:
            pass''',
}

_EFFECTS["tamper"] = "    pass"

_FULLWIDTH = {c: chr(ord(c) - 0x21 + 0xFF01) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def _fullwidth(name: str) -> str:
    return "".join(_FULLWIDTH.get(c, c) for c in name)


def _encode_string(draw, text: str, style: str, setup: set[str]) -> str:
    """A Python expression that evaluates to `text`, built so that `text` never appears literally."""
    if style == "literal" or len(text) < 2:
        return repr(text)
    cut = draw(st.integers(1, len(text) - 1))
    if style == "concat":
        return f"{text[:cut]!r} + {text[cut:]!r}"
    if style == "join":
        return f"''.join({[text[:cut], text[cut:]]!r})"
    if style == "chr":
        return f"''.join(map(chr, {[ord(c) for c in text]!r}))"
    if style == "reversed":
        return draw(st.sampled_from([f"{text[::-1]!r}[::-1]", f"''.join(reversed({text[::-1]!r}))"]))
    if style == "bytes":
        return f"bytes({[ord(c) for c in text]!r}).decode()"
    if style == "format":
        return f"'{{}}{{}}'.format({text[:cut]!r}, {text[cut:]!r})"
    if style == "percent":
        return f"'%s%s' % ({text[:cut]!r}, {text[cut:]!r})"
    if style == "replace":
        return f"{text.replace('_', '#')!r}.replace('#', '_')"
    if style == "case":
        return f"{text.upper()!r}.lower()" if text == text.lower() else repr(text)
    if style == "nfkc":
        setup.add("import unicodedata")
        wide = "".join("\uff3f" if c == "_" else _FULLWIDTH.get(c, c) for c in text)
        return f"unicodedata.normalize('NFKC', {wide!r})"
    raise AssertionError(style)


_STRING_STYLES = ("literal", "concat", "join", "chr", "reversed", "bytes", "format", "percent",
                  "replace", "case", "nfkc")
_ATTR_STYLES = ("literal", "literal", "fullwidth", "getattr", "getattr", "getattr_default",
                "attrgetter", "reduce", "map", "getattribute", "methodcaller", "partial")


class _Renderer:
    """Renders a chain of steps with one attribute style and one string style."""

    def __init__(self, draw, attr_style: str, string_style: str) -> None:
        self.draw, self.attr_style, self.string_style = draw, attr_style, string_style
        self.setup: set[str] = set()

    def s(self, text: str) -> str:
        return _encode_string(self.draw, text, self.string_style, self.setup)

    def attr(self, x: str, name: str) -> str:
        style = self.attr_style
        if style == "literal" and name.isidentifier():
            return f"{x}.{name}"
        if style == "fullwidth" and name.isidentifier():
            return f"{x}.{_fullwidth(name)}"
        if style == "attrgetter":
            self.setup.add("import operator")
            return f"operator.attrgetter({self.s(name)})({x})"
        if style == "reduce":
            self.setup.add("import functools")
            return f"functools.reduce(getattr, [{self.s(name)}], {x})"
        if style == "map":
            return f"next(map(getattr, [{x}], [{self.s(name)}]))"
        if style == "getattribute":
            return f"object.__getattribute__({x}, {self.s(name)})"
        if style == "methodcaller":
            self.setup.add("import operator")
            return f"operator.methodcaller({self.s('__getattribute__')}, {self.s(name)})({x})"
        if style == "partial":
            self.setup.add("import functools")
            return f"functools.partial(getattr, {x})({self.s(name)})"
        if style == "getattr_default":
            return f"getattr({x}, {self.s(name)}, None)"
        return f"getattr({x}, {self.s(name)})"

    def chain(self, root: str, steps: Iterable[tuple[str, Any]]) -> str:
        x = root
        for kind, arg in steps:
            if kind == "attr":
                x = self.attr(x, arg)
            elif kind == "item":
                x = f"{x}[{self.s(arg) if isinstance(arg, str) else arg!r}]"
            elif kind == "call":
                x = f"{x}({arg})"
            elif kind == "pick":
                x = f"pick({x}, {self.s(arg)})"
            else:  # pragma: no cover
                raise AssertionError(kind)
        return x


_PIVOT_CACHE: dict[tuple[str, ...], list[tuple[str, list[str], str]]] = {}


def _module_pivots(authorized: tuple[str, ...]) -> list[tuple[str, list[str], str]]:
    """(module, attribute path, target) for attribute paths (≤ 3 steps) from an authorized module
    to a powerful module — e.g. ("random", ["_os"], "os"), ("re", ["enum", "sys"], "sys") —
    plus the globals of a Python function of the module: found on this interpreter."""
    if authorized in _PIVOT_CACHE:
        return _PIVOT_CACHE[authorized]
    found: list[tuple[str, list[str], str]] = []
    for modname in authorized:
        if modname.endswith(".*"):
            modname = modname[:-2]
        try:
            root = importlib.import_module(modname)
        except Exception:
            continue
        frontier: list[tuple[Any, list[str]]] = [(root, [])]
        for _ in range(3):
            nxt = []
            for obj, path in frontier:
                for name, value in sorted(vars(obj).items()) if isinstance(obj, types.ModuleType) else []:
                    if not isinstance(value, types.ModuleType) or len(found) > 400:
                        continue
                    short = value.__name__
                    if short in _POWER_MODULES:
                        found.append((modname, path + [name], short))
                    elif len(path) < 2 and not short.startswith("encodings"):
                        nxt.append((value, path + [name]))
            frontier = nxt[:30]
        for name, value in sorted(vars(root).items()):
            if isinstance(value, types.FunctionType) and not name.startswith("_"):
                found.append((modname, [name, "__globals__"], "globals"))
                break
    _PIVOT_CACHE[authorized] = found
    return found


_TOOL_CHAINS: dict[str, list[list[tuple[str, Any]]]] = {}


def _tool_chains(obj: Any) -> list[list[tuple[str, Any]]]:
    """Attribute chains that lead out of this particular tool object if the executor handed the
    object itself to model code (tailored to its shape: function, partial, method, object)."""
    import functools

    chains: list[list[tuple[str, Any]]] = []
    target = getattr(obj, "forward", None)
    if target is not None:
        chains.append([("attr", "forward"), ("attr", "__globals__")])
        chains.append([("attr", "forward"), ("attr", "__func__"), ("attr", "__globals__")])
    if isinstance(obj, types.FunctionType):
        chains.append([("attr", "__globals__")])
        if obj.__closure__:
            chains += [[("attr", "__closure__"), ("item", i), ("attr", "cell_contents")] for i in range(len(obj.__closure__))]
        if hasattr(obj, "__wrapped__"):
            chains.append([("attr", "__wrapped__"), ("attr", "__globals__")])
    elif isinstance(obj, functools.partial):
        chains += [[("attr", "func"), ("attr", "__globals__")], [("attr", "keywords")], [("attr", "args")]]
    elif isinstance(obj, types.MethodType):
        chains += [[("attr", "__self__")], [("attr", "__func__"), ("attr", "__globals__")]]
        chains += [[("attr", "__self__"), ("attr", k)] for k in vars(obj.__self__) if not k.startswith("_")][:5] if hasattr(obj.__self__, "__dict__") else []
    else:
        chains += [[("attr", "__call__"), ("attr", "__func__"), ("attr", "__globals__")], [("attr", "__dict__")],
                   [("attr", "__class__"), ("attr", "__init__"), ("attr", "__globals__")]]
        if hasattr(obj, "__dict__"):
            chains += [[("attr", k)] for k in vars(obj) if not k.startswith("_")][:5]
    return chains or [[("attr", "__globals__")]]


_SUBCLASS_TARGETS = ["_wrap_close", "catch_warnings", "_Printer", "Quitter", "Random",
                     "_Helper", "WarningMessage", "FileLoader", "Popen"]
_DUNDER_ROOTS = ["()", "''", "[]", "0", "{}", "1.5", "b''"]


def _source(draw, r: _Renderer, family: str, tools: list[str], authorized: tuple[str, ...]):
    """(setup statements, expression) for one primitive of `family`, rendered with r."""
    if family == "dunder_walk":
        root = draw(st.sampled_from(_DUNDER_ROOTS))
        base = draw(st.sampled_from([
            [("attr", "__class__"), ("attr", "__base__")],
            [("attr", "__class__"), ("attr", "__mro__"), ("item", -1)],
            [("attr", "__class__"), ("attr", "__bases__"), ("item", 0)],
        ]))
        if root == "1.5" or root == "0":
            root = f"({root})"
        subs = r.chain(root, base + [("attr", "__subclasses__"), ("call", "")])
        variant = draw(st.sampled_from(["pick", "pick", "reduce", "self"]))
        if variant == "pick":
            target = draw(st.sampled_from(_SUBCLASS_TARGETS))
            return set(), r.chain(subs, [("pick", target), ("attr", "__init__"), ("attr", "__globals__")])
        if variant == "reduce":
            return set(), r.chain("()", [("attr", "__reduce_ex__"), ("call", "2"), ("item", 0),
                                         ("attr", "__globals__")])
        return set(), r.chain(draw(st.sampled_from(["print", "len", "abs", "getattr", "max"])),
                              [("attr", "__self__")])
    if family == "module_pivot":
        pivots = _module_pivots(authorized)
        if not pivots:
            return {"import random"}, r.chain("random", [("attr", "_os")])
        mod, path, _target = draw(st.sampled_from(pivots))
        setup = {f"import {mod}"}
        top = mod.split(".")[0]
        expr = mod if "." not in mod else top + "".join(f".{p}" for p in mod.split(".")[1:])
        return setup, r.chain(expr, [("attr", p) for p in path])
    if family == "frames":
        kind = draw(st.sampled_from(["gen_running", "gen", "coroutine", "asyncgen", "traceback",
                                     "traceback_tool", "context"]))
        if kind == "gen_running":
            setup = {("def frame_probe():\n"
                      "    def inner():\n"
                      f"        yield {r.chain('me[0]', [('attr', 'gi_frame'), ('attr', 'f_back')])}\n"
                      "    me = [inner()]\n"
                      "    return next(me[0])")}
            return setup, "frame_probe()"
        if kind == "gen":
            return set(), r.chain("(v for v in [1])", [("attr", "gi_frame"), ("attr", "f_globals")])
        if kind == "coroutine":
            setup = {"async def coro_probe():\n    return 1"}
            return setup, r.chain("coro_probe()", [("attr", "cr_frame")])
        if kind == "asyncgen":
            setup = {"async def agen_probe():\n    yield 1"}
            return setup, r.chain("agen_probe()", [("attr", "ag_frame")])
        trigger = {
            "traceback": draw(st.sampled_from(["1 / 0", "[][1]", "int('x')", "{}['k']"])),
            "traceback_tool": (f"{draw(st.sampled_from(tools))}(None, None, None)" if tools else "1 / 0"),
            "context": "1 / 0",
        }[kind]
        setup = {("def tb_probe():\n"
                  "    try:\n"
                  f"        {trigger}\n"
                  "    except BaseException as exc:\n"
                  f"        return exc")}
        steps = [("attr", "__traceback__")]
        steps += draw(st.sampled_from([[("attr", "tb_frame")], [("attr", "tb_next")],
                                       [("attr", "tb_frame"), ("attr", "f_back")], []]))
        if kind == "context":
            steps = [("attr", "__context__")] + steps
        return setup, r.chain("tb_probe()", steps)
    if family == "builtins":
        return set(), draw(st.sampled_from([
            "globals()", "vars()", "locals()", "__builtins__", "__import__('os')",
            "eval(" + r.s("__import__('os')") + ")", "__loader__", "__spec__",
            r.chain("print", [("attr", "__self__")]),
            r.chain("type", [("attr", "__dict__")]),
            "[m for m in ().__class__.__base__.__subclasses__() if 'Importer' in m.__name__][0].load_module('os')",
        ]))
    if family == "tool_internals":
        name = draw(st.sampled_from(tools + ["final_answer", "print"]))
        tailored = _TOOL_CHAINS.get(name)
        if tailored and draw(st.integers(0, 9)) < 7:
            return set(), r.chain(name, draw(st.sampled_from(tailored)))
        steps = draw(st.sampled_from([
            [("attr", "__globals__")],
            [("attr", "__closure__"), ("item", 0), ("attr", "cell_contents")],
            [("attr", "func"), ("attr", "__globals__")],
            [("attr", "func")],
            [("attr", "keywords")],
            [("attr", "args")],
            [("attr", "__self__")],
            [("attr", "__func__"), ("attr", "__globals__")],
            [("attr", "__wrapped__"), ("attr", "__globals__")],
            [("attr", "__call__"), ("attr", "__globals__")],
            [("attr", "__call__"), ("attr", "__func__"), ("attr", "__globals__")],
            [("attr", "__dict__")],
            [("attr", "backend")],
            [("attr", "forward"), ("attr", "__globals__")],
            [("attr", "__class__"), ("attr", "__init__"), ("attr", "__globals__")],
            [("attr", "__code__"), ("attr", "co_consts")],
        ]))
        return set(), r.chain(name, steps)
    if family == "refused_import":
        return draw(st.sampled_from([
            ({"import os"}, "os"), ({"import os as system_tools"}, "system_tools"),
            ({"import os.path"}, "os.path"), ({"from os import path"}, "path"),
            ({"import sys"}, "sys"), ({"import builtins"}, "builtins"), ({"import posix"}, "posix"),
            ({"import subprocess"}, "subprocess"), ({"import importlib"}, "importlib.import_module('os')"),
            ({"import io"}, "io"), ({"import _io"}, "_io"), ({"import codecs"}, "codecs"),
            ({"import pathlib"}, "pathlib.Path(MARKER)"), ({"import shutil"}, "shutil"),
            ({"import logging"}, "logging"), ({"import tempfile"}, "tempfile"),
            ({"import inspect"}, "inspect.currentframe()"), ({"import linecache"}, "linecache"),
            ({"import platform"}, "platform"), ({"import glob"}, "glob"),
            ({"import ctypes"}, "ctypes"), ({"import types"}, "types"),
            ({"from io import FileIO"}, "FileIO"), ({"import json.decoder"}, "json.decoder"),
        ]))
    if family == "stdlib_eval":
        # Library code that compiles or evaluates strings itself, outside any AST transform.
        text = draw(st.sampled_from(["().__class__.__base__.__subclasses__()", "__import__('os')",
                                     "print.__self__", "globals()"]))
        return draw(st.sampled_from([
            ({"import typing", f"def annotated(x: {text!r}):\n    return x"},
             "list(typing.get_type_hints(annotated).values())"),
            ({"import typing"}, f"list(typing.get_type_hints(type('A', (), {{'__annotations__': {{'x': {text!r}}}}})).values())"),
            ({"import typing"}, f"typing.ForwardRef({text!r})._evaluate(globals(), None, frozenset())"),
            ({"import typing"}, f"typing.get_type_hints(type('A', (), {{'__annotations__': {{'x': typing.List[{text!r}]}}}}))"),
            ({"import functools", f"def target(a: {text!r}):\n    return a"},
             "functools.singledispatch(lambda a: a).register(target)"),
            ({"import collections"}, f"collections.namedtuple('P', ['a'], defaults=[{text!r}])"),
            ({"import dataclasses"}, f"dataclasses.make_dataclass('D', [('x', {text!r})])"),
        ]))
    raise AssertionError(family)


def _direct(draw, effect: str, r: _Renderer) -> tuple[str, str]:
    """Attempts that do their effect in one statement (family, code)."""
    if effect == "marker":
        return draw(st.sampled_from([
            ("builtins", "open(MARKER, 'w').write('escaped')"),
            ("builtins", f"{_fullwidth('open')}(MARKER, 'w').write('escaped')"),
            ("builtins", "exec(" + r.s("open(MARKER, 'w').write('escaped')") + ")"),
            ("refused_import", "import io\nio.open(MARKER, 'w').write('escaped')"),
            ("refused_import", "import io\nio.FileIO(MARKER, 'w').write(b'escaped')"),
            ("refused_import", "import pathlib\npathlib.Path(MARKER).write_text('escaped')"),
            ("refused_import", "import os\nos.mkdir(MARKER)"),
            ("refused_import", "import pickle\ngetattr(pickle, 'loads')(b'cos\\nmkdir\\n(Vmarker\\ntR.'.replace(b'marker', MARKER.encode()))"),
            ("builtins", "__import__('os').mkdir(MARKER)"),
            ("builtins", f"{_fullwidth('exec')}('import os; os.mkdir(MARKER)')"),
        ]))
    if effect == "canary":
        return draw(st.sampled_from([
            ("refused_import", "import os\nprint(os.environ.get(CANARY))"),
            ("refused_import", "from os import environ\nprint(environ[CANARY])"),
            ("refused_import", "from os import getenv\nprint(getenv(CANARY))"),
            ("builtins", "print(__import__('os').environ[CANARY])"),
            ("builtins", "print(eval(" + r.s("__import__('os').getenv(CANARY)") + "))"),
            ("format_string", "import random\nprint('{0._os.environ}'.format(random))"),
            ("format_string", "import random\nprint('{x._os.environ[%s]}'.format_map({'x': random}) %% CANARY)".replace("%%", "%")),
            ("format_string", "import string, random\nprint(string.Formatter().format('{0._os.environ}', random))"),
            ("refused_import", "import posix\nprint(posix.environ)"),
        ]))
    return draw(st.sampled_from([
        ("refused_import", "import os\nprint(TOKEN, os.getpid())"),
        ("builtins", "print(TOKEN, __import__('os').getpid())"),
        ("builtins", "exec(" + r.s("import os; print(TOKEN, os.getpid())") + ")"),
        ("refused_import", "from os import getpid\nprint(TOKEN, getpid())"),
        ("refused_import", "import sys\nprint(TOKEN, sys.modules['os'].getpid())"),
    ]))


def _format_attempt(draw, tools: list[str], authorized: tuple[str, ...]) -> tuple[set[str], str]:
    """str.format-family traversal: prints an environ (canary) or extracts an object to power()."""
    options: list[tuple[set[str], str, str]] = []
    for mod, path, target in _module_pivots(authorized):
        if target == "os":
            options.append(({f"import {mod}"}, mod, "." + ".".join(path) + ".environ"))
        elif target == "sys":
            options.append(({f"import {mod}"}, mod, "." + ".".join(path) + ".modules[os].environ"))
    for name in tools:
        options.append((set(), name, ".__globals__[os].environ"))
        options.append((set(), name, ".func.__globals__[os].environ"))
        options.append((set(), name, ".__self__.__class__.__init__.__globals__[os].environ"))
    options.append(({"import random"}, "random", ".Random.__init__.__globals__[_os].environ"))
    options.append((set(), "final_answer", ".__globals__[sys].modules[os].environ"))
    options.append((set(), "print", ".__globals__[sys].modules[os].environ"))
    setup, root, field = draw(st.sampled_from(options))
    how = draw(st.sampled_from(["format", "format_map", "formatter", "get_field"]))
    if how == "format":
        return setup, f"print('{{0{field}}}'.format({root}))"
    if how == "format_map":
        return setup, f"print('{{x{field}}}'.format_map({{'x': {root}}}))"
    setup = setup | {"import string"}
    if how == "formatter":
        return setup, f"print(string.Formatter().format('{{0{field}}}', {root}))"
    return setup, f"power(string.Formatter().get_field('0{field}', [{root}], {{}})[0])"


_CARRIERS = ("plain", "try", "function", "lambda", "comprehension", "class_body", "method",
             "init_subclass", "metaclass", "del", "del_later", "decorator", "generator",
             "repr_hook", "str_hook", "default_arg", "exception_str", "coroutine", "getattr_hook",
             "format_hook", "eq_hook")


def _carry(carrier: str, stmt: str, expr_ok: str | None) -> str:
    """Place `stmt` (one or more lines) inside the carrier; expr_ok is an expression form if any."""
    def ind(block: str, n: int) -> str:
        return _lines(block, " " * n)

    if carrier == "plain":
        return stmt
    if carrier == "try":
        return f"try:\n{ind(stmt, 4)}\nexcept Exception as exc:\n    print('refused', type(exc).__name__)"
    if carrier == "function":
        return f"def attempt():\n{ind(stmt, 4)}\n\nattempt()"
    if carrier == "lambda" and expr_ok:
        return f"(lambda: {expr_ok})()"
    if carrier == "comprehension" and expr_ok:
        return f"[{expr_ok} for _ in range(1)]"
    if carrier == "class_body":
        return f"class Holder:\n{ind(stmt, 4)}"
    if carrier == "method":
        return f"class Holder:\n    def run(self):\n{ind(stmt, 8)}\n\nHolder().run()"
    if carrier == "init_subclass":
        return (f"class Base:\n    def __init_subclass__(cls, **kwargs):\n{ind(stmt, 8)}\n\n"
                f"class Child(Base):\n    pass")
    if carrier == "metaclass":
        return (f"class Meta(type):\n    def __new__(mcs, name, bases, ns):\n{ind(stmt, 8)}\n"
                f"        return super().__new__(mcs, name, bases, ns)\n\n"
                f"class Made(metaclass=Meta):\n    pass")
    if carrier == "del":
        return f"class Finalizer:\n    def __del__(self):\n{ind(stmt, 8)}\n\nf = Finalizer()\ndel f"
    if carrier == "del_later":
        return f"class Finalizer:\n    def __del__(self):\n{ind(stmt, 8)}\n\nkeep = Finalizer()\ncycle = [keep]\ncycle.append(cycle)"
    if carrier == "decorator":
        return f"def deco(fn):\n{ind(stmt, 4)}\n    return fn\n\n@deco\ndef decorated():\n    pass"
    if carrier == "generator":
        return f"def gen():\n{ind(stmt, 4)}\n    yield 1\n\nlist(gen())"
    if carrier == "repr_hook":
        return f"class Shown:\n    def __repr__(self):\n{ind(stmt, 8)}\n        return 'shown'\n\nShown()"
    if carrier == "str_hook":
        return f"class Answer:\n    def __str__(self):\n{ind(stmt, 8)}\n        return 'answer'\n\n    def __repr__(self):\n        return str(self)\n\nfinal_answer(Answer())"
    if carrier == "eq_hook":
        return (f"class Sly:\n    def __eq__(self, other):\n{ind(stmt, 8)}\n        return True\n\n"
                f"    def __hash__(self):\n        return 1\n\nfinal_answer(Sly())")
    if carrier == "default_arg" and expr_ok:
        return f"def defaults(x={expr_ok}):\n    return x\n\ndefaults()"
    if carrier == "exception_str":
        return f"class Loud(Exception):\n    def __str__(self):\n{ind(stmt, 8)}\n        return 'loud'\n\nraise Loud()"
    if carrier == "coroutine":
        return (f"async def co():\n{ind(stmt, 4)}\n\nc = co()\ntry:\n    c.send(None)\n"
                f"except StopIteration:\n    pass")
    if carrier == "getattr_hook":
        return f"class Lazy:\n    def __getattr__(self, name):\n{ind(stmt, 8)}\n        return 1\n\nLazy().anything"
    if carrier == "format_hook":
        return f"class Fmt:\n    def __format__(self, spec):\n{ind(stmt, 8)}\n        return 'fmt'\n\nprint(f'{{Fmt():>3}}')"
    return stmt  # carriers that need an expression fall back to plain


_FAMILIES = ("dunder_walk", "module_pivot", "frames", "builtins", "tool_internals",
             "refused_import", "format_string", "direct", "stdlib_eval")

# Process-wide state of the host that model code of an in-process executor could change.
_TAMPER_PROCESS = [
    ("import csv", "csv.field_size_limit(1)"),
    ("import csv", "csv.register_dialect('excel', delimiter=';')"),
    ("import csv", "csv.unregister_dialect('excel')"),
    ("import decimal", "decimal.getcontext().prec = 2"),
    ("import decimal", "decimal.DefaultContext.prec = 2"),
    ("import decimal", "decimal.setcontext(decimal.Context(prec=2))"),
    ("import decimal", "decimal.getcontext().traps[decimal.Inexact] = True"),
    ("import fractions", "fractions.Fraction.limit_denominator = lambda self, m=0: 0"),
    ("import collections", "collections.Counter.most_common = lambda self, n=None: []"),
    ("import json", "json.JSONEncoder.default = lambda self, o: 'tampered'"),
    ("import string", "string.Template.delimiter = '#'"),
    ("import textwrap", "textwrap.TextWrapper.width = 1"),
    ("import enum", "enum.Enum.name = 'tampered'"),
    ("import json", "json.dumps = print"),
    ("import math", "math.pi = 3"),
    ("import string", "string.ascii_letters = ''"),
    ("import json", "del json.dumps"),
    ("import statistics", "statistics.mean = len"),
    ("import functools", "functools.WRAPPER_ASSIGNMENTS = ()"),
    ("import dataclasses", "dataclasses.MISSING = None"),
    ("import copy", "copy.deepcopy = copy.copy"),
    ("import re", "re.IGNORECASE = 0"),
]
_TAMPER_TOOL = [
    "{t}.__defaults__ = (1, 1)",
    "{t}.__kwdefaults__ = {{'index': None}}",
    "{t}.keywords['index'] = None",
    "{t}.keywords.clear()",
    "{t}.backend = None",
    "{t}.__self__.backend = None",
    "{t}.__dict__['tampered'] = 1",
    "{t}.tampered = 1",
    "{t}.func.__defaults__ = (None,)",
    "{t}.__wrapped__ = None",
]


def _tamper(draw, r: _Renderer, tools: list[str]) -> tuple[set[str], str]:
    if tools and draw(st.booleans()):
        stmt = draw(st.sampled_from(_TAMPER_TOOL)).format(t=draw(st.sampled_from(tools)))
        return set(), _restyle_assignment(draw, r, stmt)
    imp, stmt = draw(st.sampled_from(_TAMPER_PROCESS))
    return {imp}, _restyle_assignment(draw, r, stmt)


def _restyle_assignment(draw, r: _Renderer, stmt: str) -> str:
    """`a.b.c = v` → also as setattr(a.b, 'c', v) with the name encoded; others unchanged."""
    target, sep, value = stmt.partition(" = ")
    if not sep or "[" in target or target.count(".") < 1 or not draw(st.booleans()):
        return stmt
    obj, _, name = target.rpartition(".")
    return draw(st.sampled_from([
        f"setattr({obj}, {r.s(name)}, {value})",
        f"object.__setattr__({obj}, {r.s(name)}, {value})",
        f"type.__setattr__({obj}, {r.s(name)}, {value})",
        f"vars({obj})[{r.s(name)}] = {value}",
    ]))


@st.composite
def _escape_attempt(draw, marker_path, canary_env, tools, authorized, effects, families):
    effect = draw(st.sampled_from(effects))
    family = draw(st.sampled_from(families))
    attr_style = draw(st.sampled_from(_ATTR_STYLES))
    string_style = draw(st.sampled_from(_STRING_STYLES))
    r = _Renderer(draw, attr_style, string_style)
    carrier = draw(st.sampled_from(_CARRIERS))
    if effect == "tamper":
        family = "tamper"
        setup, stmt = _tamper(draw, r, tools)
        expr_ok = None
    elif family == "direct":
        family, stmt = _direct(draw, effect, r)
        setup: set[str] = set()
        expr_ok = None
    elif family == "format_string":
        setup, stmt = _format_attempt(draw, tools, authorized)
        expr_ok = stmt[len("print("):-1] if stmt.startswith("power(") is False and stmt.startswith("print(") else None
        if stmt.startswith("power("):
            expr_ok = stmt
    else:
        if family == "tool_internals" and not tools:
            family = "dunder_walk"
        setup, expr = _source(draw, r, family, tools, authorized)
        stmt = f"power({expr})"
        expr_ok = stmt
    body = _carry(carrier, stmt, expr_ok)
    preamble = _PREAMBLE.format(marker=str(marker_path), canary=canary_env, token=REACH_TOKEN,
                                effect=_EFFECTS[effect])
    head = sorted(s for s in setup | r.setup if s.startswith(("import", "from")))
    defs = sorted(s for s in setup | r.setup if not s.startswith(("import", "from")))
    code = "\n".join(head) + "\n" + preamble + "\n\n" + "\n\n".join(defs + [body]) + "\n"
    encoding = attr_style if attr_style in ("literal", "fullwidth") else f"{attr_style}+{string_style}"
    return EscapeAttempt(code=code, family=family, effect=effect, carrier=carrier, encoding=encoding)


def escape_attempts(
    marker_path: str,
    canary_env: str,
    *,
    tools: Iterable[str] | Mapping[str, Any] = (),
    authorized_imports: Iterable[str] | None = None,
    effects: Iterable[str] = ("marker", "canary", "reach", "tamper"),
    families: Iterable[str] = _FAMILIES,
) -> st.SearchStrategy[EscapeAttempt]:
    """Strategy for `EscapeAttempt`s: a known escape primitive, rendered with generated glue.

    Primitives (families): dunder walks to `__subclasses__`/`__globals__`, `getattr` with computed
    names (concatenation, join, chr, reversed, bytes, format, NFKC of full-width text, attrgetter,
    reduce, map), `str.format`/`format_map`/`string.Formatter` field traversal, frames of
    generators, coroutines, async generators and tracebacks (walked up through `f_back`), module
    attribute pivots found on this interpreter (`random._os`, `re.enum.sys`, …), builtins lookups,
    the internals of `tools` (names of the tools the executor has), refused imports.
    Carriers: top level, try/except, function, lambda, comprehension, class body, method,
    `__init_subclass__`, metaclass, `__del__` (now or at garbage collection), decorator,
    generator, coroutine, `__repr__`/`__str__`/`__eq__`/`__format__`/`__getattr__` hooks the host
    might call, default arguments, exception `__str__`. Identifiers may be full-width (NFKC).

    Effects: "marker" creates `marker_path` (file or directory), "canary" prints the value of
    the environment variable `canary_env`, "reach" prints REACH_TOKEN after calling a real
    `os.getpid()`, "tamper" changes process-wide state of the host (csv/decimal settings,
    attributes of authorized modules and their classes, the tools' defaults and attributes),
    which `executors.testing` sees by fingerprinting that state around each attempt. Under plain CPython most attempts succeed; a sandbox must stop every one.

        @given(escape_attempts("/tmp/marker", "MY_CANARY", tools=["search"]))
        def test_holds(attempt):
            ex.execute(attempt.code); assert not os.path.exists("/tmp/marker")
    """
    from .base import DEFAULT_AUTHORIZED_IMPORTS

    authorized = tuple(authorized_imports) if authorized_imports is not None else DEFAULT_AUTHORIZED_IMPORTS
    effects = tuple(effects)
    families = tuple(families)
    bad = set(effects) - set(_EFFECTS)
    if bad or not effects:
        raise ValueError(f"effects must be among {sorted(_EFFECTS)}, got {sorted(bad) or 'none'}")
    if not families or set(families) - set(_FAMILIES):
        raise ValueError(f"families must be among {_FAMILIES}")
    if isinstance(tools, Mapping):
        _TOOL_CHAINS.update({name: _tool_chains(obj) for name, obj in tools.items()})
    return _escape_attempt(str(marker_path), canary_env, sorted(tools), authorized, effects, families)


# --------------------------------------------------------------------------------------------
# resource_bombs()
# --------------------------------------------------------------------------------------------


@st.composite
def _bomb(draw, kinds, mem_mb, max_output, max_depth):
    kind = draw(st.sampled_from(kinds))
    if kind == "time":
        n = draw(st.integers(10**4, 10**6))
        big = draw(st.integers(10**10, 10**14))
        name, code = draw(st.sampled_from([
            ("while_true", "while True:\n    pass"),
            ("while_swallow", "while True:\n    try:\n        pass\n    except BaseException:\n        pass"),
            ("nested_for", f"for i in range({n}):\n    for j in range({n}):\n        pass"),
            ("counter", "x = 0\nwhile x >= 0:\n    x += 1"),
            ("c_sum", f"sum(range({big}))"),
            ("c_any_repeat", "import itertools\nany(itertools.repeat(0))"),
            ("c_deque_count", "import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)"),
            ("c_iter_callable", "any(iter(int, 1))"),
            ("c_max_count", f"import itertools\nmax(itertools.islice(itertools.count(), {big}))"),
            ("redos", f"import re\nre.match(r'(a+)+$', 'a' * {draw(st.integers(28, 40))} + 'b')"),
            ("sleep", f"import time\ntime.sleep({draw(st.integers(60, 3600))})"),
            ("factorial", f"import math\nmath.factorial({draw(st.integers(10**6, 10**7))})"),
            ("pow_mod_free", f"pow(7, {draw(st.integers(10**7, 10**9))})"),
            ("sorted_big", f"sorted(range({big}))"),
            ("swallow_all", "def spin():\n    while True:\n        try:\n            spin()\n        except BaseException:\n            pass\nspin()"),
            ("generator_loop", "def g():\n    while True:\n        yield 1\nfor _ in g():\n    pass"),
            # model code the executor itself might run after the step: rendering the last value,
            # the final answer or an exception message must happen under the same limits
            ("repr_of_output", "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nSlow()"),
            ("str_of_final_answer", "class Slow:\n    def __str__(self):\n        while True:\n            pass\n\n    def __repr__(self):\n        while True:\n            pass\nfinal_answer(Slow())"),
            ("str_of_exception", "class Slow(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise Slow()"),
            ("repr_in_exception_args", "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nraise ValueError(Slow())"),
            ("eq_of_output", "class Slow:\n    def __eq__(self, other):\n        while True:\n            pass\n    __hash__ = None\nfinal_answer([Slow()])"),
        ]))
        return Bomb(kind, code, name, n)
    if kind == "memory":
        scale = draw(st.integers(2, 16))
        nbytes = max(mem_mb, 64) * 1024 * 1024 * scale
        n8 = nbytes // 8
        name, code = draw(st.sampled_from([
            ("str_mul", f"x = 'a' * {nbytes}"),
            ("list_mul", f"x = [0] * {n8}"),
            ("list_mul_aug", f"x = [0]\nx *= {n8}"),
            ("str_mul_aug", f"x = 'a'\nx *= {nbytes}"),
            ("range_list", f"x = list(range({n8}))"),
            # zero-filled buffers are lazily mapped: touch them, or they cost nothing
            ("bytearray", f"x = bytearray(b'x') * {nbytes}"),
            ("bytes", f"x = b'x' * {nbytes}"),
            ("big_pow", f"x = 10 ** {nbytes * 2}"),
            ("big_shift", f"x = 1 << {nbytes * 8}"),
            ("pow_builtin", f"x = pow(10, {nbytes * 2})"),
            ("growing_list", "x = []\nwhile True:\n    x.append('x' * 10000)"),
            ("doubling", "s = 'ab'\nfor i in range(64):\n    s = s + s"),
            ("nested_mul", f"x = [[0] * 1000 for _ in range({n8 // 1000})]"),
            ("join_many", f"x = ''.join(['abcdefgh'] * {n8})"),
            ("format_width", f"x = f'{{1:>{nbytes}}}'"),
            ("percent_width", f"x = '%*d' % ({nbytes}, 1)"),
            ("ljust", f"x = 'a'.ljust({nbytes})"),
            ("replace_blowup", f"x = ('a' * {10**4}).replace('', 'b' * {max(nbytes // 10**4, 1)})"),
            ("array_mul", f"import array\nx = array.array('b', [0]) * {nbytes}"),
            ("deque_mul", f"import collections\nx = collections.deque([0]) * {n8}"),
            ("repeat_list", f"import itertools\nx = list(itertools.repeat(0, {n8}))"),
            ("dict_comp", f"x = {{i: i for i in range({n8})}}"),
            ("mul_chain", f"x = [0] * {int(n8 ** 0.5) + 1} * {int(n8 ** 0.5) + 1}"),
            ("expandtabs", f"x = '\\t'.expandtabs({nbytes})"),
        ]))
        return Bomb(kind, code, name, nbytes)
    if kind == "output":
        n = draw(st.integers(max_output * 10, max_output * 10_000))
        name, code = draw(st.sampled_from([
            ("print_loop", "while True:\n    print('x' * 100)"),
            ("print_range", f"for i in range({n}):\n    print(i)"),
            ("print_big", f"print('x' * {n})"),
            ("print_star", f"print(*range({n}))"),
            ("print_end", f"for i in range({n}):\n    print('y', end='')"),
            ("print_sep", f"print(*(['z'] * {n}), sep='--')"),
        ]))
        return Bomb(kind, code, name, n)
    if kind == "recursion":
        n = draw(st.integers(max(max_depth, 50) * 5, max(max_depth, 50) * 200))
        name, code = draw(st.sampled_from([
            ("direct", "def f(n):\n    return f(n + 1)\nf(0)"),
            ("mutual", "def a(n):\n    return b(n + 1)\ndef b(n):\n    return a(n + 1)\na(0)"),
            ("lambda", "f = lambda n: f(n + 1)\nf(0)"),
            ("repr_self", "class R:\n    def __repr__(self):\n        return repr(self)\nrepr(R())"),
            ("getattr_self", "class A:\n    def __getattr__(self, name):\n        return self.missing\nA().x"),
            ("retry", "def f():\n    try:\n        f()\n    except RecursionError:\n        f()\nf()"),
            ("nested_repr", f"x = []\nfor i in range({n}):\n    x = [x]\nrepr(x)"),
            ("nested_json", f"import json\nx = []\nfor i in range({n}):\n    x = [x]\njson.dumps(x)"),
            ("nested_eq", f"x = []\ny = []\nfor i in range({n}):\n    x = [x]\n    y = [y]\nx == y"),
            ("nested_copy", f"import copy\nx = []\nfor i in range({n}):\n    x = [x]\ncopy.deepcopy(x)"),
            ("yield_from", "def g():\n    yield from g()\nlist(g())"),
            ("src_unary", "x = " + "-" * n + "1"),
            ("src_parens", "x = " + "(" * min(n, 5000) + "1" + ")" * min(n, 5000)),
            ("src_lists", "x = " + "[" * min(n, 5000) + "]" * min(n, 5000)),
            ("src_chain", "x = 1" + " + 1" * n),
            ("src_not", "x = " + "not " * n + "True"),
            ("src_lambda", "f = " + "lambda: " * min(n, 3000) + "0"),
            ("src_attr", "x = a" + ".b" * n),
            ("src_call", "x = f" + "()" * n),
        ]))
        return Bomb(kind, code, name, n)
    n = draw(st.integers(2, 8))
    name, code = draw(st.sampled_from([
        ("fork_loop", f"import os\nfor i in range({n}):\n    os.fork()"),
        ("subprocess_sleep", "import subprocess\nsubprocess.Popen(['sleep', '600'])"),
        ("threads", f"import threading\nfor i in range({n}):\n    threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()"),
        ("multiprocessing", f"import multiprocessing\nfor i in range({n}):\n    multiprocessing.Process(target=print).start()"),
        ("os_system_bg", "import os\nos.system('sleep 600 &')"),
        ("spawn", "import os\nos.spawnlp(os.P_NOWAIT, 'sleep', 'sleep', '600')"),
    ]))
    return Bomb(kind, code, name, n)


def resource_bombs(
    kinds: Iterable[str] = BOMB_KINDS,
    *,
    limits: Any = None,
) -> st.SearchStrategy[Bomb]:
    """Strategy for `Bomb`s: programs that try to exhaust time, memory, output, recursion or
    processes, with generated sizes (relative to `limits`, an `executors.Limits`, when given).

    Containment (what `executors.testing.check_bombs_contained` asserts): `execute` returns
    within `timeout_s` plus a margin (with an error, except output bombs whose output is simply
    truncated), the host did not grow by hundreds of MB, and the executor answers `1 + 1` next.

        @given(resource_bombs(["time", "memory"]))
        def test_contained(bomb): ...
    """
    kinds = tuple(kinds)
    if not kinds or set(kinds) - set(BOMB_KINDS):
        raise ValueError(f"kinds must be among {BOMB_KINDS}, got {kinds!r}")
    mem_mb = getattr(limits, "max_memory_mb", None) or 512
    max_output = getattr(limits, "max_output_chars", None) or 20_000
    max_depth = getattr(limits, "max_recursion_depth", None) or 200
    return _bomb(kinds, mem_mb, max_output, max_depth)
