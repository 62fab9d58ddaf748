"""The namespace model code runs in: the sandbox's builtins and the names the instrumenter uses.

Built anew on every reset; the run state (and so the watchdog's entry) outlives it.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Iterable
from types import GeneratorType
from typing import Any

from ...base import FINAL_ANSWER_NAME, ToolError
from ..compiler import names as n
from ..guards.errors import PolicyError, SandboxFinished
from ..guards.operations import (
    check_kwargs,
    fmt_attr,
    guarded_ilshift,
    guarded_ipow,
    guarded_lshift,
    guarded_pow,
    make_getattr,
    make_hasattr,
    match_check,
    safe_dir,
)
from ..host.guard import HostGuard, SandboxType
from ..libraries.raw_memory import MEMBER_CHECKS
from ..libraries.sandbox_modules import SandboxImporter
from ..limits.budget import SIZED_TYPES, UNMETERED, RunState
from ..limits.output import OutputBuffer, make_print

# Plain builtins handed to model code as they are (RestrictedPython's safe set plus the
# iteration, container and class helpers data code needs).
PLAIN_BUILTINS = (
    "abs", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash",
    "hex", "id", "int", "isinstance", "issubclass", "len", "list", "map", "next",
    "object", "oct", "ord", "property", "repr", "reversed", "round", "set", "slice",
    "staticmethod", "str", "super", "tuple", "zip",
    "None", "True", "False", "NotImplemented", "Ellipsis",
)
EXCEPTIONS = tuple(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_")
)


class NamespaceParts:
    """What outlives reset(): the sandbox's print, the host guard (what it learnt of the host's
    objects), the importer with its module proxies (building sympy's takes ~100 ms), and the
    builtins and instrumenter names every namespace starts from. reset() forgets the model's
    variables, not the work of importing its libraries."""

    def __init__(self, state: RunState, buffer_ref: Callable[[], OutputBuffer],
                 authorized_imports: Iterable[str]) -> None:
        self.print_fn = print_fn = make_print(buffer_ref)
        self.host = host = HostGuard(own_functions=state.generators.functions)
        host.member_checks = MEMBER_CHECKS
        self.importer = SandboxImporter(authorized_imports, state, print_fn, host)
        getattr_ = make_getattr(host.attr, host.private_attr)
        safe: dict[str, Any] = {name: getattr(builtins, name) for name in PLAIN_BUILTINS}
        safe.update({name: getattr(builtins, name) for name in EXCEPTIONS})
        safe.update(
            print=print_fn, getattr=getattr_, hasattr=make_hasattr(getattr_),
            range=state.guard_range, iter=state.guard_iter_call, vars=host.vars,
            setattr=host.setattr, delattr=host.delattr, type=SandboxType,
            __build_class__=host.build_class, pow=guarded_pow, __import__=self.importer,
            PolicyError=PolicyError, ToolError=ToolError,
        )
        safe.update(_metered_reducers(state))
        # C code finds `open` in the calling frame's builtins (numpy's tofile/fromfile: without
        # it they fail with SystemError even inside the grants). Model code still cannot name it
        # (the checker refuses it, FORBIDDEN_BUILTINS) and the capability guard judges every open.
        safe["open"] = builtins.open
        self.builtins = safe  # (each namespace gets a copy, with its own `dir`)
        self.names: dict[str, Any] = {
            "__name__": "__main__",
            n.LIVE: False,
            n.DEAD: state.dead,
            n.FOR: state.guard_iter,
            n.FOREVER: itertools.repeat(None),
            n.TICK: state.tick,
            n.POW: guarded_pow,
            n.LSHIFT: guarded_lshift,
            n.IPOW: guarded_ipow,
            n.ILSHIFT: guarded_ilshift,
            n.FMT_ATTR: fmt_attr,
            n.ATTR: host.attr,
            n.MATCH_CHECK: match_check,
            n.KWARGS: check_kwargs,
            n.GEN: state.generators.wrap,
            n.WRITABLE: host.writable,
            n.PRIVATE_ATTR: host.private_attr,
            n.PRIVATE_WRITABLE: host.private_writable,
            FINAL_ANSWER_NAME: state.final_answer,
        }
        for name in n.DIRECT_REDUCERS:  # (see instrument.py: visit_Call)
            self.names[n.SANDBOX_REDUCER[name]] = safe[name]
            self.names[n.C_REDUCER[name]] = getattr(builtins, name)


def build_namespace(ns: dict[str, Any], state: RunState, parts: NamespaceParts) -> HostGuard:
    """Fill `ns` with the sandbox's builtins and the instrumenter's names; returns the host
    guard (its snapshots are restored after every step)."""
    safe_builtins = parts.builtins.copy()
    safe_builtins["dir"] = safe_dir(ns)
    importer = parts.importer
    importer.sandbox_builtins = safe_builtins
    importer.cache.pop("builtins", None)  # (`import builtins` gives this namespace's)
    ns.update(parts.names)
    ns["__builtins__"] = safe_builtins
    return parts.host


def _metered_reducers(state: RunState) -> dict[str, Callable[..., Any]]:
    """sum/min/max/sorted/any/all that walk their iterable through the operation budget (in
    C they would consume an endless iterator without any check). Without a budget, a sized
    builtin (C walks it in bounded time) or a generator (its frames meet the deadline's
    interrupt) is handed over as it is: what `guard_iter` would do, without calling it."""
    _sum, _min, _max, _sorted, _any, _all = sum, min, max, sorted, any, all
    guard, direct = state.guard_iter, SIZED_TYPES | {GeneratorType}

    def g_sum(iterable: Any, /, start: Any = 0) -> Any:
        if state.max_ops != UNMETERED or type(iterable) not in direct:
            iterable = guard(iterable)
        return _sum(iterable, start)

    def g_min(*args: Any, **kwargs: Any) -> Any:
        return _min(guard(args[0]), **kwargs) if len(args) == 1 else _min(*args, **kwargs)

    def g_max(*args: Any, **kwargs: Any) -> Any:
        return _max(guard(args[0]), **kwargs) if len(args) == 1 else _max(*args, **kwargs)

    def g_sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> list:
        if state.max_ops != UNMETERED or type(iterable) not in direct:
            iterable = guard(iterable)
        return _sorted(iterable, key=key, reverse=reverse)

    def g_any(iterable: Any, /) -> bool:
        if state.max_ops != UNMETERED or type(iterable) not in direct:
            iterable = guard(iterable)
        return _any(iterable)

    def g_all(iterable: Any, /) -> bool:
        if state.max_ops != UNMETERED or type(iterable) not in direct:
            iterable = guard(iterable)
        return _all(iterable)

    reducers = {"sum": g_sum, "min": g_min, "max": g_max, "sorted": g_sorted, "any": g_any,
                "all": g_all}
    for name, fn in reducers.items():
        fn.__name__ = fn.__qualname__ = name
    return reducers


def retire_namespace(ns: dict[str, Any]) -> None:
    """After reset(): functions and objects of the old namespace stop at their next check."""
    ns[n.LIVE] = False
    ns[n.DEAD] = _finished
    ns[n.FOR] = ns[n.TICK] = _finished
    for name in n.C_REDUCER.values():
        ns[name] = _finished


def _finished(*args: Any) -> None:
    raise SandboxFinished("this object belongs to sandboxed code that was reset; it cannot run")
