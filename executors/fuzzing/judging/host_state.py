"""Process-wide state that model code of an in-process executor must not change, fingerprinted
before and after each escape attempt."""

from __future__ import annotations

import builtins
import functools
import os
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["host_fingerprint", "fingerprint_changes"]

_ABSENT = object()


def _public_state(obj: Any) -> dict[str, Any]:
    """Public and dunder attributes by name: the objects themselves, compared by identity (holding
    them keeps their ids from being reused by a replacement)."""
    try:
        items = list(vars(obj).items())
    except TypeError:
        return {}
    return {k: v for k, v in items if not k.startswith("_") or (k.startswith("__") and k.endswith("__"))}


def _library_settings() -> dict[str, Any]:
    import csv
    import decimal

    fp: dict[str, Any] = {"csv.field_size_limit": csv.field_size_limit()}
    for name in csv.list_dialects():
        d = csv.get_dialect(name)
        fp[f"csv.dialect.{name}"] = (d.delimiter, d.quotechar, d.doublequote, d.lineterminator,
                                     d.quoting, d.skipinitialspace, d.strict)
    for label, c in (("getcontext()", decimal.getcontext()), ("DefaultContext", decimal.DefaultContext),
                     ("BasicContext", decimal.BasicContext)):
        fp[f"decimal.{label}"] = (c.prec, c.rounding, c.Emin, c.Emax, c.capitals, c.clamp,
                                  tuple(sorted(k.__name__ for k, v in c.traps.items() if v)))
    return fp


def host_fingerprint(modules: Iterable[str], tools: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Process-wide state that model code of an in-process executor must not change: csv and
    decimal settings, the attributes of the authorized modules and of the classes they define,
    the defaults and attributes of the tools. Compare two fingerprints with `==`."""
    fp = _library_settings()
    try:
        fp["cwd"] = os.getcwd()
    except OSError as exc:  # the directory was removed or moved away: that is a change too
        fp["cwd"] = f"<{type(exc).__name__}>"
    fp["recursionlimit"] = sys.getrecursionlimit()
    fp["stdout"] = (id(sys.stdout), id(sys.stderr), id(builtins.print))
    for modname in modules:
        module = sys.modules.get(modname.rstrip(".*"))
        if module is None:
            continue
        label = module.__name__  # "numpy", not "numpy.*"
        fp[label] = _public_state(module)
        for cname, cls in list(vars(module).items()):
            if isinstance(cls, type) and not cname.startswith("_") and getattr(cls, "__module__", "") == module.__name__:
                fp[f"{label}.{cname}"] = _public_state(cls)
    for tname, tool in (tools or {}).items():
        fp[f"tool.{tname}"] = (
            repr(getattr(tool, "__defaults__", None)), repr(getattr(tool, "__kwdefaults__", None)),
            repr(sorted(_public_state(tool).items())),
            repr((getattr(tool, "args", None), getattr(tool, "keywords", None))) if isinstance(tool, functools.partial) else "",
            repr(sorted(_public_state(getattr(tool, "__self__", None)).items())),
        )
    return fp


def fingerprint_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two fingerprints (a module imported for the first time does not)."""
    out = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k, "<missing>"), after.get(k, "<missing>")
        if isinstance(b, str) and b == "<missing>":  # a module imported for the first time
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            changed = [n for n in sorted(set(a) | set(b))
                       if a.get(n, _ABSENT) is not b.get(n, _ABSENT) and not _lazy_submodule(k, b, a, n)]
            out += [f"{k}.{n}" for n in changed]
            continue
        if b == a:
            continue
        out.append(f"{k}: {b!r:.60} -> {a!r:.60}")
    return out


def _lazy_submodule(package: str, before: dict[str, Any], after: dict[str, Any], name: str) -> bool:
    """A package attribute that appeared because one of its submodules was imported (numpy loads
    its submodules lazily, on first use): the library's doing, not a change to the host. A module
    from elsewhere planted on the package (numpy.os = os) is still a change."""
    value = after.get(name)
    return (name not in before and isinstance(value, types.ModuleType)
            and value.__name__.startswith(package + "."))
