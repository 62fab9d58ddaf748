"""numpy: views made from explicit strides must stay inside the memory of the array they view.

`np.lib.stride_tricks.as_strided(x, shape, strides)` builds a view with no bounds check at all:
with a stride of `address - x's address` it reads or writes any byte of the process. In a step
the arguments are checked first: the view's lowest and highest byte must lie inside the memory
the base array owns (found by walking `.base` down to the array that owns the data, or to the
array numpy made, with its own check, over a buffer); for dtypes holding Python objects every
element must also start on an element boundary (a pointer made of half of two pointers is a
forged object). The shape and strides checked are the ones used (a model object answering
differently the second time changes nothing). `sliding_window_view` and numpy's own callers pass
through the same check and always pass it.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

from .checks import refusal, replace_in

_WHY = "the view would reach memory outside the array it is made from"
_INSTEAD = ("use np.lib.stride_tricks.sliding_window_view, reshape, slicing or np.broadcast_to, "
            "or strides that stay inside the array")


def _ints(values: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in tuple(values))
    except TypeError:
        raise TypeError(f"as_strided: {what} must be a sequence of integers") from None


def _data(array: Any) -> int:
    return array.__array_interface__["data"][0]


def memory_of(array: Any) -> tuple[int, int]:
    """[low, high) of the memory `array`'s data lives in, as far as numpy vouches for it."""
    np = sys.modules["numpy"]
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    low, high = _extent(_data(root), root.shape, root.strides, root.itemsize)
    return low, high


def _extent(data: int, shape: tuple, strides: tuple, itemsize: int) -> tuple[int, int]:
    if any(n == 0 for n in shape):
        return data, data
    low = high = data
    for n, stride in zip(shape, strides, strict=True):
        reach = (n - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + itemsize


def check_view(x: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
    """Refuse a view of `x` with these shape and strides that leaves x's memory."""
    if len(shape) != len(strides):
        raise ValueError("as_strided: shape and strides must have the same length")
    if any(n < 0 for n in shape):
        raise ValueError("as_strided: negative dimensions are not allowed")
    data, itemsize = _data(x), x.dtype.itemsize
    low, high = _extent(data, shape, strides, itemsize)
    if low == high:
        return  # an empty view touches no memory
    base_low, base_high = memory_of(x)
    if low < base_low or high > base_high:
        raise refusal("np.lib.stride_tricks.as_strided with these strides", _WHY, _INSTEAD)
    if x.dtype.hasobject and ((data - base_low) % itemsize or
                              any(s % itemsize for s in strides)):
        raise refusal("a strided view of Python objects that does not step by whole elements",
                      "it would read pointers made of parts of two objects", _INSTEAD)


def _as_strided_check(x: Any, shape: Any = None, strides: Any = None, subok: bool = False,
                      writeable: bool = True) -> tuple[tuple, dict]:
    np = sys.modules["numpy"]
    x = np.array(x, copy=None, subok=subok)
    shape = x.shape if shape is None else _ints(shape, "shape")
    strides = x.strides if strides is None else _ints(strides, "strides")
    check_view(x, shape, strides)
    return (x,), {"shape": shape, "strides": strides, "subok": subok, "writeable": writeable}


def install_numpy() -> None:
    for name in ("numpy.lib._stride_tricks_impl", "numpy.lib.stride_tricks"):
        module = sys.modules.get(name)
        if module is not None:
            replace_in(module, "as_strided", _as_strided_check)


# -- index wrapping: numpy's mode="wrap" subtracts the length until an index fits, one step at
# a time (np.take(a, [2**62], mode="wrap") runs for years in C, where no deadline reaches it).
# In a step the indices are reduced first (np.mod: the same positions), then numpy runs. The
# mode, axis and choices are read once and numpy gets what was read: numpy also takes the mode
# as an integer (1 is "wrap") or anything with __index__, and a model's str subclass or __index__
# could answer "not wrap" to the check and "wrap" to numpy.
_MODES = {0: "clip", 1: "wrap", 2: "raise"}


def _mode(mode: Any) -> Any:
    if type(mode) is str or isinstance(mode, bool):  # (numpy refuses a bool itself)
        return mode
    if isinstance(mode, str):
        return str.__getitem__(mode, slice(None))  # an exact str copy of its characters
    number = int.__int__(mode) if isinstance(mode, int) else operator.index(mode)
    return _MODES.get(number, number)


def _wrapped(indices: Any, length: int) -> Any:
    np = sys.modules["numpy"]
    indices = np.asarray(indices)
    if indices.dtype.kind in "iu" and length > 0:
        return np.mod(indices, length)
    return indices


def _take_check(a: Any, indices: Any, axis: Any = None, out: Any = None,
                mode: Any = "raise") -> tuple[tuple, dict] | None:
    if type(mode) is str and mode != "wrap":
        return None
    mode = _mode(mode)
    np = sys.modules["numpy"]
    arr = np.asarray(a)
    if axis is not None:
        axis = np.lib.array_utils.normalize_axis_index(operator.index(axis), arr.ndim)
    if mode == "wrap":
        indices = _wrapped(indices, arr.size if axis is None else arr.shape[axis])
    return (a, indices), {"axis": axis, "out": out, "mode": mode}


def _put_check(a: Any, ind: Any, v: Any, mode: Any = "raise") -> tuple[tuple, dict] | None:
    if type(mode) is str and mode != "wrap":
        return None
    mode = _mode(mode)
    if mode == "wrap":
        ind = _wrapped(ind, sys.modules["numpy"].size(a))
    return (a, ind, v), {"mode": mode}


def _choose_check(a: Any, choices: Any, out: Any = None,
                  mode: Any = "raise") -> tuple[tuple, dict] | None:
    if type(mode) is str and mode != "wrap":
        return None
    mode, choices = _mode(mode), tuple(choices)  # (numpy's count of choices is the one used)
    if mode == "wrap":
        a = _wrapped(a, len(choices))
    return (a, choices), {"out": out, "mode": mode}


WRAP_CHECKS = {"take": _take_check, "put": _put_check, "choose": _choose_check}


def install_index_wrapping() -> None:
    numpy = sys.modules.get("numpy")
    for name, check in WRAP_CHECKS.items():
        if numpy is not None:
            replace_in(numpy, name, check)
