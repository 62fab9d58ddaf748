"""Checks placed inside authorized libraries, where a string the model wrote would be used to
import or traverse something with no audit event to catch it.

Installed once per process, when an executor that authorizes the library is built; each check
applies only on a thread that is running a step (the host's own use of the library is unchanged):

- matplotlib `rcParams["figure.hooks"]` names "module:function" pairs that matplotlib imports and
  calls on every new figure; `rcParams["backend"]` names a module too (`module://...`).
- pandas option `plotting.backend` names a module pandas imports to plot.
- `matplotlib.ticker.StrMethodFormatter` formats with the template's fields, which may walk
  attributes (`{x.__init__.__globals__}`); its template is checked like the model's own
  `str.format` templates (no private attributes).
- joblib's `Parallel` (scikit-learn's `n_jobs=-1`, any library's process or thread pool) runs
  sequentially in a step: its workers would be processes (never from a step) or threads outside
  the step's guard and limits. Results are the same (the libraries make them independent of
  n_jobs); a worker or container also sets JOBLIB_MULTIPROCESSING=0. A step counts one CPU.
- threadpoolctl (scikit-learn's BLAS/OpenMP thread limits) finds no native thread pool in a step:
  finding them reads /proc/self/maps and calls them through ctypes, and their thread counts are
  the executor's (one per pool in a worker or container). Its limits change nothing there.
- polars' and pyarrow's readers and writers open files in native code: native_files.py judges
  their paths. polars' thread pools start as it loads (see _start_polars_pools).
Each is installed once the library is loaded, whichever authorized package brought it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..capabilities import GUARD
from ..guards.errors import PolicyError
from ..guards.operations import check_format_template
from .native_files import install_native_file_checks
from .raw_memory import install_raw_memory_checks
from .state import touch

_INSTALLED: set[str] = set()

# (library, what): why it is refused in a step
REFUSED_SETTINGS = {
    ("matplotlib", "figure.hooks"): "it names modules and functions that matplotlib imports and "
                                    "calls on every new figure",
    ("matplotlib", "backend"): "a 'module://' backend is a module to import; the sandbox draws "
                               "figures off-screen (Agg) itself",
    ("pandas", "plotting.backend"): "it names a module that pandas imports to plot",
}


def _in_step() -> bool:
    step = GUARD.current()
    return step is not None and not step.suspended


# Which values of a setting are refused (default: every value).
_REFUSED_VALUE: dict[tuple[str, str], Callable[[Any], bool]] = {
    ("matplotlib", "backend"): lambda value: not isinstance(value, str) or value.startswith("module:"),
}


def _refusing(library: str, key: str, validate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    reason = REFUSED_SETTINGS[(library, key)]
    refused = _REFUSED_VALUE.get((library, key), lambda value: True)

    def validator(value: Any) -> Any:
        if _in_step() and refused(value):
            raise PolicyError(f"setting {library} option {key!r} is not allowed in the sandbox: "
                              f"{reason}")
        return validate(value)

    validator.__wrapped__ = validate  # type: ignore[attr-defined]
    return validator


def _hook_matplotlib() -> None:
    import matplotlib
    import matplotlib.ticker

    validators = matplotlib.RcParams.validate
    for library, key in REFUSED_SETTINGS:
        if library == "matplotlib" and key in validators:
            validators[key] = _refusing(library, key, validators[key])
    rc = matplotlib.RcParams
    for name in ("__setitem__", "__delitem__", "_set"):
        original = rc.__dict__.get(name)
        if original is not None:
            setattr(rc, name, _touching("matplotlib", original))
    registry = type(matplotlib.colormaps)
    for name in ("register", "unregister"):
        original = registry.__dict__.get(name)
        if original is not None:
            setattr(registry, name, _touching("matplotlib", original))
    formatter = matplotlib.ticker.StrMethodFormatter
    original_call = formatter.__call__

    def __call__(self: Any, x: Any, pos: Any = None) -> Any:
        if _in_step():
            check_format_template(self.fmt)
        return original_call(self, x, pos)

    formatter.__call__ = __call__


def _hook_pandas() -> None:
    from pandas._config import config

    for name in ("_set_option_impl", "_set_option", "_reset_option", "set_option", "reset_option"):
        original = config.__dict__.get(name)
        if callable(original):
            setattr(config, name, _touching("pandas", original))
    # the public names were bound when pandas was imported: rebind them too
    import pandas

    for name in ("set_option", "reset_option"):
        if callable(getattr(pandas, name, None)) and name in config.__dict__:
            setattr(pandas, name, config.__dict__[name])

    options = config._registered_options
    for library, key in REFUSED_SETTINGS:
        if library == "pandas" and key in options:
            option = options[key]
            options[key] = option._replace(
                validator=_refusing(library, key, option.validator or (lambda v: v)))


def _touching(library: str, setter: Callable[..., Any]) -> Callable[..., Any]:
    """`setter`, which first lets the running step (if any) snapshot the library's settings."""

    def touched(*args: Any, **kwargs: Any) -> Any:
        touch(library)
        return setter(*args, **kwargs)

    touched.__wrapped__ = setter  # type: ignore[attr-defined]
    touched.__name__ = getattr(setter, "__name__", "setter")
    touched.__doc__ = getattr(setter, "__doc__", None)
    return touched


