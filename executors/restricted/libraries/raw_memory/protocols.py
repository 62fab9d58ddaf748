"""Library classes that turn data into attributes, shielded like the model's own classes.

`argparse.Namespace` (an option's `dest`), scipy's result objects (`OptimizeResult`: a dict whose
keys are attributes), scikit-learn's and statsmodels' `Bunch` (the same): a model's dict key
`"__array_interface__"` would become the attribute numpy reads an address from. They get the
shield of host/protocols.py: the raw-memory protocols answer only what the class defines. (The
names are never an attribute of these classes, so the host's own use is unchanged.)
"""

from __future__ import annotations

import sys

from ...host.protocols import shield

# module -> the classes in it that turn data into attributes
ATTRIBUTE_STORES: dict[str, tuple[str, ...]] = {
    "argparse": ("Namespace",),
    "scipy._lib._util": ("_RichResult",),
    "scipy.optimize": ("OptimizeResult",),
    "sklearn.utils._bunch": ("Bunch",),
    "statsmodels.tools.tools": ("Bunch",),
    "statsmodels.datasets.utils": ("Dataset",),
}


_DONE: set[str] = set()


def install_library_protocols() -> None:
    if len(_DONE) == len(ATTRIBUTE_STORES):
        return
    for module_name, names in ATTRIBUTE_STORES.items():
        module = sys.modules.get(module_name)
        if module_name in _DONE or module is None:
            continue
        for name in names:
            cls = getattr(module, name, None)
            if isinstance(cls, type):
                shield(cls)
        _DONE.add(module_name)
