"""Process-wide library settings that a step may change, put back after every step.

In process, model code shares the host's libraries: `pd.set_option`, `np.set_printoptions`,
`np.seterr`, `np.random.seed`, `matplotlib.rcParams[...] = ...`, `sklearn.set_config`,
`pa.set_cpu_count`, `scipy.special.seterr`, `pl.Config.set_fmt_float` would outlive the step and change
how the host's own code behaves. Each row of `SETTINGS` is (module, what, snapshot, restore,
lazy): snapshots are taken before a step for modules that are authorized and already imported,
and restored after it when they differ. A *lazy* row is large (pandas options, matplotlib
rcParams): its snapshot is taken only when the library is about to change it during a step —
hooks.py wraps the setters to call `touch()` first — so a step that changes nothing pays
nothing for it. (numpy's legacy random state is not a row: each namespace gets its own
RandomState, see module_patches.) Stdlib only; the libraries are reached through sys.modules.
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .registries import REGISTRY_ROWS


class Setting(NamedTuple):
    module: str  # the top-level module that owns the setting
    what: str  # for the docs and error reports
    snapshot: Callable[[Any], Any]  # module -> saved value
    restore: Callable[[Any, Any], None]  # (module, saved) -> None
    lazy: bool = False  # snapshot on the first change in a step (see touch())
    same: Callable[[Any, Any], bool] | None = None  # (now, saved) -> unchanged; default _same


def _np_printoptions(np: Any) -> dict:
    return np.get_printoptions()


def _np_set_printoptions(np: Any, saved: dict) -> None:
    opts = dict(saved)
    opts.pop("legacy", None) if opts.get("legacy") is False else None
    np.set_printoptions(**opts)


def _np_ma_print(np: Any) -> tuple:
    option = sys.modules["numpy.ma"].masked_print_option if "numpy.ma" in sys.modules else None
    return (option.display(), option.enabled()) if option is not None else ()


def _np_ma_set_print(np: Any, saved: tuple) -> None:
    if saved:
        option = sys.modules["numpy.ma"].masked_print_option
        option.set_display(saved[0])
        option.enable(saved[1])


def _flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _pd_options(pd: Any) -> dict:
    # The option store itself (reading each option through get_option warns for deprecated ones).
    from pandas._config import config  # only when pandas is already loaded

    return _flatten(config._global_config)


def _pd_set_options(pd: Any, saved: dict) -> None:
    from pandas._config import config

    now = _flatten(config._global_config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, value in saved.items():
            if key in now and not _same(now[key], value):
                try:
                    config.set_option(key, value)  # through set_option: its callbacks run
                except Exception:  # noqa: BLE001 - a removed option: leave it
                    continue


def _mpl_rcparams(mpl: Any) -> dict:
    # Shallow, plus a copy of the list values (code can change those in place): a deep copy
    # costs ~4 ms per step.
    return {k: list(v) if type(v) is list else v for k, v in dict.items(mpl.rcParams)}


def _mpl_set_rcparams(mpl: Any, saved: dict) -> None:
    current = mpl.rcParams
    for key in [k for k in dict.keys(current) if k not in saved]:
        dict.__delitem__(current, key)
    for key, value in saved.items():
        now = dict.get(current, key, _MISSING)
        if now is not value and not (type(value) is list and _same(now, value)):
            # bypass validation: these values were valid; lists are handed over as fresh copies
            dict.__setitem__(current, key, list(value) if type(value) is list else value)


_MISSING = object()


_LIST_KEYS: list[str] = []


def _mpl_rcparams_lists(mpl: Any) -> dict:
    rc = mpl.rcParams
    if not _LIST_KEYS:  # the keys whose values are lists: fixed by matplotlib's validators
        _LIST_KEYS.extend(k for k, v in dict.items(rc) if type(v) is list)
    get = dict.get
    return {k: tuple(v) for k in _LIST_KEYS if type(v := get(rc, k)) is list}


def _same_items(now: dict, saved: dict) -> bool:
    """The lists hold the very objects they held: compared by identity in a few passes in C (an
    object put in a list in place is never compared with `==`; an equal copy counts as a change,
    which the restore undoes). Every step: ~7 µs for the ~30 lists, where `_same` took ~17 µs."""
    values, before = now.values(), saved.values()
    return list(now) == list(saved) and list(map(len, values)) == list(map(len, before)) and \
        all(map(operator.is_, itertools.chain.from_iterable(values),
                itertools.chain.from_iterable(before)))


def _mpl_set_rcparams_lists(mpl: Any, saved: dict) -> None:
    for key, value in saved.items():
        dict.__setitem__(mpl.rcParams, key, list(value))


def _mpl_backend(mpl: Any) -> str:
    return dict.get(mpl.rcParams, "backend")


def _mpl_set_backend(mpl: Any, saved: str) -> None:
    if not _same(dict.get(mpl.rcParams, "backend"), saved):
        dict.__setitem__(mpl.rcParams, "backend", saved)


def _mpl_colormaps(mpl: Any) -> frozenset:
    return frozenset(mpl.colormaps)


def _mpl_set_colormaps(mpl: Any, saved: frozenset) -> None:
    for name in set(mpl.colormaps) - saved:
        mpl.colormaps.unregister(name)


def _sp_special_errors(scipy: Any) -> dict | None:
    special = sys.modules.get("scipy.special")
    return None if special is None else special.geterr()


def _sp_set_special_errors(scipy: Any, saved: dict | None) -> None:
    special = sys.modules.get("scipy.special")
    if saved is not None and special is not None and special.geterr() != saved:
        special.seterr(**saved)


# polars' display settings that live in its Rust core (the others are environment variables,
# which a step cannot change): Config.state() key -> the setter that puts it back
_POLARS_CORE_SETTINGS = ("set_fmt_float", "set_float_precision", "set_thousands_separator",
                         "set_decimal_separator", "set_trim_decimal_zeros")


def _pl_core_settings(pl: Any) -> dict:
    # The core's own getters (0.4 us); Config.state() also reads ~40 environment variables and
    # sorts them (25 us, twice a step). Versions without the table fall back to state().
    getters = getattr(sys.modules.get("polars.config"), "_POLARS_CFG_DIRECT_VARS", None)
    if type(getters) is dict and all(key in getters for key in _POLARS_CORE_SETTINGS):
        return {key: getters[key]() for key in _POLARS_CORE_SETTINGS}
    state = pl.Config.state()
    return {key: state.get(key) for key in _POLARS_CORE_SETTINGS}


def _pl_set_core_settings(pl: Any, saved: dict) -> None:
    now = _pl_core_settings(pl)
    for key, value in saved.items():
        if not _same(now.get(key), value):
            getattr(pl.Config, key)(value)


def _np_poly_style(np: Any) -> Any:
    polybase = sys.modules.get("numpy.polynomial._polybase")
    return None if polybase is None else polybase.ABCPolyBase._use_unicode


def _np_set_poly_style(np: Any, saved: Any) -> None:
    polybase = sys.modules.get("numpy.polynomial._polybase")
    if polybase is not None and saved is not None:
        polybase.ABCPolyBase._use_unicode = saved


def _display_environment(_module: Any) -> dict:
    """The environment variables a step may set (a library's display settings, pl.Config's
    POLARS_FMT_*: capabilities/primitives.py), read from the store itself (no step's view)."""
    from ..capabilities.primitives import step_settable

    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in dict.items(data) if step_settable(key)}


