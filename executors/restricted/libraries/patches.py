"""Sandbox-aware replacements for members of authorized modules, one patch per module.

A module proxy is built from the module's public members (sandbox_modules.py); then the patch for
that module, if any, swaps in versions that respect the sandbox: a deadline-aware `time.sleep`,
metered endless iterators, a private `random.Random`, a `pprint` that prints into the captured
output, decorators and helpers that only change the model's own objects, size-checked math.
"""

from __future__ import annotations

import functools as _functools
import itertools
import math
import operator as _operator
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..compiler.policy import GUARDED_LOADS
from ..guards.errors import LimitExceeded, PolicyError
from ..guards.operations import (
    MAX_INT_BITS,
    check_attr_name,
    exact_name,
    guarded_ilshift,
    guarded_ipow,
    guarded_lshift,
    guarded_pow,
)
from ..host.guard import CLASS_SUBSTITUTES, HostGuard, SandboxType
from ..limits.budget import RunState
from .bounded_re import patch_re

Members = dict[str, Any]


@dataclass(frozen=True)
class PatchContext:
    """What a patch may use: the run's state, the host guard, the sandbox's print()."""

    state: RunState
    host: HostGuard
    print_fn: Callable[..., None]


SLEEP_SLICE_S = 0.02  # how late a stopped step's time.sleep notices


def patch_members(name: str, members: Members, ctx: PatchContext) -> None:
    """Replace, in place, the members of module `name` that need a sandbox-aware version."""
    patch = PATCHES.get(name)
    if patch is not None:
        patch(members, ctx)


# -- time, itertools, random, pprint: limits and captured output ---------------------------------
def _patch_time(members: Members, ctx: PatchContext) -> None:
    state = ctx.state

    def sleep(seconds: Any) -> None:
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            raise TypeError("time.sleep() needs a number of seconds")
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        remaining = state.deadline - _time.monotonic()
        if seconds > remaining:
            state.expire("timeout")
            raise LimitExceeded("timeout")
        # in slices: a step stopped meanwhile (its caller was cancelled) stops within one
        end = _time.monotonic() + seconds
        while True:
            left = end - _time.monotonic()
            if left <= 0:
                break
            _time.sleep(min(left, SLEEP_SLICE_S))
            state.check_clock()
        state.check_clock()

    members["sleep"] = sleep


def _patch_itertools(members: Members, ctx: PatchContext) -> None:
    state = ctx.state

    def count(start: Any = 0, step: Any = 1) -> Any:
        return state.guard_iter(itertools.count(start, step))

    def cycle(iterable: Any) -> Any:
        return state.guard_iter(itertools.cycle(iterable))

    def repeat(obj: Any, times: Any = None) -> Any:
        return itertools.repeat(obj, times) if times is not None else state.guard_iter(itertools.repeat(obj))

    members.update(count=count, cycle=cycle, repeat=repeat)
    # Combinatoric iterators are lazily huge: metered like any other unsized iterator.
    for attr in ("product", "permutations", "combinations", "combinations_with_replacement"):
        members[attr] = _metered(state, getattr(itertools, attr))


def _metered(state: RunState, make: Callable[..., Any]) -> Callable[..., Any]:
    def metered(*args: Any, **kwargs: Any) -> Any:
        return state.guard_iter(make(*args, **kwargs))

    metered.__name__ = metered.__qualname__ = getattr(make, "__name__", "iterator")
    return metered


def _patch_random(members: Members, ctx: PatchContext) -> None:
    import random as _random

    rng = _random.Random()
    for attr, value in list(members.items()):
        if getattr(value, "__self__", None) is getattr(_random, "_inst", None):
            members[attr] = getattr(rng, attr)


def _patch_numpy(members: Members, ctx: PatchContext) -> None:
    # np.finfo(dtype) is one cached instance per process, shared with the host and pandas: the
    # sandbox gets a private copy, so `np.finfo(np.float64).eps = 1.0` changes only its own.
    shared_finfo = members.get("finfo")
    if shared_finfo is None:
        return

    def finfo(dtype: Any) -> Any:
        shared = shared_finfo(dtype)
        own = object.__new__(type(shared))
        own.__dict__.update(shared.__dict__)
        return own

    finfo.__doc__ = shared_finfo.__doc__
    members["finfo"] = finfo


