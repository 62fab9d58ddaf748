"""The "deferred" family: model-made objects with hostile methods, handed to the user's tools or
left for the host, drawn by hypothesis (issue 21's classes, for anyone's tools).

Forms of the object:
  method       a subclass of a builtin (or a plain class) whose dunder or public method is
               model code doing the payload: it runs wherever a tool or the host calls it
  host_method  the same, but the method is a HOST callable chosen by a decorator (a partial of a
               writer that takes any arguments): it still runs after the step, when the model's
               own functions have become inert
  generator    a generator left suspended with the payload in its finally: it runs when the
               object is closed (a tool drops it, reset(), the next step, garbage collection)
  lazy         a map() over a host writer: it runs when anyone iterates it
Destinations: each of the user's tools (called with the object, or with it in a list), the
step's value, final_answer, a variable. The evaluator then touches the step's value and the
variables as a host would (host_touches.py). Effects: "marker" (the payload writes the marker, or
beside it: anything in the canary tree changed shows), "read" (model code that runs inside a tool
prints the secret file: a read the guard would have refused).
Only writers and readers of authorized, importable modules are drawn.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._hypothesis import st
from .attempt import EscapeAttempt
from .library_escapes import Targets, _usable
from .library_routes import LOCAL_READERS, LOCAL_WRITERS

__all__ = ["DeferredPlan", "deferred_plan", "deferred_attempts", "FORMS"]

FORMS = ("method", "host_method", "generator", "lazy")
# Host callables that take any arguments (max() calls its key on each of its own) and write $M
# (the marker) or into $D (its folder); and lazy iterators over the same writers.
HOST_WRITERS: tuple[tuple[str, str, str], ...] = (
    ("numpy", "import numpy as np", "functools.partial(max, [1], [2], key=functools.partial(np.save, $M))"),
    ("pathlib", "import pathlib", "functools.partial(max, pathlib.Path($M), pathlib.Path($M), key=pathlib.Path.touch)"),
    ("pandas", "import pandas as pd", "functools.partial(max, $M, $M, key=pd.DataFrame({'a': [1]}).to_csv)"),
    ("tempfile", "import tempfile",
     "functools.partial(max, [1], [2], key=functools.partial(tempfile.mkstemp, '', 'x', $D))"),
)
LAZY_WRITERS: tuple[tuple[str, str, str], ...] = (
    ("numpy", "import numpy as np", "map(functools.partial(np.save, $M), [[1]])"),
    ("pathlib", "import pathlib", "map(pathlib.Path.touch, [pathlib.Path($M)])"),
    ("pandas", "import pandas as pd", "map(pd.DataFrame({'a': [1]}).to_csv, [$M])"),
    ("tempfile", "import tempfile", "map(functools.partial(tempfile.mkstemp, '', 'x'), [$D])"),
)
# base -> (constructor argument, the methods a tool or host may call on it)
_STR = ("__str__", "__format__", "__eq__", "__hash__", "__len__", "__contains__", "__radd__",
        "__add__", "__getitem__", "strip", "lower", "split", "startswith", "endswith", "encode")
_NUM = ("__repr__", "__str__", "__format__", "__eq__", "__hash__", "__int__", "__float__", "__index__",
        "__round__", "__lt__", "__radd__", "__add__", "__bool__")
BASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "": ("", ("__str__", "__repr__", "__format__", "__eq__", "__hash__", "__len__", "__iter__",
              "__bool__", "__float__", "__int__", "__index__", "__round__", "__lt__", "__contains__",
              "__getitem__", "__getattr__", "__call__", "__radd__")),
    "str": ('"Oslo"', _STR), "int": ("3", _NUM), "float": ("2.5", _NUM),
    "list": ("[1, 2]", ("__iter__", "__len__", "__repr__", "__getitem__", "__contains__", "__eq__")),
    "tuple": ("(1, 2)", ("__iter__", "__len__", "__repr__", "__getitem__", "__contains__", "__eq__")),
    "dict": ('{"k": 1}', ("items", "keys", "values", "get", "__iter__", "__getitem__", "__len__",
                          "__contains__", "__repr__")),
    "Exception": ('"boom"', ("__str__", "__repr__")),
}
_TWO = ("__eq__", "__lt__", "__radd__", "__add__", "__format__", "__getitem__", "__contains__", "__getattr__")
_RETURNS = {"__str__": '"x"', "__repr__": '"x"', "__format__": '"x"', "__eq__": "False", "__lt__": "False",
            "__hash__": "1", "__len__": "1", "__contains__": "False", "__bool__": "True", "__iter__": "iter([1])",
            "__float__": "1.0", "__int__": "1", "__index__": "1", "__round__": "1", "__getitem__": "1",
            "__radd__": "other", "__add__": "other", "__call__": "None", "items": '[("k", 1)]',
            "keys": '["k"]', "values": "[1]", "get": "None", "strip": '"x"', "lower": '"x"', "split": '["x"]',
            "startswith": "False", "endswith": "False", "encode": 'b"x"'}
DESTINATIONS = ("output", "final_answer", "variable")
_DELIVER = """
for args in ([obj], [obj, 2], [[obj]]):
    try:
        {tool}(*args)
        break
    except Exception:
        pass
