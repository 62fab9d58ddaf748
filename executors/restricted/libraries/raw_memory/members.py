"""Methods of native types checked where model code takes them (`obj.resize`, `obj.ctypes`,
`Cls.from_buffers`, ...): a C type's methods cannot be replaced, so the policy routes the loads of
these attribute names through the host guard (compiler/policy.py GUARDED_LOAD_REASONS), which
asks `MEMBER_CHECKS[name](obj, name)` for what the model gets. `getattr(obj, "resize")` takes
the same route, and attrgetter/methodcaller refuse these names. Objects of other libraries and
the model's own objects get the attribute unchanged.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from .checks import refusal
from .numpy_routes import WRAP_CHECKS

_ARROW_PARTS = ("from_buffers", "from_arrays", "from_dense", "from_sparse", "from_storage",
                "from_struct_array")
_ARROW_SPARSE = ("from_numpy", "from_dense_numpy", "from_scipy", "from_pydata_sparse",
                 "from_tensor")


def _numpy_type(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    if np is None:
        return False
    kind = obj if isinstance(obj, type) else type(obj)
    return issubclass(kind, (np.ndarray, np.generic))


def _arrow_type(obj: Any) -> type | None:
    kind = obj if isinstance(obj, type) else type(obj)
    module = getattr(kind, "__module__", "")
    return kind if type(module) is str and module.split(".")[0] == "pyarrow" else None


def _ctypes(obj: Any, name: str) -> Any:
    if _numpy_type(obj):
        raise refusal("an array's .ctypes (its address as ctypes objects)",
                      "it hands out raw addresses and ctypes types that read or write any memory",
                      "compute with the array itself")
    return getattr(obj, name)


def _resize(obj: Any, name: str) -> Any:
    method = getattr(obj, name)
    if _numpy_type(obj):
        @functools.wraps(method)
        def resize(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("refcheck", True) is not True:
                raise refusal("ndarray.resize(refcheck=False)", "it frees memory that views of "
                              "the array still point at", "use np.resize(a, shape) (a copy)")
            return method(*args, **kwargs)

        return resize
    kind = _arrow_type(obj)
    if kind is not None and "Resizable" in kind.__name__:
        raise refusal("resizing a pyarrow buffer", "arrays and memoryviews made from it would "
                      "point at the memory it frees", "allocate a new buffer instead")
    return method


def _index_wrapping(obj: Any, name: str) -> Any:
    """a.take/a.put/a.choose with mode="wrap": the indices reduced first (numpy_routes.py)."""
    method = getattr(obj, name)
    if not _numpy_type(obj) or isinstance(obj, type):
        return method
    check = WRAP_CHECKS[name]

    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        replaced = check(obj, *args, **kwargs)
        if replaced is None:
            return method(*args, **kwargs)
        args, kwargs = replaced
        if name == "choose":  # the indices are the array itself: choose on the reduced copy
            return args[0].choose(*args[1:], **kwargs)
        return method(*args[1:], **kwargs)

    return wrapped


def _arrow_parts(obj: Any, name: str) -> Any:
    """Arrays assembled from buffers and child arrays: pyarrow validates only their lengths
    here; the full validation (offsets, indices, run ends inside their children) runs before
    the model holds one, or the first kernel that reads it reads out of bounds."""
    method = getattr(obj, name)
    if _arrow_type(obj) is None or not callable(method):
        return method

    @functools.wraps(method)
    def assembled(*args: Any, **kwargs: Any) -> Any:
        made = method(*args, **kwargs)
        validate = getattr(made, "validate", None)
        if callable(validate) and _arrow_type(made) is not None:
            validate(full=True)
        return made

    return assembled


def _arrow_sparse(obj: Any, name: str) -> Any:
    kind = _arrow_type(obj)
    if kind is not None and kind.__name__.startswith("Sparse"):
        raise refusal(f"pyarrow.{kind.__name__}.{name}", "pyarrow's sparse tensors trust their "
                      "index arrays, and converting one with an index out of range writes "
                      "outside its memory", "use scipy.sparse (its indices are checked)")
    return getattr(obj, name)


MEMBER_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "ctypes": _ctypes,
    "resize": _resize,
    **dict.fromkeys(WRAP_CHECKS, _index_wrapping),
    **{name: _arrow_parts for name in _ARROW_PARTS},
    **{name: _arrow_sparse for name in _ARROW_SPARSE},
}