def _set_display_environment(_module: Any, saved: dict) -> None:
    now = _display_environment(_module)
    for key in now.keys() - saved.keys():
        os.environ.pop(os.fsdecode(key), None)
    for key, value in saved.items():
        if now.get(key) != value:
            os.environ[os.fsdecode(key)] = os.fsdecode(value)


SETTINGS: tuple[Setting, ...] = (
    Setting("numpy", "print options (np.set_printoptions)", _np_printoptions, _np_set_printoptions),
    Setting("numpy", "floating-point error handling (np.seterr)",
            lambda np: np.geterr(), lambda np, saved: np.seterr(**saved)),
    Setting("numpy", "floating-point error callback (np.seterrcall)",
            lambda np: np.geterrcall(), lambda np, saved: np.seterrcall(saved)),
    Setting("numpy", "the ufunc buffer size (np.setbufsize)",
            lambda np: np.getbufsize(), lambda np, saved: np.setbufsize(saved)),
    Setting("numpy", "how masked values print (np.ma.masked_print_option)",
            _np_ma_print, _np_ma_set_print),
    Setting("numpy", "how polynomials print (np.polynomial.set_default_printstyle)",
            _np_poly_style, _np_set_poly_style),
    Setting("pandas", "options (pd.set_option, pd.options.*)", _pd_options, _pd_set_options,
            lazy=True),
    Setting("matplotlib", "rcParams", _mpl_rcparams, _mpl_set_rcparams, lazy=True),
    # Values changed in place (rcParams["font.family"].append(...)) do not go through a setter.
    Setting("matplotlib", "rcParams lists", _mpl_rcparams_lists, _mpl_set_rcparams_lists,
            same=_same_items),
    Setting("matplotlib", "the default backend", _mpl_backend, _mpl_set_backend),
    Setting("matplotlib", "registered colormaps", _mpl_colormaps, _mpl_set_colormaps, lazy=True),
    # (pyplot's figures: each step has its own registry, pyplot_state.py)
    Setting("scipy", "special-function error handling (scipy.special.seterr)",
            _sp_special_errors, _sp_set_special_errors),
    Setting("sklearn", "configuration (sklearn.set_config)",
            lambda sk: sk.get_config(), lambda sk, saved: sk.set_config(**saved)),
    Setting("pyarrow", "thread pools (pa.set_cpu_count, pa.set_io_thread_count)",
            lambda pa: (pa.cpu_count(), pa.io_thread_count()),
            lambda pa, saved: (pa.set_cpu_count(saved[0]), pa.set_io_thread_count(saved[1]))),
    Setting("polars", "display settings of its core (pl.Config.set_fmt_float, ...)",
            _pl_core_settings, _pl_set_core_settings),
    Setting("polars", "display settings in environment variables (pl.Config's POLARS_FMT_*)",
            _display_environment, _set_display_environment),
)


