"""Authorized imports for the restricted runtime: module proxies and the guarded `__import__`.

Model code never holds a real module. It gets a read-only proxy whose attributes are the
module's public members, minus module-valued attributes (`re.enum`, `random._os` is private
anyway) unless that submodule is authorized too, minus the dangerous members listed in policy.
A few members are replaced by sandbox-aware versions (deadline-aware `time.sleep`, metered
infinite iterators, a private `random.Random`, `pprint` that prints into the captured output).
"""

from __future__ import annotations

import functools as _functools
import importlib
import itertools
import math
import time as _time
import types
from collections.abc import Callable, Iterable
from typing import Any

from .guards import (
    MAX_INT_BITS,
    ImportPolicyError,
    LimitExceeded,
    PolicyError,
    RunState,
    exact_name,
    guarded_lshift,
    guarded_pow,
)
from .host_guard import CLASS_SUBSTITUTES, HostGuard, SandboxType
from .policy import HIDDEN_MODULE_MEMBERS, IO_ALLOWED

_READ_ONLY: dict[type, Callable[[Any], Any]] = {
    list: tuple, dict: types.MappingProxyType, set: frozenset, bytearray: bytes,
}


class ModuleProxy:
    """A read-only namespace standing in for a module. Has no `__name__` on purpose: CPython's
    `from m import x` falls back to `sys.modules[m.__name__ + '.x']` when `x` is missing."""

    def __init__(self, label: str, members: dict[str, Any]) -> None:
        object.__setattr__(self, "_label", label)
        self.__dict__.update(members)

    def __getattr__(self, name: str) -> Any:
        # Only called for missing names.
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"module '{self._label}' has no attribute '{name}' in the sandbox "
            "(private, hidden, or a submodule that is not authorized)"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"module '{self._label}' is read-only in the sandbox")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"module '{self._label}' is read-only in the sandbox")

    def __repr__(self) -> str:
        return f"<module '{self._label}'>"


