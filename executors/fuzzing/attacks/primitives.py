"""The escape primitives: what each family of escape attempts reaches for, on this interpreter.

Each family is one function returning (setup statements, expression); the expression evaluates
to something `power()` (preamble.py) can follow to an effect. `direct()` writes attempts
that do their effect in one statement, `format_attempt()` the str.format-family traversals and
`tamper()` the changes of host-process state an in-process executor must not allow.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

from .._hypothesis import st
from .rendering import Renderer, fullwidth

Source = tuple[set[str], str]

# Modules whose reach is the escape: seen as an attribute of an allowed module, they are pivots.
POWER_MODULES = ("os", "posix", "sys", "builtins", "subprocess", "io", "_io", "shutil",
                 "importlib", "pathlib", "codecs", "ctypes")
_PIVOT_CACHE: dict[tuple[str, ...], list[tuple[str, list[str], str]]] = {}


def module_pivots(authorized: tuple[str, ...]) -> list[tuple[str, list[str], str]]:
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
                    if short in POWER_MODULES:
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


TOOL_CHAINS: dict[str, list[list[tuple[str, Any]]]] = {}


def tool_chains(obj: Any) -> list[list[tuple[str, Any]]]:
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


def dunder_walk(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """Up from a literal to `object`, down its subclasses to a function's globals."""
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


def module_pivot(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """An attribute path from an authorized module to a powerful one (see module_pivots)."""
    pivots = module_pivots(authorized)
    if not pivots:
        return {"import random"}, r.chain("random", [("attr", "_os")])
    mod, path, _target = draw(st.sampled_from(pivots))
    setup = {f"import {mod}"}
    top = mod.split(".")[0]
    expr = mod if "." not in mod else top + "".join(f".{p}" for p in mod.split(".")[1:])
    return setup, r.chain(expr, [("attr", p) for p in path])


def frames(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """Frames of generators, coroutines, async generators and tracebacks, walked up."""
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


def builtins_lookup(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """Builtins that hand out namespaces, modules or the import machinery."""
    return set(), draw(st.sampled_from([
        "globals()", "vars()", "locals()", "__builtins__", "__import__('os')",
        "eval(" + r.s("__import__('os')") + ")", "__loader__", "__spec__",
        r.chain("print", [("attr", "__self__")]),
        r.chain("type", [("attr", "__dict__")]),
        "[m for m in ().__class__.__base__.__subclasses__() if 'Importer' in m.__name__][0].load_module('os')",
    ]))


def tool_internals(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """The attributes of the tools the executor was given (tailored to their shape when known)."""
    name = draw(st.sampled_from(tools + ["final_answer", "print"]))
    tailored = TOOL_CHAINS.get(name)
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


def refused_import(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """Imports of modules the restricted policy refuses."""
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


def stdlib_eval(draw: Any, r: Renderer, tools: list[str], authorized: tuple[str, ...]) -> Source:
    """Library code that compiles or evaluates strings itself, outside any AST transform."""
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


# The primitive of each family: (setup statements, expression) rendered with one Renderer.
SOURCES: dict[str, Callable[[Any, Renderer, list[str], tuple[str, ...]], Source]] = {
    "dunder_walk": dunder_walk,
    "module_pivot": module_pivot,
    "frames": frames,
    "builtins": builtins_lookup,
    "tool_internals": tool_internals,
    "refused_import": refused_import,
    "stdlib_eval": stdlib_eval,
}

def direct(draw: Any, effect: str, r: Renderer) -> tuple[str, str]:
    """Attempts that do their effect in one statement (family, code)."""
    if effect == "marker":
        return draw(st.sampled_from([
            ("builtins", "open(MARKER, 'w').write('escaped')"),
            ("builtins", f"{fullwidth('open')}(MARKER, 'w').write('escaped')"),
            ("builtins", "exec(" + r.s("open(MARKER, 'w').write('escaped')") + ")"),
            ("refused_import", "import io\nio.open(MARKER, 'w').write('escaped')"),
            ("refused_import", "import io\nio.FileIO(MARKER, 'w').write(b'escaped')"),
            ("refused_import", "import pathlib\npathlib.Path(MARKER).write_text('escaped')"),
            ("refused_import", "import os\nos.mkdir(MARKER)"),
            ("refused_import", "import pickle\ngetattr(pickle, 'loads')(b'cos\\nmkdir\\n(Vmarker\\ntR.'.replace(b'marker', MARKER.encode()))"),
            ("builtins", "__import__('os').mkdir(MARKER)"),
            ("builtins", f"{fullwidth('exec')}('import os; os.mkdir(MARKER)')"),
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


def format_attempt(draw: Any, tools: list[str], authorized: tuple[str, ...]) -> tuple[set[str], str]:
    """str.format-family traversal: prints an environ (canary) or extracts an object to power()."""
    options: list[tuple[set[str], str, str]] = []
    for mod, path, target in module_pivots(authorized):
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


def tamper(draw: Any, r: Renderer, tools: list[str]) -> tuple[set[str], str]:
    if tools and draw(st.booleans()):
        stmt = draw(st.sampled_from(_TAMPER_TOOL)).format(t=draw(st.sampled_from(tools)))
        return set(), _restyle_assignment(draw, r, stmt)
    imp, stmt = draw(st.sampled_from(_TAMPER_PROCESS))
    return {imp}, _restyle_assignment(draw, r, stmt)


def _restyle_assignment(draw: Any, r: Renderer, stmt: str) -> str:
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