# registries and hooks that would call host code later (registries.py)
SETTINGS += tuple(Setting(*row) for row in REGISTRY_ROWS)

_WARNING_HOOKS = tuple(name for name in ("showwarning", "_showwarnmsg_impl", "_showwarnmsg",
                                          "formatwarning") if hasattr(warnings, name))
_get_hooks = operator.attrgetter(*_WARNING_HOOKS, "__name__")  # (always a tuple: one C call)


def _warning_hooks(module: Any) -> tuple:
    """The hooks as they are now (None for one the module no longer has)."""
    try:
        return _get_hooks(module)[:-1]
    except AttributeError:
        return tuple([getattr(module, name, None) for name in _WARNING_HOOKS])


_CURRENT = threading.local()  # the StepSettings of the step running on this thread


def touch(module: str) -> None:
    """A library is about to change a lazy setting of `module`: if a step is running on this
    thread, snapshot that setting now (once per step)."""
    step = getattr(_CURRENT, "step", None)
    if step is not None:
        step.save_lazy(module)


class StepSettings:
    """Snapshots taken before one step (or, for lazy rows, before the first change in it),
    restored after it."""

    def __init__(self, authorized_tops: Iterable[str]) -> None:
        tops = set(authorized_tops)
        self.rows = [s for s in SETTINGS if s.module in tops and not s.lazy]
        self.lazy_rows = [s for s in SETTINGS if s.module in tops and s.lazy]
        self.saved: list[tuple[Setting, Any, Any]] = []
        self.lazy_saved: set[str] = set()
        self.warning_filters: list | None = None
        self.warning_list: list | None = None
        self.warning_hooks: tuple = ()  # the values of _WARNING_HOOKS

    def _save(self, setting: Setting) -> None:
        module = sys.modules.get(setting.module)
        if module is None:
            return
        try:
            self.saved.append((setting, module, setting.snapshot(module)))
        except Exception:  # noqa: BLE001 - a library version without this setting
            pass

    def save(self) -> None:
        if self.saved:
            self.saved = []
        if self.lazy_saved:
            self.lazy_saved = set()
        for setting in self.rows:
            self._save(setting)
        # Library code may change warning filters on the model's behalf.
        self.warning_list = warnings.filters  # (catch_warnings puts a new list in its place)
        self.warning_filters = list(warnings.filters)
        # catch_warnings().__enter__() swaps these for a recorder: the host's warnings would be
        # swallowed, or shown by model code
        self.warning_hooks = _warning_hooks(warnings)
        if self.lazy_rows:  # (touch() has nothing to snapshot otherwise)
            _CURRENT.step = self

    def save_lazy(self, module: str) -> None:
        if module in self.lazy_saved:
            return
        self.lazy_saved.add(module)
        for setting in self.lazy_rows:
            if setting.module == module:
                self._save(setting)

    def restore(self) -> list[str]:
        """Put every setting back; returns what had to be restored (for tests and reports)."""
        if self.lazy_rows:
            _CURRENT.step = None
        restored = []
        for setting, module, value in self.saved or ():
            try:
                if not (setting.same or _same)(setting.snapshot(module), value):
                    setting.restore(module, value)
                    restored.append(f"{setting.module}: {setting.what}")
            except Exception:  # noqa: BLE001 - never fail a step on the way out
                continue
        hooks = self.warning_hooks
        if not all(map(operator.is_, _warning_hooks(warnings), hooks)):
            for name, hook in zip(_WARNING_HOOKS, hooks, strict=True):
                if getattr(warnings, name, None) is not hook:
                    setattr(warnings, name, hook)
                    restored.append(f"warnings: {name}")
        saved_filters = self.warning_filters
        if saved_filters is not None and not (
                warnings.filters is self.warning_list and len(self.warning_list) == len(saved_filters)
                and all(map(operator.is_, self.warning_list, saved_filters))):
            warnings.filters = self.warning_list
            warnings.filters[:] = saved_filters
            warnings._filters_mutated()
            restored.append("warnings: filters")
        if self.saved:
            self.saved = []
        return restored


_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes})


def _same(a: Any, b: Any) -> bool:
    """The same setting, judged without running code of what it holds: identical, or equal plain
    data (exact types), or exact dicts/lists/tuples of such, or equal numpy arrays of a plain
    dtype. A model object in a setting (a formatter, a callback) is never compared with `==`:
    anything else counts as changed, and the saved value is put back."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t in _PLAIN:
        return a == b
    if t is dict:
        if len(a) != len(b):
            return False
        if _PLAIN.issuperset(map(type, a)) and _PLAIN.issuperset(map(type, b)) and \
                _PLAIN.issuperset(map(type, a.values())) and _PLAIN.issuperset(map(type, b.values())):
            return a == b  # (plain data on both sides: the usual case, compared in C)
        return all(type(k) in _PLAIN for k in a) and \
            all(k in b and _same(v, b[k]) for k, v in a.items())
    if t is list or t is tuple:
        return len(a) == len(b) and all(map(_same, a, b))
    np = sys.modules.get("numpy")
    if np is not None and t is np.ndarray and not a.dtype.hasobject and not b.dtype.hasobject:
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    return False