class Authorization:
    """Which module names may be imported: exact names and "pkg.*" patterns."""

    def __init__(self, names: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for name in names:
            if name == "*":
                raise ValueError("authorizing every module ('*') is not supported by the restricted policy")
            if name.endswith(".*"):
                base = name[:-2]
                self.exact.add(base)
                self.prefixes.append(base + ".")
            else:
                self.exact.add(name)

    def allows(self, name: str) -> bool:
        return name in self.exact or any(name.startswith(p) for p in self.prefixes)

    def on_path(self, name: str) -> bool:
        """`name` is an authorized module or a package on the way to one."""
        if self.allows(name):
            return True
        dotted = name + "."
        return any(a.startswith(dotted) for a in self.exact)


class SandboxImporter:
    def __init__(
        self, authorized: Iterable[str], state: RunState, print_fn: Callable[..., None], host: HostGuard
    ) -> None:
        self.auth = Authorization(authorized)
        self.state = state
        self.host = host
        self.print_fn = print_fn
        self.cache: dict[str, ModuleProxy] = {}

    # the builtin `__import__` seen by model code
    def __call__(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level:
            raise ImportPolicyError("relative imports are not allowed")
        if not isinstance(name, str) or not name or any(p.startswith("_") for p in name.split(".")):
            raise ImportPolicyError(f"importing {name!r} is not allowed")
        if not self.auth.allows(name) and not (fromlist and self.auth.on_path(name)):
            raise ImportPolicyError(self._refusal(name))
        proxy = self.proxy(name)
        if fromlist:
            for item in fromlist:
                if not isinstance(item, str) or item.startswith("_") or item == "*":
                    raise ImportPolicyError(f"importing {item!r} from {name} is not allowed")
                if item not in proxy.__dict__:
                    full = f"{name}.{item}"
                    if self.auth.allows(full):
                        self._load(full)
                        proxy = self.proxy(name, refresh=True)
                    else:
                        raise ImportPolicyError(
                            f"cannot import '{item}' from '{name}': it is not available in the "
                            f"sandbox (private, a module that is not authorized, or hidden)"
                        )
            return proxy
        top = name.split(".")[0]
        if top != name:
            self._load(name)
            return self.proxy(top, refresh=True)
        return proxy

    def _refusal(self, name: str) -> str:
        allowed = ", ".join(sorted(self.auth.exact))
        return (
            f"import of '{name}' is not allowed. Authorized modules: {allowed}. "
            "Solve the task with these modules and the tools you were given."
        )

    def _load(self, name: str) -> types.ModuleType:
        try:
            return importlib.import_module(name)
        except ImportError:
            raise ImportError(f"No module named '{name}'") from None

    def proxy(self, name: str, *, refresh: bool = False) -> ModuleProxy:
        cached = self.cache.get(name)
        if cached is not None and not refresh:
            return cached
        module = self._load(name)
        members = self._members(name, module)
        proxy = ModuleProxy(name, members)
        self.cache[name] = proxy
        return proxy

    def _members(self, name: str, module: types.ModuleType) -> dict[str, Any]:
        hidden = HIDDEN_MODULE_MEMBERS.get(name, {})
        members: dict[str, Any] = {}
        public = getattr(module, "__all__", None)
        names = set(dir(module)) | (set(public) if isinstance(public, (list, tuple)) else set())
        for attr in names:
            if not isinstance(attr, str) or attr.startswith("_") or attr in hidden:
                continue
            if name == "io" and attr not in IO_ALLOWED:
                continue
            try:
                value = getattr(module, attr)
            except AttributeError:
                continue
            if isinstance(value, types.ModuleType):
                full = f"{name}.{attr}"
                if value.__name__ == full and self.auth.on_path(full):
                    members[attr] = self.proxy(full)
                continue
            if isinstance(value, type) and issubclass(value, type):
                continue  # metaclasses create classes with any dunder (ABCMeta, EnumType)
            if type(value) in _READ_ONLY:
                value = _READ_ONLY[type(value)](value)  # module-level containers: read-only views
            elif type(value).__name__ == "Context" and name == "decimal":
                value = value.copy()
            self.host.share(value)
            members[attr] = value
        self._replace(name, members)
        return members

    # -- sandbox-aware replacements -----------------------------------------------------------
    def _replace(self, name: str, members: dict[str, Any]) -> None:
        state = self.state
        if name == "time":
            members["sleep"] = self._sleep
        elif name == "itertools":
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
        elif name == "random":
            import random as _random

            rng = _random.Random()
            for attr, value in list(members.items()):
                if getattr(value, "__self__", None) is getattr(_random, "_inst", None):
                    members[attr] = getattr(rng, attr)
        elif name == "pprint":
            def pprint(obj: Any, *args: Any, **kwargs: Any) -> None:
                import pprint as _pprint

                kwargs.pop("stream", None)
                self.print_fn(_pprint.pformat(obj, *args, **kwargs))

            members.update(pprint=pprint, pp=pprint)
        elif name == "functools":
            checked = self.host.checked_decorator
            writable = self.host.writable

            def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = _functools.WRAPPER_ASSIGNMENTS,
                               updated: Any = _functools.WRAPPER_UPDATES) -> Any:
                # Only the standard attributes: `updated=("__globals__",)` would merge a host
                # function's globals into the model's namespace.
                if tuple(assigned) != _functools.WRAPPER_ASSIGNMENTS or tuple(updated) != _functools.WRAPPER_UPDATES:
                    raise PolicyError("functools.update_wrapper/wraps: only the default assigned/updated are allowed")
                return _functools.update_wrapper(writable(wrapper), wrapped)

            def wraps(wrapped: Any, assigned: Any = _functools.WRAPPER_ASSIGNMENTS,
                      updated: Any = _functools.WRAPPER_UPDATES) -> Any:
                return _functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned, updated=updated)

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

            members.update(update_wrapper=update_wrapper, wraps=wraps, singledispatch=singledispatch,
                           total_ordering=checked(_functools.total_ordering))
        elif name == "enum":
            for attr in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"):
                if attr in members:
                    members[attr] = _checked_enum(members[attr])
        elif name == "dataclasses":
            import dataclasses as _dataclasses

            writable = self.host.writable

            def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
                if cls is None:
                    return lambda c: _dataclasses.dataclass(writable(c), **kwargs)
                return _dataclasses.dataclass(writable(cls), **kwargs)

            members["dataclass"] = dataclass
        elif name == "typing":
            for attr in ("final", "no_type_check", "runtime_checkable"):
                if attr in members:
                    members[attr] = self.host.checked_decorator(members[attr])
            get_origin = members.get("get_origin")
            if get_origin is not None:
                members["get_origin"] = lambda tp: _no_metaclass(get_origin(tp))
            members.pop("clear_overloads", None)
        elif name == "calendar":
            for attr in ("c", "prmonth", "prcal"):
                members.pop(attr, None)
        elif name == "math":
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
        elif name == "operator":
            import operator as _operator

            members.update(pow=guarded_pow, ipow=guarded_pow, lshift=guarded_lshift, ilshift=guarded_lshift)

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

    def _sleep(self, seconds: Any) -> None:
        state = self.state
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            raise TypeError("time.sleep() needs a number of seconds")
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        remaining = state.deadline - _time.monotonic()
        if seconds > remaining:
            state.expire("timeout")
            raise LimitExceeded("timeout")
        _time.sleep(seconds)
        state.check_clock()


def _check_binomial(what: str, n: Any, k: Any) -> None:
    if isinstance(n, int) and isinstance(k, int) and n > 0 and k > 0:
        small = min(k, n - k) if what == "comb" else k
        bits = small * max(1, int(n).bit_length())
        if bits > MAX_INT_BITS:
            raise MemoryError(
                f"math.{what}({n}, {k}) is too large for the sandbox (about {int(bits * 0.30103):,} digits)"
            )


def _no_metaclass(value: Any) -> Any:
    return SandboxType if isinstance(value, type) and issubclass(value, type) else value


class _CheckedEnumType(type(__import__("enum").Enum)):  # type: ignore[misc]
    """The functional API (`Enum('E', names)`) takes member names from data: no '_' names,
    which would otherwise become methods (`__reduce_ex__`, ...) of the new class."""

    def __call__(cls, value: Any, names: Any = None, *args: Any, **kwargs: Any) -> Any:
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


def _check_static_name(name: Any) -> None:
    """Names for attrgetter/methodcaller: public, and none that has a runtime guard."""
    from .guards import check_attr_name
    from .policy import GUARDED_LOADS

    check_attr_name(name)
    if name.startswith("_") or name in GUARDED_LOADS:
        raise PolicyError(f"attrgetter/methodcaller cannot use the attribute {name!r}")


def _metered(state: RunState, make: Callable[..., Any]) -> Callable[..., Any]:
    def metered(*args: Any, **kwargs: Any) -> Any:
        return state.guard_iter(make(*args, **kwargs))

    metered.__name__ = metered.__qualname__ = getattr(make, "__name__", "iterator")
    return metered
