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
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .capabilities import GUARD
from .errors import PolicyError
from .guards import check_format_template
from .library_state import touch

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


HOOKS: dict[str, Callable[[], None]] = {"matplotlib": _hook_matplotlib, "pandas": _hook_pandas}


def install_hooks(authorized_tops: set[str]) -> None:
    """Put the checks into the authorized libraries that are imported (once per process)."""
    for library, install in HOOKS.items():
        if library in authorized_tops and library not in _INSTALLED and library in sys.modules:
            try:
                install()
            except Exception:  # noqa: BLE001 - another version of the library: table rows still hold
                continue
            _INSTALLED.add(library)
