"""Installs the raw-memory checks into the libraries that are loaded (once each; hooks.py calls
this whenever it looks for newly loaded libraries)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from .array_class import install_array_class
from .frame_routes import install_pandas, install_pyarrow
from .mapped_files import install_mapped_files
from .numpy_routes import install_index_wrapping, install_numpy
from .protocols import install_library_protocols
from .sparse_routes import install_scipy_callables, install_sklearn_input, install_sparse

# the module whose presence triggers an installer -> the installer
_INSTALLERS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("numpy.lib._stride_tricks_impl", install_numpy),
    ("numpy", install_array_class),
    ("numpy.lib._stride_tricks_impl", install_index_wrapping),
    ("numpy.lib.stride_tricks", install_numpy),
    ("scipy.sparse", install_sparse),
    ("scipy._lib._ccallback", install_scipy_callables),
    ("sklearn.utils.validation", install_sklearn_input),
    ("pandas.core.window.rolling", install_pandas),
    ("pyarrow.lib", install_pyarrow),
    ("pyarrow", install_mapped_files),
    ("polars", install_mapped_files),
    ("pyarrow.parquet", install_mapped_files),
    ("pyarrow.feather", install_mapped_files),
    ("pandas", install_mapped_files),
)
_DONE: set[int] = set()  # (indexes into _INSTALLERS)


def install_raw_memory_checks() -> None:
    install_library_protocols()  # (each class once)
    if len(_DONE) == len(_INSTALLERS):
        return
    for index, (module, install) in enumerate(_INSTALLERS):
        if index not in _DONE and module in sys.modules:
            try:
                install()
            except Exception:  # noqa: BLE001 - another version of the library: it stays as is
                continue
            _DONE.add(index)
