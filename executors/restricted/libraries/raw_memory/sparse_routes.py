"""scipy: sparse arrays whose index arrays are read by C++ without bounds checks, and native
function pointers.

scipy.sparse's kernels (sparsetools, csgraph, the solvers) trust `indptr`, `indices` (and COO's
coordinates, DIA's offsets): an index past the shape reads or writes outside the arrays. scipy's
own constructors check only lengths, and the index arrays are public, writable attributes a step
can change afterwards (`A.indices[0] = 10**8`). So in a step every sparse array is checked in
full, without changing it, when the step's code first enters one of its methods (the operators,
`toarray`, `tocsc`, `__init__` when it ends, ...) -- itself and every sparse argument; calls
scipy makes from there on see arrays it built itself. The check is O(nnz) and vectorized.

Other libraries' native code reads the same index arrays without asking scipy: sklearn's Cython
helpers (sparsefuncs_fast, behind StandardScaler and many more) write through them unchecked. Its
estimators take sparse input through `check_array`, whose sparse half (`_ensure_sparse_format`,
called from there by its module-global name) checks the array first in a step.

`scipy.LowLevelCallable` wraps a native function pointer (a PyCapsule, a ctypes or cffi function)
that scipy's integrators and filters then call with raw pointers: refused in a step.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

from .checks import in_step, refusal, replace_in

_DEPTH = threading.local()
_WHY = "its index arrays point outside the array, and scipy's C++ kernels would follow them"


def _bad(what: str) -> Exception:
    return refusal(f"a sparse array whose {what}", _WHY, "build it from valid indices "
                   "(scipy.sparse.coo_array((data, (row, col)), shape=...) checks them)")


def _in_range(values: Any, limit: int) -> bool:
    return values.size == 0 or (int(values.min()) >= 0 and int(values.max()) < limit)


def _check_pointers(indptr: Any, rows: int, entries: int) -> None:
    if indptr.ndim != 1 or len(indptr) != rows + 1 or indptr.dtype.kind not in "iu":
        raise _bad("index pointer has the wrong length or type")
    if int(indptr[0]) != 0 or int(indptr[-1]) > entries or \
            (rows and int((indptr[1:] < indptr[:-1]).sum())):
        raise _bad("index pointer is not a non-decreasing sequence within its entries")


def check_sparse(x: Any) -> None:
    """Refuse a sparse array whose index arrays a kernel could follow out of bounds. Only
    scipy's own classes: a subclass could answer the shape or the format differently to this
    check and to scipy's kernels."""
    if not type(x).__module__.startswith("scipy.sparse."):
        raise refusal("a subclass of scipy's sparse arrays", "scipy's kernels trust what its "
                      "methods and attributes say about the arrays' shape and indices",
                      "use scipy.sparse's own classes")
    fmt = x.format
    if fmt in ("csr", "csc"):
        rows, cols = x._shape_as_2d if fmt == "csr" else x._shape_as_2d[::-1]
        indices = x.indices
        if indices.ndim != 1 or indices.dtype.kind not in "iu" or x.data.ndim != 1:
            raise _bad("index or data arrays have the wrong shape or type")
        _check_pointers(x.indptr, rows, min(len(indices), len(x.data)))
        if not _in_range(indices[: int(x.indptr[-1])], cols):
            raise _bad("column indices are outside its shape")
    elif fmt == "bsr":
        r, c = x.blocksize
        rows, cols = x.shape[0] // r, x.shape[1] // c
        indices = x.indices
        if indices.ndim != 1 or indices.dtype.kind not in "iu" or x.data.ndim != 3 or \
                x.data.shape[1:] != (r, c):
            raise _bad("index or block arrays have the wrong shape or type")
        _check_pointers(x.indptr, rows, min(len(indices), len(x.data)))
        if not _in_range(indices[: int(x.indptr[-1])], cols):
            raise _bad("block indices are outside its shape")
    elif fmt == "coo":
        coords = x.coords
        if len(coords) != len(x.shape) or any(len(c) != len(x.data) for c in coords):
            raise _bad("coordinates and data have different lengths")
        for axis, c in zip(x.shape, coords, strict=True):
            if c.dtype.kind not in "iu" or not _in_range(c, axis):
                raise _bad("coordinates are outside its shape")
    elif fmt == "dia":
        if x.data.ndim != 2 or len(x.offsets) > x.data.shape[0]:
            raise _bad("offsets outnumber its diagonals")


def _sparse_args(args: tuple, kwargs: dict) -> list:
    base = sys.modules["scipy.sparse"]._base._spbase
    return [a for a in (*args, *kwargs.values()) if isinstance(a, base)]


def _checked_method(method: Any, after: bool) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        depth = getattr(_DEPTH, "n", 0)
        if depth or not in_step():
            return method(self, *args, **kwargs)
        _DEPTH.n = 1
        try:
            if not after:
                for x in (self, *_sparse_args(args, kwargs)):
                    check_sparse(x)
            result = method(self, *args, **kwargs)
            if after:
                check_sparse(self)
            return result
        finally:
            _DEPTH.n = 0

    wrapper.codeagent_checked = True  # type: ignore[attr-defined]
    return wrapper


def _classes(sparse: Any) -> list[type]:
    concrete = [getattr(sparse, f"{fmt}_{kind}", None) for fmt in
                ("csr", "csc", "bsr", "coo", "dia", "lil", "dok") for kind in ("array", "matrix")]
    seen: list[type] = []
    for cls in concrete:
        for klass in getattr(cls, "__mro__", ()):
            if klass.__module__.startswith("scipy.sparse") and klass not in seen:
                seen.append(klass)
    return seen


def install_sparse() -> None:
    sparse = sys.modules.get("scipy.sparse")
    if sparse is None or getattr(sparse, "_base", None) is None:
        return
    for klass in _classes(sparse):
        for name, value in list(vars(klass).items()):
            public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
            if not public or not callable(value) or type(value) is not type(_classes) or \
                    getattr(value, "codeagent_checked", False) or name in _SKIP:
                continue
            setattr(klass, name, _checked_method(value, after=name == "__init__"))


def install_sklearn_input() -> None:
    validation = sys.modules.get("sklearn.utils.validation")
    if validation is not None:
        replace_in(validation, "_ensure_sparse_format", _check_first)


def _check_first(sparse_container: Any, *args: Any, **kwargs: Any) -> None:
    check_sparse(sparse_container)


# Methods that read no index array (or are how the check itself reads the shape).
_SKIP = frozenset({"__repr__", "__str__", "__len__", "__bool__", "__iter__", "__hash__",
                   "__getattr__", "__setattr__", "__init_subclass__", "__class_getitem__",
                   "__new__", "check_format", "get_shape", "set_shape", "getformat", "getnnz",
                   "count_nonzero"})


def install_scipy_callables() -> None:
    scipy = sys.modules.get("scipy")
    ccallback = sys.modules.get("scipy._lib._ccallback")
    if scipy is None or ccallback is None:
        return
    callable_type = ccallback.LowLevelCallable

    def check(*args: Any, **kwargs: Any) -> None:
        raise refusal("scipy.LowLevelCallable", "it makes a native function pointer that "
                      "scipy then calls with raw pointers", "pass a Python function")

    if not getattr(callable_type.__new__, "codeagent_checked", False):
        original = callable_type.__new__

        @functools.wraps(original)
        def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:
            if in_step():
                check()
            return original(cls, *args, **kwargs)

        __new__.codeagent_checked = True  # type: ignore[attr-defined]
        callable_type.__new__ = staticmethod(__new__)