def _patch_numpy_random(members: Members, ctx: PatchContext) -> None:
    # numpy's legacy functions (np.random.seed, rand, choice, ...) are methods of one global
    # RandomState shared with the host: each namespace gets its own, like `random`.
    import numpy.random as _nprandom

    shared = getattr(getattr(_nprandom, "mtrand", None), "_rand", None)
    if shared is None:
        return
    rng = _nprandom.RandomState()
    for attr, value in list(members.items()):
        if getattr(value, "__self__", None) is shared and hasattr(rng, attr):
            members[attr] = getattr(rng, attr)
    if "seed" in members:  # a module function that seeds the shared one (not a bound method)
        members["seed"] = rng.seed


_FILE_BACKENDS = frozenset({"agg", "svg", "pdf", "ps", "pgf", "cairo", "template"})


def _patch_matplotlib(members: Members, ctx: PatchContext) -> None:
    # matplotlib.use() switches the host's (process-wide) backend and takes "module://any.module":
    # in the sandbox figures are drawn off-screen already, so asking for a file backend is a
    # no-op and anything else is refused.
    def use(backend: Any, force: bool = True) -> None:
        name = backend.lower() if isinstance(backend, str) else None
        if name not in _FILE_BACKENDS:
            raise PolicyError(
                f"matplotlib.use({backend!r}) is not available in the sandbox: figures are drawn "
                "off-screen (Agg) already; save them with savefig into io.BytesIO or leave them "
                "open and they come back with the result")

    members["use"] = use


def _patch_pyplot(members: Members, ctx: PatchContext) -> None:
    # Figures are drawn off-screen: show() keeps them open, and every figure open at the end of
    # the step comes back with the result as a PNG (executors/worker/figures.py).
    def show(*args: Any, **kwargs: Any) -> None:
        return None

    members["show"] = show


def _patch_pprint(members: Members, ctx: PatchContext) -> None:
    print_fn = ctx.print_fn

    def pprint(obj: Any, *args: Any, **kwargs: Any) -> None:
        import pprint as _pprint

        kwargs.pop("stream", None)
        print_fn(_pprint.pformat(obj, *args, **kwargs))

    members.update(pprint=pprint, pp=pprint)


# -- functools, dataclasses, typing, enum: only the model's own objects change -----------------
def _patch_functools(members: Members, ctx: PatchContext) -> None:
    writable = ctx.host.writable
    assigned_default, updated_default = _functools.WRAPPER_ASSIGNMENTS, _functools.WRAPPER_UPDATES

    def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = assigned_default,
                       updated: Any = updated_default) -> Any:
        # Only the standard attributes: `updated=("__globals__",)` would merge a host
        # function's globals into the model's namespace.
        if tuple(assigned) != assigned_default or tuple(updated) != updated_default:
            raise PolicyError("functools.update_wrapper/wraps: only the default assigned/updated are allowed")
        return _functools.update_wrapper(writable(wrapper), wrapped)

    def wraps(wrapped: Any, assigned: Any = assigned_default, updated: Any = updated_default) -> Any:
        return _functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)

    members.update(update_wrapper=update_wrapper, wraps=wraps, singledispatch=singledispatch,
                   total_ordering=ctx.host.checked_decorator(_functools.total_ordering))


def singledispatch(func: Any) -> Any:
    dispatcher = _functools.singledispatch(func)
    register = dispatcher.register

    def checked_register(cls: Any, func: Any = None) -> Any:
        # register(f) reads f's annotations with typing.get_type_hints, which eval()s
        # strings: only real types there.
        for target in (cls, func):
            annotations = getattr(target, "__annotations__", None)
            if isinstance(annotations, dict) and any(
                not isinstance(v, type) for v in annotations.values()
            ):
                raise PolicyError("singledispatch.register: annotations must be classes; or pass the class: register(int, func)")
        return register(cls, func)

    dispatcher.register = checked_register
    return dispatcher


def _patch_dataclasses(members: Members, ctx: PatchContext) -> None:
    import dataclasses as _dataclasses

    writable = ctx.host.writable

    def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
        if cls is None:
            return lambda c: _dataclasses.dataclass(writable(c), **kwargs)
        return _dataclasses.dataclass(writable(cls), **kwargs)

    members["dataclass"] = dataclass


def _patch_typing(members: Members, ctx: PatchContext) -> None:
    for attr in ("final", "no_type_check", "runtime_checkable"):
        if attr in members:
            members[attr] = ctx.host.checked_decorator(members[attr])
    get_origin = members.get("get_origin")
    if get_origin is not None:
        members["get_origin"] = lambda tp: _no_metaclass(get_origin(tp))
    members.pop("clear_overloads", None)