"""


def _signature(method: str) -> str:
    if method == "__getattr__":
        return "(self, name)"
    if method in _TWO:
        return "(self, other)"
    return "(self)" if method.startswith("__") else "(self, *args)"


@dataclass(frozen=True)
class DeferredPlan:
    """What can be drawn for one set of authorized imports and tools (tables filtered)."""

    writers: tuple[tuple[str, tuple[str, ...], str], ...]  # model-written statements ($L: a path)
    readers: tuple[tuple[str, tuple[str, ...], str], ...]
    host_writers: tuple[tuple[str, str, str], ...]
    lazy_writers: tuple[tuple[str, str, str], ...]
    tools: tuple[str, ...]

    @property
    def usable(self) -> bool:
        return bool(self.writers or self.host_writers)


@functools.lru_cache(maxsize=64)
def deferred_plan(authorized: tuple[str, ...], tools: tuple[str, ...]) -> DeferredPlan:
    def fits(rows: Iterable[tuple]) -> tuple:
        return tuple(r for r in rows if _usable([r[0]], authorized))

    return DeferredPlan(fits(LOCAL_WRITERS), fits(LOCAL_READERS), fits(HOST_WRITERS), fits(LAZY_WRITERS),
                        tuple(sorted(tools)))


def _fill(text: str, targets: Targets) -> str:
    import os

    return (text.replace("$M", repr(targets.marker)).replace("$D", repr(os.path.dirname(targets.marker)))
            .replace("$L", repr(targets.marker)))


def _object(draw: Any, form: str, plan: DeferredPlan, payload: str, imports: set[str]) -> tuple[str, str]:
    """(code that defines `obj`, route label)."""
    if form == "lazy":
        module, imp, expr = draw(st.sampled_from(plan.lazy_writers))
        imports.add(imp)
        return f"obj = {expr}\n", f"map:{module}"
    if form == "generator":
        return ("def rows():\n    try:\n        yield 1\n        yield 2\n    finally:\n"
                f"        {payload}\nobj = rows()\nnext(obj)\n"), "generator"
    base = draw(st.sampled_from(sorted(BASES)))
    value, methods = BASES[base]
    # one method, or every method of the base (whatever the tool calls, it runs the payload)
    chosen = (draw(st.sampled_from(methods)),) if draw(st.booleans()) else methods
    code = f"class Carrier({base}):\n" if base else "class Carrier:\n"
    label = chosen[0] if len(chosen) == 1 else "*"
    if form == "host_method":
        module, imp, expr = draw(st.sampled_from(plan.host_writers))
        imports.add(imp)
        code = f"def hook(f):\n    return {expr}\n" + code
        for method in chosen:
            code += f"    @hook\n    def {method}{_signature(method)}:\n        return None\n"
        route = f"{base or 'object'}.{label}:{module}"
    else:
        for method in chosen:
            tail = "raise AttributeError(name)" if method == "__getattr__" else f"return {_RETURNS[method]}"
            code += f"    def {method}{_signature(method)}:\n        {payload}\n        {tail}\n"
        route = f"{base or 'object'}.{label}"
    return code + f"obj = Carrier({value})\n", route


@st.composite
def deferred_attempts(draw: Any, targets: Targets, plan: DeferredPlan) -> EscapeAttempt:
    """One attempt of the "deferred" family (see the module docstring)."""
    forms = [f for f in FORMS if (f != "host_method" or plan.host_writers) and (f != "lazy" or plan.lazy_writers)
             and (f not in ("method", "generator") or plan.writers)]
    form = draw(st.sampled_from(forms))
    destinations = [*(f"tool:{t}" for t in plan.tools), *DESTINATIONS]
    destination = draw(st.sampled_from(destinations))
    effect = "read" if (form == "method" and destination.startswith("tool:") and plan.readers
                        and draw(st.booleans())) else "marker"
    imports = {"import functools"}
    if form in ("method", "generator"):
        _module, needs, statement = draw(st.sampled_from(plan.readers if effect == "read" else plan.writers))
        imports |= set(needs)
        payload = _fill(statement.replace("$L", "$M" if effect == "marker" else repr(targets.secret_file)), targets)
    else:
        payload = ""
    definition, route = _object(draw, form, plan, payload, imports)
    if destination.startswith("tool:"):
        delivery = _DELIVER.format(tool=destination[5:])
    else:
        delivery = {"output": "obj\n", "final_answer": "final_answer(obj)\n", "variable": "kept = obj\n"}[destination]
    code = "\n".join(sorted(imports)) + "\n" + _fill(definition, targets) + delivery
    return EscapeAttempt(code=code, family="deferred", effect=effect, carrier=destination.replace(":", "-"),
                         encoding=form, route=route.replace("/", ":"))
