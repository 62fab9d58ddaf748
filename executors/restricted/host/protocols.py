"""The raw-memory protocols: attributes through which a library takes memory from an object.

numpy reads `__array_interface__` (a dict whose "data" is an address, or a buffer and an offset
it does not check), `__array_struct__` and `__array__`; pyarrow, polars and pandas read the Arrow
C interfaces, `__dlpack__` and `__dataframe__` (buffers given by their `.ptr`). numpy looks these
up on the *instance*: an instance dict or a `__getattr__` answers them. A model's object that
answered with an address of its choosing would hand any byte of the host to numpy.

So no object the model made answers them: `shield(cls)` gives a class a data descriptor for each
name (which wins over the instance dict, and answers what a base class defines, or nothing) and
makes its own `__getattr__` answer no dunder name. Every class the model defines is shielded as
it is made (guard.py); so are the library classes that turn data into attributes (argparse's
Namespace, scipy's OptimizeResult, scikit-learn's Bunch: libraries/raw_memory/protocols.py).
The policy already refuses defining these names in a class body, and setattr/keyword arguments
with underscore names.
"""

from __future__ import annotations

import functools
from typing import Any

RAW_MEMORY_PROTOCOLS: tuple[str, ...] = (
    "__array_interface__", "__array_struct__", "__array__", "__array_priority__",
    "__array_ufunc__", "__array_function__", "__array_wrap__", "__cuda_array_interface__",
    "__dlpack__", "__dlpack_device__", "__arrow_c_array__", "__arrow_c_stream__",
    "__arrow_c_schema__", "__arrow_c_device_array__", "__arrow_c_device_stream__",
    "__arrow_array__", "__dataframe__", "__buffer__", "__release_buffer__",
)
_NOTHING = object()


class Shield:
    """A data descriptor for one protocol name: the value a base class defines, never one from
    the instance dict or a `__getattr__`."""

    __slots__ = ("name", "inherited")

    def __init__(self, name: str, inherited: Any) -> None:
        self.name, self.inherited = name, inherited

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        inherited = self.inherited
        if inherited is _NOTHING:
            raise AttributeError(self.name)
        get = getattr(type(inherited), "__get__", None)
        return inherited if get is None else get(inherited, obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"'{self.name}' cannot be set in the sandbox")

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"'{self.name}' cannot be deleted in the sandbox")


def _inherited(cls: type, name: str) -> Any:
    for klass in cls.__mro__[1:]:
        if name in vars(klass):
            value = vars(klass)[name]
            return value.inherited if type(value) is Shield else value
    return _NOTHING


def _is_data_descriptor(value: Any) -> bool:
    kind = type(value)
    return hasattr(kind, "__get__") and (hasattr(kind, "__set__") or hasattr(kind, "__delete__"))


def dunder(name: Any) -> bool:
    return type(name) is str and name[:2] == "__" and name[-2:] == "__"


def _no_dunders(getattr_: Any) -> Any:
    @functools.wraps(getattr_)
    def __getattr__(self: Any, name: str) -> Any:
        if dunder(name):
            raise AttributeError(name)
        return getattr_(self, name)

    __getattr__.codeagent_shielded = True  # type: ignore[attr-defined]
    return __getattr__


def shield(cls: type) -> type:
    """Keep `cls`'s instances from answering the raw-memory protocols (see the module doc)."""
    own = vars(cls)
    for name in RAW_MEMORY_PROTOCOLS:
        if name in own:
            continue  # (the class's own: a library's; the policy refuses these in model code)
        inherited = _inherited(cls, name)
        if inherited is not _NOTHING and _is_data_descriptor(inherited) and type(inherited) is not Shield:
            continue  # a base's data descriptor already wins over the instance dict
        type.__setattr__(cls, name, Shield(name, inherited))
    getattr_ = own.get("__getattr__")
    if callable(getattr_) and not getattr(getattr_, "codeagent_shielded", False):
        type.__setattr__(cls, "__getattr__", _no_dunders(getattr_))
    return cls
