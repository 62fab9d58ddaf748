"""pandas: window bounds a model's indexer computes; pyarrow: addresses turned into buffers.

pandas' rolling kernels (Cython, bounds checks off) read `values[start[i]:end[i]]` for the bounds
a `pandas.api.indexers.BaseIndexer` returns. A model's subclass can return any numbers, and
pandas checks only their lengths: in a step the values are checked too (0 <= start <= end <= n).

`pyarrow.foreign_buffer(address, size)` makes a buffer of any address; pyarrow's interchange
code calls it with the `.ptr` of whatever object it was handed. Refused in a step (and hidden
from model code, rules.py): addresses are never turned into memory in process.
"""

from __future__ import annotations

import sys
from typing import Any

from .checks import refusal, refused, replace_in


def _window_check(self: Any, start: Any, end: Any, num_vals: int) -> None:
    np = sys.modules["numpy"]
    start, end = np.asarray(start), np.asarray(end)
    if start.dtype.kind not in "iu" or end.dtype.kind not in "iu":
        raise refusal("window bounds that are not integers", "pandas' kernels index with them")
    if start.size and (int(start.min()) < 0 or int(end.max()) > num_vals or
                       bool((start > end).any())):
        raise refusal("window bounds outside the data (a BaseIndexer's get_window_bounds)",
                      "pandas' rolling kernels read values[start:end] without bounds checks",
                      f"return bounds with 0 <= start <= end <= {num_vals}")


def install_pandas() -> None:
    rolling = sys.modules.get("pandas.core.window.rolling")
    base = getattr(rolling, "BaseWindow", None)
    if base is None:
        return
    original = base.__dict__.get("_check_window_bounds")
    if original is None or getattr(original, "codeagent_checked", False):
        return
    from .checks import in_step

    def _check_window_bounds(self: Any, start: Any, end: Any, num_vals: int) -> None:
        original(self, start, end, num_vals)
        if in_step():
            _window_check(self, start, end, num_vals)

    _check_window_bounds.codeagent_checked = True  # type: ignore[attr-defined]
    base._check_window_bounds = _check_window_bounds


_FOREIGN = refused("pyarrow.foreign_buffer (a buffer at an address)",
                   "it reads or writes the memory at any address",
                   "make buffers from data: pa.py_buffer(b), pa.array(...)")


def install_pyarrow() -> None:
    for name in ("pyarrow", "pyarrow.lib"):
        module = sys.modules.get(name)
        if module is not None:
            replace_in(module, "foreign_buffer", _FOREIGN)
