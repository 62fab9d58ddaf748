"""numpy's array constructor over a buffer, checked: model code's `np.ndarray` is a stand-in.

`np.ndarray(shape, dtype, buffer, offset, strides)` checks offset and strides against the
buffer's length, except when that length is 0: numpy then takes the length from the shape
(`PyArray_CheckStrides`), so any offset from an empty buffer (`b""` sits at a known address)
reads or writes any byte of the process. `ndarray` is a C type whose constructor cannot be
replaced, so model code gets a stand-in: a subclass of it, named and printed like it, whose
metaclass checks a buffer's bounds before numpy sees them and answers isinstance/issubclass
for every real array (`isinstance(a, np.ndarray)`, `type(a) is np.ndarray` and subclassing work
as before: the sandbox's `type()` answers with the stand-in too, host/guard.py
CLASS_SUBSTITUTES). np.recarray and np.char.chararray, Python classes that call the constructor
with a buffer, get the same check.
"""

from __future__ import annotations

import functools
import operator
import sys
from typing import Any

from ...host.guard import CLASS_SUBSTITUTES
from .checks import in_step, refusal

_NDARRAY = ("shape", "dtype", "buffer", "offset", "strides", "order")


def _bound(names: tuple[str, ...], args: tuple, kwargs: dict) -> dict:
    bound = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    return bound


def check_buffer_view(np: Any, shape: Any, dtype: Any, buffer: Any, offset: Any,
                      strides: Any) -> tuple:
    """(shape, offset, strides) normalized, after refusing a view that leaves `buffer`."""
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
        tuple(operator.index(n) for n in shape)
    offset = operator.index(offset or 0)
    strides = None if strides is None else tuple(operator.index(s) for s in strides)
    itemsize = np.dtype(dtype if dtype is not None else float).itemsize
    length = memoryview(buffer).nbytes
    if strides is None or any(n <= 0 for n in shape):
        return shape, offset, strides  # (numpy's own check holds without strides)
    low = high = offset
    for n, stride in zip(shape, strides, strict=False):
        reach = (n - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    if offset < 0 or low < 0 or high + itemsize > length:
        raise refusal("an array over a buffer with these offset and strides",
                      f"it would reach outside the buffer's {length} bytes",
                      "use np.frombuffer(buffer, dtype) and slice or reshape the result")
    return shape, offset, strides


def _checked_call(np: Any, names: tuple[str, ...], buffer_name: str, args: tuple,
                  kwargs: dict) -> dict:
    bound = _bound(names, args, kwargs)
    if bound.get(buffer_name) is not None and in_step():
        shape, offset, strides = check_buffer_view(
            np, bound.get("shape"), bound.get("dtype"), bound[buffer_name], bound.get("offset"),
            bound.get("strides"))
        bound.update(shape=shape, offset=offset, strides=strides)
    return bound


def make_stand_in(np: Any) -> type:
    real = np.ndarray

    class _CheckedArrayType(type):
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, real) if cls is stand_in else type.__instancecheck__(cls, obj)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return issubclass(sub, real) if cls is stand_in else type.__subclasscheck__(cls, sub)

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if cls is not stand_in and any("__new__" in vars(k) for k in
                                           cls.__mro__[:cls.__mro__.index(stand_in)]):
                return type.__call__(cls, *args, **kwargs)  # (its __new__ makes arrays by checked routes)
            if len(args) > len(_NDARRAY):
                raise TypeError(f"ndarray() takes at most {len(_NDARRAY)} arguments")
            bound = _checked_call(np, _NDARRAY, "buffer", args, kwargs)
            return real(**bound) if cls is stand_in else type.__call__(cls, **bound)

    class ndarray(real, metaclass=_CheckedArrayType):  # noqa: N801 - the name model code knows
        __slots__ = ()
        __doc__ = real.__doc__

    stand_in = ndarray
    ndarray.__module__, ndarray.__qualname__ = "numpy", "ndarray"
    return ndarray


def _checked_new(np: Any, cls: type, names: tuple[str, ...], buffer_name: str) -> None:
    original = cls.__dict__["__new__"]
    if getattr(original, "codeagent_checked", False):
        return

    @functools.wraps(original)
    def __new__(subtype: Any, *args: Any, **kwargs: Any) -> Any:
        return original(subtype, **_checked_call(np, names, buffer_name, args, kwargs))

    __new__.codeagent_checked = True  # type: ignore[attr-defined]
    cls.__new__ = __new__


def install_array_class() -> None:
    np = sys.modules.get("numpy")
    if np is None or np.ndarray in CLASS_SUBSTITUTES:
        return
    CLASS_SUBSTITUTES[np.ndarray] = make_stand_in(np)
    _checked_new(np, np.recarray, ("shape", "dtype", "buf", "offset", "strides"), "buf")
    chararray = getattr(getattr(np, "char", None), "chararray", None)
    if chararray is not None:
        _checked_new(np, chararray, ("shape", "itemsize", "unicode", "buffer", "offset",
                                     "strides"), "buffer")