def _hook_joblib() -> None:
    from joblib import parallel

    original = parallel.Parallel.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _in_step():  # one job, no pool: n_jobs and backend are the first two parameters
            args = list(args)
            for index, (name, value) in enumerate((("n_jobs", 1), ("backend", "sequential"))):
                if len(args) > index:
                    args[index] = value
                else:
                    kwargs[name] = value
        original(self, *args, **kwargs)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    parallel.Parallel.__init__ = __init__
    # what libraries ask before they split work (effective_n_jobs(-1), cpu_count()): one job
    active = parallel._get_active_backend
    sequential = parallel.BACKENDS["sequential"]

    def _get_active_backend(*args: Any, **kwargs: Any) -> Any:
        backend, config = active(*args, **kwargs)
        if _in_step() and not isinstance(backend, sequential):
            backend = sequential(nesting_level=getattr(backend, "nesting_level", 0))
        return backend, config

    _get_active_backend.__wrapped__ = active  # type: ignore[attr-defined]
    parallel._get_active_backend = _get_active_backend
    # ... and a step counts one CPU (loky would read the cgroup's CPU quota to count them);
    # joblib.cpu_count() asks loky's, the backends hold their own reference
    from joblib import _parallel_backends
    from joblib.externals import loky

    count = loky.cpu_count

    def cpu_count(*args: Any, **kwargs: Any) -> int:
        return 1 if _in_step() else count(*args, **kwargs)

    cpu_count.__wrapped__ = count  # type: ignore[attr-defined]
    loky.cpu_count = cpu_count
    if getattr(_parallel_backends, "cpu_count", None) is count:
        _parallel_backends.cpu_count = cpu_count


def _hook_threadpoolctl() -> None:
    import threadpoolctl

    controller = threadpoolctl.ThreadpoolController
    original_init, original_limit = controller.__init__, controller.limit

    def __init__(self: Any) -> None:
        if _in_step():  # (finding them reads /proc/self/maps and calls them through ctypes)
            self.lib_controllers = []
            return
        original_init(self)

    def limit(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _in_step():  # a controller the host made earlier: its limiter changes nothing here
            return original_limit(controller._from_controllers([]), *args, **kwargs)
        return original_limit(self, *args, **kwargs)

    __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
    limit.__wrapped__ = original_limit  # type: ignore[attr-defined]
    controller.__init__, controller.limit = __init__, limit


def _start_polars_pools() -> None:
    """polars' Rust core aborts the whole process when an allocation fails, and its thread pools
    reserve tens of MB of address space per thread when first used (~0.7 GB on 2 CPUs): under an
    in-process address-space cap, a step's first `df.sum()` would kill the host. So its pools
    start as it loads (a trusted import: the cap is lifted and what it reserves is not charged),
    not in the model's first computation."""
    import io

    import polars

    polars.DataFrame({"a": [1]}).sum()
    polars.read_csv(io.BytesIO(b"a\n1\n"))


HOOKS: dict[str, Callable[[], None]] = {"matplotlib": _hook_matplotlib, "pandas": _hook_pandas,
                                        "joblib": _hook_joblib, "threadpoolctl": _hook_threadpoolctl,
                                        "polars": _start_polars_pools}


def install_hooks() -> None:
    """Put the checks into the hooked libraries that are loaded (once per process; they act only
    on a step's thread, so a library another authorized package brought is hooked too)."""
    global _modules_seen
    _modules_seen = len(sys.modules)
    install_native_file_checks()
    install_raw_memory_checks()
    for library, install in HOOKS.items():
        if library not in _INSTALLED and library in sys.modules:
            try:
                install()
            except Exception:  # noqa: BLE001 - another version of the library: table rows still hold
                continue
            _INSTALLED.add(library)


_modules_seen = 0


def install_new_hooks() -> None:
    """Before a step: hook what was loaded since the last look (the host may import polars after
    it built the executor; the step's import is then a cache hit, not a trusted import). One
    integer compare when nothing was."""
    if len(sys.modules) != _modules_seen:
        install_hooks()
