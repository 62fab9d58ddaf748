"""The authorized packages, imported before the first step: which modules, and the import.

A restricted runtime imports them when it is built, as the host (a worker: once it is confined,
since libraries start threads as they load and Landlock needs a single thread); an open worker
imports them once configured. Their set-up (caches, configuration, native runtimes, helper
threads) then does not land in a step, and in a worker the memory cap counts them as held, not
as the model's. Stdlib only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

__all__ = ["WARM_UP", "warm_up", "warm_up_modules"]

# Authorized libraries are imported when the executor is built, as the host (a worker: once it
# is confined), so that their set-up (caches, configuration, native runtimes, helper threads)
# does not land in a step: each third-party name authorized exactly ("scipy.stats"), the package
# of each "pkg.*" and, for "pkg.*", the modules below, which data code imports first and which
# take seconds to import (statsmodels.api: ~1.5 s on an idle core). Submodules the code imports
# later load in the step, as trusted imports (trusted_imports.py), on the step's clock.
WARM_UP: dict[str, tuple[str, ...]] = {
    "matplotlib": ("matplotlib.pyplot",),  # (also for an exact "matplotlib": figures need it)
    "scipy": ("scipy.stats",),  # (and with it optimize, linalg, special, sparse, integrate)
    "sklearn": ("sklearn.base", "sklearn.linear_model", "sklearn.model_selection",
                "sklearn.metrics", "sklearn.preprocessing"),
    "statsmodels": ("statsmodels.api", "statsmodels.formula.api"),
}


def warm_up_modules(authorized: Iterable[str]) -> list[str]:
    """The modules `warm_up` imports for this authorization, in order."""
    modules: list[str] = []
    for name in authorized:
        if type(name) is not str:
            continue
        module = name[:-2] if name.endswith(".*") else name
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or not module or "*" in module:
            continue
        extras = WARM_UP.get(top, ()) if name.endswith(".*") or top == "matplotlib" else ()
        for each in (module, *extras):
            if each not in modules:
                modules.append(each)
    return modules


def warm_up(authorized: Iterable[str]) -> list[str]:
    """Import the authorized libraries now; returns the ones that failed (missing: the executor
    reports that at construction or first import)."""
    import importlib

    failed = []
    for module in warm_up_modules(authorized):
        if module in sys.modules:
            continue
        if module == "matplotlib.pyplot":
            # no display in a sandbox: a headless backend unless the host chose one
            import os

            os.environ.setdefault("MPLBACKEND", "Agg")
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - reported where it matters (the import in a step)
            failed.append(module)
    return failed
