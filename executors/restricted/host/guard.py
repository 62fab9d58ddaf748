"""Keeps model code from changing the host's objects (one HostGuard per sandbox namespace).

Model code shares real classes, functions and module-level objects with the host process
(`json.JSONEncoder`, `decimal.DefaultContext`, `typing.T`, ...). Writing to them would change
the host's behaviour, so attribute writes, `__init__` calls and class decorators are checked:
model code may change what it created (its classes, functions and instances), nothing else.
"""

from __future__ import annotations

import abc
import builtins
import itertools
import operator
import types
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any

from ..compiler.names import STEP_FILE_PREFIX
from ..compiler.policy import PUBLIC_UNDERSCORE_NAMES, is_private_name
from ..guards.errors import PolicyError
from ..guards.operations import check_attr_name, exact_name
from .protocols import dunder, shield

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), frozenset, range)
_SNAPSHOT_TYPES = (list, dict, set, bytearray)


def _refuse_write(obj: Any) -> PolicyError:
    what = getattr(obj, "__qualname__", None) or type(obj).__name__
    return PolicyError(
        f"changing '{what}' is not allowed: it belongs to the host, not to your code; "
        "make your own object or subclass instead"
    )


# Host classes that model code must only see as a checked stand-in (filled by module_patches:
# enum.Enum -> its checked subclass); `cls.mro()` answers with the stand-ins.
CLASS_SUBSTITUTES: dict[type, type] = {}


class _ClassRegistry:
    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}

    def add(self, cls: type) -> None:
        key = id(cls)
        self._refs[key] = weakref.ref(cls, lambda _r, key=key, refs=self._refs: refs.pop(key, None))

    def __contains__(self, cls: object) -> bool:
        ref = self._refs.get(id(cls))
        return ref is not None and ref() is cls


