"""Library state that would call back into host code after the step: refused, or put back.

A step shares the host's libraries, and some of their state outlives a call: a registry holds
what a step registered and calls it later, in the host's own use of the library (a polars
namespace on every DataFrame, a pyarrow extension type or compute function, a scipy.fft backend,
sympy's printing hook in `sys.displayhook`). The rule: a step's changes to library state never
survive into host code. What has no way back is refused (`REFUSED_MEMBERS`, merged into
rules.py's table); what can be put back is a row of state.py's table (`REGISTRY_ROWS`),
snapshotted before each step and restored after it. Stdlib only: libraries via sys.modules.
"""

from __future__ import annotations

import sys
from typing import Any

_REGISTRY = ("a process-wide registry of the library: what a step registers there would be "
             "called by the host's own code after the step, and nothing can take it out again")
_POOL = "the library's memory allocator for the whole process (the host's arrays too)"
_NATIVE_PLUGIN = ("it loads a native library from a path (plugins run native code the guard "
                  "cannot see)")
_SESSION = "it starts an interactive session (IPython, exec of set-up code) in the host"

REFUSED_MEMBERS: dict[str, dict[str, str]] = {
    "polars.api": {name: _REGISTRY for name in (
        "register_dataframe_namespace", "register_lazyframe_namespace",
        "register_series_namespace", "register_expr_namespace")},
    "polars.plugins": {"*": _NATIVE_PLUGIN},
    "pyarrow.compute": {name: _REGISTRY for name in (
        "register_scalar_function", "register_tabular_function", "register_aggregate_function",
        "register_vector_function")},
    "scipy.fft": {"set_global_backend": _REGISTRY, "register_backend": _REGISTRY},
    "sympy": {"init_session": _SESSION},
    "sympy.interactive": {"init_session": _SESSION},
    "sympy.interactive.session": {"*": _SESSION},
    **{module: {"register_extension_type": _REGISTRY, "unregister_extension_type": _REGISTRY,
                "set_memory_pool": _POOL, "log_memory_allocations": _POOL,
                "jemalloc_set_decay_ms": _POOL,
                "enable_signal_handlers": "it changes how the host process handles signals",
                "foreign_buffer": "it makes a buffer of any address (raw memory)"}
       for module in ("pyarrow", "pyarrow.lib")},
}


def _sympy_state(sympy: Any) -> tuple:
    printer = sys.modules.get("sympy.printing.printer")
    parameters = sys.modules.get("sympy.core.parameters")
    settings = getattr(getattr(printer, "Printer", None), "_global_settings", None)
    params = getattr(parameters, "global_parameters", None)
    return (sys.displayhook,
            dict(settings) if type(settings) is dict else None,
            tuple(getattr(params, name, None) for name in ("evaluate", "distribute", "exp_is_pow")))


def _sympy_put_back(sympy: Any, saved: tuple) -> None:
    displayhook, settings, params = saved
    if sys.displayhook is not displayhook:
        sys.displayhook = displayhook
    printer = sys.modules.get("sympy.printing.printer")
    current = getattr(getattr(printer, "Printer", None), "_global_settings", None)
    if type(current) is dict and settings is not None:
        current.clear()
        current.update(settings)
    parameters = sys.modules.get("sympy.core.parameters")
    holder = getattr(parameters, "global_parameters", None)
    for name, value in zip(("evaluate", "distribute", "exp_is_pow"), params, strict=True):
        if holder is not None and value is not None and getattr(holder, name, None) is not value:
            setattr(holder, name, value)


# (module, what, snapshot, restore): rows of state.py's SETTINGS
REGISTRY_ROWS: tuple[tuple, ...] = (
    ("sympy", "printing set-up (init_printing: sys.displayhook, global printer settings) and "
     "global parameters (evaluate, distribute)", _sympy_state, _sympy_put_back),
)
