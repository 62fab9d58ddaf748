"""The module-level mutable state of whole packages, fingerprinted generically: no hand list.

`registry_fingerprint(packages)` walks every loaded module of those packages (numpy, pandas,
matplotlib, the stdlib modules a step may import, ...) and records, for each module attribute:
its identity (a rebinding shows), and for what is mutable — containers (dicts, lists, sets,
deques, their subclasses such as rcParams), registry objects (instances with a `__dict__`, such
as matplotlib's colormap registry, pandas' extension-dtype registry, codecs' CodecInfo entries),
classes defined there (their attributes; enum members' attributes, such as HTTPStatus.OK.phrase)
— the identities of what they hold, two levels deep. Compare two fingerprints with
`registry_changes`; what caches fill by themselves (weak containers, names with "cache") is left
out (`_volatile`), so a difference is a change someone made.

Reading runs no method of the objects it walks but `vars()` and container iteration on builtin
containers and their subclasses of library types (model-made objects are not module attributes of
these packages unless a step put them there, which is itself the change to see).
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Iterable
from typing import Any

__all__ = ["registry_fingerprint", "registry_changes", "restricted_to", "REGISTRY_PACKAGES"]

# The data packages and the stdlib set a step authorizes by default, plus `encodings`: codecs'
# registry keeps its CodecInfo entries there.
REGISTRY_PACKAGES = ("numpy", "pandas", "matplotlib", "encodings")
_DEPTH = 2
_MAX_ITEMS = 5000
_WEAK = (weakref.WeakValueDictionary, weakref.WeakKeyDictionary, weakref.WeakSet)
_ATOMS = (str, bytes, int, float, complex, bool, type(None))
_SKIP_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
               property, staticmethod, classmethod)


def _volatile(name: str) -> bool:
    """State that changes by itself: caches, random generators (tempfile's name sequence makes a
    new one in every forked process), the import system's bookkeeping."""
    return "ache" in name or "rng" in name or name in ("__warningregistry__", "__loader__", "__spec__")


_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: C types whose attributes cannot be set


def _state(value: Any, depth: int) -> Any:
    """A comparable picture of `value`: atoms as themselves (floats by repr: nan is nan), the rest
    by identity, and what mutable things hold, `depth` levels down."""
    kind = type(value)
    if kind in _ATOMS:
        return repr(value) if kind is float or kind is complex else value
    if depth <= 0 or kind in _WEAK:
        return id(value)
    if kind is dict or (kind not in _PLAIN_KINDS and isinstance(value, dict)):
        return ("dict", id(value), tuple((_key(k), _state(v, depth - 1)) for k, v in list(dict.items(value))[:_MAX_ITEMS]
                                         if not (type(k) is str and _volatile(k))))
    if kind is list or kind is tuple or (kind not in _PLAIN_KINDS and isinstance(value, (list, tuple))) \
            or kind.__name__ == "deque":
        return ("seq", id(value), tuple(_state(v, depth - 1) for v in list(value)[:_MAX_ITEMS]))
    if isinstance(value, (set, frozenset)):
        return ("set", id(value), frozenset(_key(v) for v in list(value)[:_MAX_ITEMS]))
    if isinstance(value, (type, *_SKIP_TYPES)):
        return id(value)  # a class is pictured at its home module, not wherever it is held
    try:
        own = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return id(value)
    if type(own) is not dict:
        return id(value)
    return ("object", id(value), tuple((k, _state(v, depth - 1)) for k, v in list(own.items())[:_MAX_ITEMS]
                                       if type(k) is str and not _volatile(k)))


def _key(k: Any) -> Any:
    return k if type(k) in _ATOMS else id(k)


_MUTABLE = (dict, list, set)
_PLAIN_KINDS = frozenset({dict, list, tuple, set, frozenset, types.FunctionType, types.BuiltinFunctionType, type})


def _class_state(cls: type, depth: int) -> Any:
    """A class's attributes by identity (containers among them by content); enum members' own
    attributes (value, phrase, description...). C types whose attributes cannot be set: by id."""
    if cls.__flags__ & _IMMUTABLE_TYPE:
        return id(cls)
    namespace = cls.__dict__
    attrs = tuple((k, _state(v, depth - 1) if isinstance(v, _MUTABLE) else
                   (v if type(v) in _ATOMS and type(v) is not float else id(v)))
                  for k, v in list(namespace.items()) if not _volatile(k))
    members = namespace.get("_member_map_")
    if isinstance(members, dict):
        attrs += tuple((name, id(m), _state(_own(m), 1)) for name, m in list(members.items())[:_MAX_ITEMS])
    return ("class", id(cls), attrs)


def _own(obj: Any) -> Any:
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None


def _in_packages(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def registry_fingerprint(packages: Iterable[str] = REGISTRY_PACKAGES) -> dict[str, Any]:
    """module.attribute -> picture, for every loaded module of `packages` (top-level names or
    dotted ones: "collections" covers collections.abc)."""
    wanted = tuple(p.removesuffix(".*") for p in packages)
    fp: dict[str, Any] = {}
    for modname, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType) or not _in_packages(modname, wanted):
            continue
        try:
            namespace = dict(vars(module))
        except TypeError:
            continue
        for attr, value in namespace.items():
            if type(attr) is not str or _volatile(attr) or isinstance(value, types.ModuleType):
                continue
            if isinstance(value, type):
                # a class imported from elsewhere is pictured at its home module
                fp[f"{modname}.{attr}"] = _class_state(value, _DEPTH) \
                    if getattr(value, "__module__", None) == modname else id(value)
                continue
            fp[f"{modname}.{attr}"] = _state(value, _DEPTH)
    return fp


def registry_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The entries that differ (an attribute present in both and changed, or one removed; what a
    module imported meanwhile adds is new, not changed)."""
    return sorted(k for k in before if k in after and before[k] != after[k]) + \
        sorted(f"{k} (removed)" for k in before if k not in after)


def restricted_to(fingerprint: dict[str, Any], packages: Iterable[str]) -> dict[str, Any]:
    """The entries of `fingerprint` that belong to modules of `packages` (to compare with a
    fingerprint of those packages alone)."""
    wanted = tuple(p.removesuffix(".*") for p in packages)
    return {k: v for k, v in fingerprint.items() if _in_packages(k.rsplit(".", 1)[0], wanted)}
