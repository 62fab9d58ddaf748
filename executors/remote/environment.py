"""The host's settings of native numerical runtimes, for a worker's environment.

A worker starts from an environment of its own, nothing of the host's, except what decides how
the libraries compute: OpenBLAS's kernel choice (`OPENBLAS_CORETYPE`: another kernel rounds
differently, and scipy's `shgo` then walks elsewhere), thread counts, numpy's CPU-feature
dispatch. With the host's values a worker prints the digits the host's CPython prints; without
them it would pick its own (the machine's widest kernels, one thread). Names only from this
list, values short: nothing else of the host's environment reaches the worker. Stdlib only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["NATIVE_PREFIXES", "native_settings"]

# OpenBLAS (and its GotoBLAS names), OpenMP (GNU, Intel), MKL, BLIS, numexpr, numpy's dispatch.
NATIVE_PREFIXES = ("OPENBLAS_", "GOTOBLAS_", "GOTO_", "OMP_", "GOMP_", "KMP_", "MKL_", "BLIS_",
                   "NUMEXPR_", "NPY_")
NATIVE_NAMES = frozenset({"VECLIB_MAXIMUM_THREADS", "POLARS_MAX_THREADS", "RAYON_NUM_THREADS"})
_MAX_VALUE = 256


def native_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host's variables that native numerical runtimes read (see the module docstring)."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items()
            if (name.startswith(NATIVE_PREFIXES) or name in NATIVE_NAMES)
            and len(value) <= _MAX_VALUE and "\0" not in value}