class _SandboxTypeMeta(type):
    """Makes `type` in the sandbox work for `type(x)` and `isinstance(c, type)` while refusing
    the 3-argument form (which would create classes with any dunder, unchecked)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return isinstance(sub, type) and issubclass(sub, type)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) != 1 or kwargs:
            raise PolicyError(
                "type() takes exactly one argument here: creating classes with "
                "type(name, bases, dict) is not allowed; use a class statement"
            )
        return sandbox_type_of(args[0])

    def __repr__(cls) -> str:
        return "<class 'type'>"


class SandboxType(metaclass=_SandboxTypeMeta):
    pass


SandboxType.__name__ = SandboxType.__qualname__ = "type"


def sandbox_type_of(obj: Any) -> Any:
    """type(obj), except that `type` itself and every metaclass read as the sandbox `type`."""
    kind = type(obj)
    return SandboxType if issubclass(kind, type) else CLASS_SUBSTITUTES.get(kind, kind)


def unchanged(container: Any, saved: Any) -> bool:
    """`container` holds the very objects `saved` holds (exact builtin containers; C only: no
    `__eq__` or `__hash__` of what they hold runs)."""
    t = type(container)
    if t is not dict and issubclass(t, dict) and type(saved) is dict:  # a registry (dict subclass)
        return dict.__len__(container) == len(saved) and \
            all(map(operator.is_, dict.keys(container), saved)) and \
            all(map(operator.is_, dict.values(container), saved.values()))
    if t is not type(saved) or len(container) != len(saved):
        return False
    if t is list:
        return all(map(operator.is_, container, saved))
    if t is dict:
        return all(map(operator.is_, container, saved)) and \
            all(map(operator.is_, container.values(), saved.values()))
    if t is set:
        return sorted(map(id, container)) == sorted(map(id, saved))
    return t is bytearray and container == saved  # (bytes compare in C)


class FunctionDict(MutableMapping):
    """A model function's `__dict__`: its attributes, but no dunder name (a function answers
    numpy's `__array_interface__` from there, protocols.py)."""

    __slots__ = ("_d",)

    def __init__(self, d: dict) -> None:
        self._d = d

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        if dunder(key):
            raise PolicyError(f"the attribute {key!r} cannot be set in the sandbox")
        self._d[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._d[key]

    def __iter__(self) -> Any:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return repr(self._d)


class HostGuard:
    def __init__(self, own_functions: Any = ()) -> None:
        # host-made wrappers that stand for the model's functions (its generator functions)
        self.own_functions = own_functions
        # Classes the model's code defined, by id (a WeakSet would compare with the classes' own
        # __eq__/__hash__, which model code controls).
        self.classes = _ClassRegistry()
        self.shared: set[int] = set()  # ids of module-level host objects (kept alive by modules)
        # Mutable containers held by host classes (TextWrapper.unicode_whitespace_trans, ...):
        # model code can reach them, so after every step they are put back as they were.
        self._snapshots: list[tuple[Any, Any]] = []
        self._snapshot_ids: set[int] = set()
        # For the check after every step, in one C-level pass: each container's live views (a
        # list itself, a dict's keys and values views) and, flat, the objects they held.
        self._live: list[Any] = []
        self._held: list[Any] = []
        self._lengths: list[int] = []
        self._bytearrays: list[tuple[bytearray, bytearray]] = []
        self._build_class = builtins.__build_class__
        # attribute name -> check(obj, name) -> what model code gets: methods of native types
        # checked where they are taken (set by the namespace: libraries/raw_memory/members.py)
        self.member_checks: dict[str, Callable[[Any, str], Any]] = {}

    # -- what model code created ------------------------------------------------------------------
    def build_class(self, func: Callable[..., Any], name: str, *bases: Any, **kwargs: Any) -> type:
        cls = self._build_class(func, name, *bases, **kwargs)
        if isinstance(cls, type) and issubclass(cls, type):
            # e.g. via typing.Type[int]'s __mro_entries__: a real metaclass makes classes
            # with any namespace when called.
            raise PolicyError("defining metaclasses (subclasses of type) is not allowed")
        self.classes.add(cls)
        return shield(cls)  # (no raw-memory protocol answered by the model's objects)

    def share(self, value: Any) -> None:
        # (exact types: an IntEnum member or a str subclass is an int/str with attributes)
        if type(value) not in _IMMUTABLE:
            self.shared.add(id(value))
        if isinstance(value, type):
            for klass in value.__mro__:
                if klass is object or klass.__module__ == "builtins":
                    continue
                attributes = vars(klass)
                # what the class holds is the host's too: its singletons and an enum's members
                # (`HTTPStatus.OK.phrase = ...` would change every host use of it); the
                # containers under public names are put back after each step (model code cannot
                # name the others: `klass._x` is refused on host classes)
                members = attributes.get("_member_map_")
                for name, item in attributes.items():
                    if type(item) not in _IMMUTABLE:
                        self.shared.add(id(item))
                    if type(name) is str and not name.startswith("_"):
                        self.snapshot(item)
                if type(members) is dict:
                    for item in members.values():
                        self.shared.add(id(item))

    def snapshot(self, container: Any) -> None:
        """Put `container` back after every step if it changed: a host's list, dict, set or
        bytearray, or a dict subclass (a registry: matplotlib's colour table, an RcParams)."""
        kind = type(container)
        if not (kind in _SNAPSHOT_TYPES or issubclass(kind, dict)) or id(container) in self._snapshot_ids:
            return
        self._snapshot_ids.add(id(container))
        saved = dict(dict.items(container)) if kind is not dict and issubclass(kind, dict) else kind(container)
        self._snapshots.append((container, saved))
        if kind is bytearray:
            self._bytearrays.append((container, saved))  # (compared whole: bytes compare in C)
            return
        views = (dict.keys(container), dict.values(container)) if issubclass(kind, dict) else (container,)
        for view in views:
            self._live.append(view)
            self._held.extend(view)
            self._lengths.append(len(view))

    def share_nested(self, container: Any) -> None:
        """A module-level container is handed over as a read-only view, but what it holds may
        be mutable (matplotlib's style library holds an RcParams per style): those are put back
        after every step."""
        items = dict.values(container) if type(container) is dict else container
        for item in items:
            self.snapshot(item)

    def restore(self) -> None:
        """Undo changes the step made to host classes' containers (after the step). Compared by
        identity, never `==`: a model object put in a host container must not run there. The
        usual case, nothing changed, is one pass in C over every container's references."""
        if list(map(len, self._live)) == self._lengths and \
                all(map(operator.is_, itertools.chain.from_iterable(self._live), self._held)) and \
                (not self._bytearrays or all(c == s for c, s in self._bytearrays)):
            return
        for container, saved in self._snapshots:
            if unchanged(container, saved):
                continue
            kind = type(container)
            if kind is dict or kind is set:
                container.clear()
                container.update(saved)
            elif kind in _SNAPSHOT_TYPES:
                container[:] = saved
            else:  # a dict subclass: emptied in C (no key of the model's is hashed), then refilled
                dict.clear(container)  # through its own __setitem__ (host keys: its caches follow),
                for key, value in saved.items():  # then with the very objects it held
                    container[key] = value
                    dict.__setitem__(container, key, value)

    def writable(self, obj: Any) -> Any:
        """`obj.attr = v` → `_w(obj).attr = v`."""
        if isinstance(obj, type):
            if obj in self.classes:
                return obj
            raise _refuse_write(obj)
        if isinstance(obj, types.FunctionType):
            if self._own_function(obj) or obj in self.own_functions:
                return obj
            raise _refuse_write(obj)
        if id(obj) in self.shared or isinstance(obj, types.ModuleType):
            raise _refuse_write(obj)
        if isinstance(obj, types.GenericAlias) or type(obj).__module__ == "typing":
            raise _refuse_write(obj)  # typing aliases forward attribute writes to their origin
        return obj

    @staticmethod
    def _own_function(fn: types.FunctionType) -> bool:
        return fn.__code__.co_filename.startswith(STEP_FILE_PREFIX)

    def vars(self, *args: Any) -> Any:
        if len(args) != 1:
            raise PolicyError("vars() needs an object of your own class: vars(obj)")
        return self.attr(args[0], "__dict__")

    # -- guarded attribute loads ------------------------------------------------------------------
    def attr(self, obj: Any, name: str) -> Any:
        if name == "__class__":
            return sandbox_type_of(obj)
        if name == "__dict__":
            if self.owns(obj):
                return obj.__dict__  # (a dunder key there is shadowed: see protocols.py)
            if isinstance(obj, types.FunctionType) and self._own_function(obj):
                return FunctionDict(obj.__dict__)
            raise PolicyError("'__dict__' is only available on objects of your own classes")
        check = self.member_checks.get(name)
        if check is not None:
            return check(obj, name)
        value = getattr(obj, name)
        if name == "__init__":
            bound_to = getattr(value, "__self__", None)
            if bound_to is not None:  # x.__init__ / super().__init__: bound to its object
                self.writable(bound_to)
                return value
            if isinstance(obj, type) and obj in self.classes:
                return value
            writable = self.writable

            def init(instance: Any, *args: Any, **kwargs: Any) -> Any:
                return value(writable(instance), *args, **kwargs)

            return init
        if name == "mro":
            def mro() -> list:
                return [CLASS_SUBSTITUTES.get(c, c) for c in value()]

            return mro
        owner = getattr(value, "__self__", None)
        if name == "register" and (isinstance(obj, abc.ABCMeta) or isinstance(owner, abc.ABCMeta)):
            raise PolicyError(
                "registering virtual subclasses is not allowed: it changes isinstance() for the "
                "whole process; subclass the ABC instead"
            )
        return value

    # -- single-underscore names: only on what the model's code created ---------------------------
    def owns(self, obj: Any) -> bool:
        """obj is a class the model defined, or an instance of one."""
        classes = self.classes
        return (obj in classes) if isinstance(obj, type) else (type(obj) in classes)

    def private_attr(self, obj: Any, name: str) -> Any:
        """`obj._x`: allowed where `_x` was defined by the model's own code (its instance
        attributes, or its classes' bodies), so host internals stay out of reach."""
        if name in PUBLIC_UNDERSCORE_NAMES:
            return getattr(obj, name)
        if self.owns(obj):
            if not isinstance(obj, type):
                own = getattr(obj, "__dict__", None)
                if own is not None and name in own:
                    return getattr(obj, name)
                mro = type(obj).__mro__
            else:
                mro = obj.__mro__
            classes = self.classes
            for klass in mro:
                if name in vars(klass):
                    if klass in classes:
                        return getattr(obj, name)
                    break
            if not hasattr(obj, name):
                raise AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")
        raise PolicyError(
            f"the attribute '{name}' is not allowed here: attributes starting with '_' are only "
            "available on objects your own code defines"
        )

    def private_writable(self, obj: Any) -> Any:
        if self.owns(obj):
            return obj
        raise PolicyError(
            "setting attributes starting with '_' is only allowed on objects of your own classes"
        )

    def setattr(self, obj: Any, name: Any, value: Any) -> None:
        name = exact_name(name)
        if is_private_name(name):
            setattr(self.private_writable(obj), name, value)
            return
        check_attr_name(name, write=True)
        setattr(self.writable(obj), name, value)

    def delattr(self, obj: Any, name: Any) -> None:
        name = exact_name(name)
        if is_private_name(name):
            delattr(self.private_writable(obj), name)
            return
        check_attr_name(name, write=True)
        delattr(self.writable(obj), name)

    # -- decorators that change their argument -----------------------------------------------------
    def checked_decorator(self, fn: Callable[..., Any], position: int = 0) -> Callable[..., Any]:
        """A decorator that changes the object it is given: only for the model's own objects."""
        writable = self.writable

        def decorator(*args: Any, **kwargs: Any) -> Any:
            if len(args) > position:
                writable(args[position])
            elif kwargs:
                writable(next(iter(kwargs.values())))
            return fn(*args, **kwargs)

        decorator.__name__ = getattr(fn, "__name__", "decorator")
        decorator.__doc__ = getattr(fn, "__doc__", None)
        return decorator