def _no_metaclass(value: Any) -> Any:
    return SandboxType if isinstance(value, type) and issubclass(value, type) else value


def _patch_enum(members: Members, ctx: PatchContext) -> None:
    for attr in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"):
        if attr in members:
            members[attr] = _checked_enum(members[attr])


_NOT_GIVEN: Any = object()


class _CheckedEnumType(type(__import__("enum").Enum)):  # type: ignore[misc]
    """The functional API (`Enum('E', names)`) takes member names from data: no '_' names,
    which would otherwise become methods (`__reduce_ex__`, ...) of the new class."""

    def __call__(cls, value: Any, names: Any = _NOT_GIVEN, *args: Any, **kwargs: Any) -> Any:
        if names is _NOT_GIVEN:  # (`Color(2)`: from 3.13 a names=None passed on is a value)
            return super().__call__(value, **kwargs)
        if names is not None:
            names = _checked_enum_names(names)
        return super().__call__(value, names, *args, **kwargs)


def _checked_enum_names(names: Any) -> Any:
    """Materialize the names first (a lazy or lying container could change after the check),
    then refuse '_' names. Returns what the functional API gets."""
    if type(names) not in (str, list, tuple, dict):
        raise PolicyError("enum member names must be given as a str, list, tuple or dict")
    if isinstance(names, str):
        items = names.replace(",", " ").split()
    elif isinstance(names, dict):
        names = [(str.__str__(k) if isinstance(k, str) else k, names[k]) for k in list(names.keys())]
        items = [k for k, _ in names]
    else:
        names = [tuple(item) if isinstance(item, (tuple, list)) else item for item in list(names)]
        items = [item[0] if isinstance(item, tuple) and item else item for item in names]
    for item in items:
        if type(item) is not str or item.startswith("_"):
            raise PolicyError(f"enum member name {item!r} is not allowed (plain names without a leading '_')")
    return names


_CHECKED_ENUMS: dict[type, type] = {}


def _checked_enum(base: type) -> type:
    checked = _CHECKED_ENUMS.get(base)
    if checked is None:
        class Checked(base, metaclass=_CheckedEnumType):  # type: ignore[misc,valid-type]
            __module__ = "enum"

        Checked.__name__ = Checked.__qualname__ = base.__name__
        checked = _CHECKED_ENUMS[base] = Checked
        CLASS_SUBSTITUTES[base] = checked
    return checked


# -- calendar, math, operator: process settings and sizes ---------------------------------------
def _patch_calendar(members: Members, ctx: PatchContext) -> None:
    for attr in ("c", "prmonth", "prcal"):
        members.pop(attr, None)


def _patch_math(members: Members, ctx: PatchContext) -> None:
    factorial = members.get("factorial")

    def guarded_factorial(n: Any) -> Any:
        if isinstance(n, int) and n > 100_000:
            raise MemoryError(f"factorial({n}) is too large for the sandbox (limit 100,000)")
        return factorial(n)

    if factorial is not None:
        members["factorial"] = guarded_factorial

    def guarded_comb(n: Any, k: Any) -> Any:
        _check_binomial("comb", n, k)
        return math.comb(n, k)

    def guarded_perm(n: Any, k: Any = None) -> Any:
        _check_binomial("perm", n, n if k is None else k)
        return math.perm(n, k)

    members.update(comb=guarded_comb, perm=guarded_perm)


def _check_binomial(what: str, n: Any, k: Any) -> None:
    if isinstance(n, int) and isinstance(k, int) and n > 0 and k > 0:
        small = min(k, n - k) if what == "comb" else k
        bits = small * max(1, int(n).bit_length())
        if bits > MAX_INT_BITS:
            raise MemoryError(
                f"math.{what}({n}, {k}) is too large for the sandbox (about {int(bits * 0.30103):,} digits)"
            )


def _patch_operator(members: Members, ctx: PatchContext) -> None:
    members.update(pow=guarded_pow, ipow=guarded_ipow, lshift=guarded_lshift, ilshift=guarded_ilshift)

    def attrgetter(*names: Any) -> Any:
        names = tuple(exact_name(n) for n in names)
        for dotted in names:
            for part in dotted.split("."):
                _check_static_name(part)
        return _operator.attrgetter(*names)

    def methodcaller(name: Any, *args: Any, **kwargs: Any) -> Any:
        name = exact_name(name)
        _check_static_name(name)
        return _operator.methodcaller(name, *args, **kwargs)

    members.update(attrgetter=attrgetter, methodcaller=methodcaller)


