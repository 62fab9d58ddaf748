"""What an authorized package may do while it imports (a trusted import), and why.

During a step, a module of an authorized package loads as the library (restricted/
trusted_imports.py): the capability guard judges it by `LIBRARY_RULES`, the step's rows
(table.py) minus `LIBRARY_ALLOWED`. Everything else is judged as in a step: no process, signal,
socket, tracing, audit hook or chdir, not even at import. (In a worker the kernel layer holds
files and network regardless.) Stdlib only (the worker imports it).
"""

from __future__ import annotations

from .table import PREFIX_RULES, ROWS, RULES, Rule

__all__ = ["LIBRARY_ALLOWED", "LIBRARY_PREFIX_ALLOWED", "LIBRARY_PREFIX_RULES", "LIBRARY_RULES"]

_LIB_FILES = ("a library reads its data and configuration files and writes its caches at "
              "import, as in any program (matplotlib's font cache, scipy's tables)")
LIBRARY_ALLOWED: dict[str, str] = {
    **{row.event: _LIB_FILES for row in ROWS if row.capability.startswith("files")
       and not row.event.startswith(("fcntl.", "os.lockf"))},
    "os.putenv": "import-time settings of native runtimes (scikit-learn's KMP_*, polars' "
                 "_RJEM_MALLOC_CONF); put back when the import ends",
    "os.unsetenv": "the same; put back when the import ends",
    "compile": "code a library generates while it imports (numpy's `from numpy import *` "
               "namespaces, scipy's docstring templates, sympy's operator tables)",
    "code.__new__": "a library building its own functions at import (scikit-learn, statsmodels)",
    "function.__new__": "a library building its own functions at import (networkx's decorators)",
    "mmap.__new__": "a library maps its own data files at import (read-only, in the installation)",
}
LIBRARY_PREFIX_ALLOWED = {
    "ctypes": "extension modules and ctypes bindings of the installation load and probe the "
              "machine at import (polars' and statsmodels' CPU checks)",
}
LIBRARY_RULES: dict[str, Rule] = {e: r for e, r in RULES.items() if e not in LIBRARY_ALLOWED}
LIBRARY_PREFIX_RULES: dict[str, Rule] = {
    p: r for p, r in PREFIX_RULES.items() if p not in LIBRARY_PREFIX_ALLOWED}