def _check_static_name(name: Any) -> None:
    """Names for attrgetter/methodcaller: public, and none that has a runtime guard."""
    check_attr_name(name)
    if name.startswith("_") or name in GUARDED_LOADS:
        raise PolicyError(f"attrgetter/methodcaller cannot use the attribute {name!r}")


# -- what would run host callables or hand out process-wide objects later ------------------------
def _patch_weakref(members: Members, ctx: PatchContext) -> None:
    """A weak reference's callback runs when its object dies, perhaps on the host after the step,
    with no guard: model code gets weak references without callbacks."""
    import weakref

    def _no_callback(callback: Any) -> None:
        if callback is not None:
            raise PolicyError("weak reference callbacks are not available in the sandbox: they "
                              "would run when the object dies, after the step")

    class ref(weakref.ref):  # noqa: N801 - the name model code knows
        __slots__ = ()

        def __new__(cls, obj: Any, callback: Any = None) -> Any:
            _no_callback(callback)
            return weakref.ref.__new__(cls, obj)

        def __init__(self, obj: Any, callback: Any = None) -> None:
            weakref.ref.__init__(self, obj)

    def proxy(obj: Any, callback: Any = None) -> Any:
        _no_callback(callback)
        return weakref.proxy(obj)

    members.update(ref=ref, proxy=proxy)
    for name in ("finalize", "WeakMethod", "ReferenceType"):
        members.pop(name, None)


def _patch_codecs(members: Members, ctx: PatchContext) -> None:
    """codecs.lookup hands out the process's cached CodecInfo, whose codec classes the host's
    next open() uses: the model gets its own copy."""
    real = members.get("lookup")
    if real is None:
        return
    import codecs

    def lookup(encoding: Any) -> Any:
        info = real(str.__str__(encoding) if isinstance(encoding, str) else encoding)
        return codecs.CodecInfo(info.encode, info.decode, info.streamreader, info.streamwriter,
                                info.incrementalencoder, info.incrementaldecoder, name=info.name)

    members["lookup"] = lookup


_TEMP_MAKERS = ("mkstemp", "mkdtemp", "TemporaryFile", "NamedTemporaryFile",
                "SpooledTemporaryFile", "TemporaryDirectory")


def _patch_tempfile(members: Members, ctx: PatchContext) -> None:
    """Temporary files go to the step's working directory (what a worker's TMPDIR is), not the
    host's temporary directory: the same programs run in every executor, and the step can write
    there without a grant. (An explicit `dir=` is judged by the guard as any path.)"""
    import os

    def in_step_dir(make: Callable[..., Any]) -> Callable[..., Any]:
        # (not __annotations__: reading a class's makes it an empty dict in the class, a change
        # to the process's tempfile module a step must not leave behind)
        @_functools.wraps(make, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        def maker(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("dir") is None and not _passes_dir(make, args):
                kwargs["dir"] = os.getcwd()
            return make(*args, **kwargs)

        return maker

    for name in _TEMP_MAKERS:
        if name in members:
            members[name] = in_step_dir(members[name])
    if "gettempdir" in members:
        members["gettempdir"] = os.getcwd


def _passes_dir(make: Callable[..., Any], args: tuple) -> bool:
    """Did the positional arguments already give `dir`? (mkstemp(suffix, prefix, dir, ...))"""
    import inspect

    try:
        names = list(inspect.signature(make).parameters)
    except (TypeError, ValueError):
        return False
    return "dir" in names and names.index("dir") < len(args)


PATCHES: dict[str, Callable[[Members, PatchContext], None]] = {
    "re": patch_re,  # held to the time limit on any thread: bounded_re.py
    "tempfile": _patch_tempfile,
    "weakref": _patch_weakref,
    "codecs": _patch_codecs,
    "time": _patch_time,
    "itertools": _patch_itertools,
    "random": _patch_random,
    "numpy": _patch_numpy,
    "numpy.random": _patch_numpy_random,
    "matplotlib": _patch_matplotlib,
    "matplotlib.pyplot": _patch_pyplot,
    "pprint": _patch_pprint,
    "functools": _patch_functools,
    "dataclasses": _patch_dataclasses,
    "typing": _patch_typing,
    "enum": _patch_enum,
    "calendar": _patch_calendar,
    "math": _patch_math,
    "operator": _patch_operator,
}
