"""Two process-wide primitives judged on the step's thread: starting a thread, reading the environment.

CPython raises no audit event for either, so the guard holds them where every module ends up:
- **threads**: `_thread.start_new_thread` and, from 3.13, `_thread.start_joinable_thread` (which
  `threading.Thread.start` uses instead), and `threading`'s references to them, refuse on a thread
  running a step. Whatever module starts it (`concurrent.futures.thread`, `socketserver`'s
  ThreadingMixIn, a library's helper), a thread would run outside the step's guard and limits,
  after execute() returned. Host code called from a step (a tool) may start threads.
- **the environment**: `os.environ` (and `os.environb`, `os.getenv`, everything reading them:
  `wsgiref.handlers.read_environ`, a host function's globals reached by introspection) shows a step
  only a few harmless variables (`VISIBLE`); the host's API keys and tokens are not there. Writes
  are refused by the audit table (`os.putenv`).
Other threads, and the step's own thread outside a step, see and do everything as before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from .grants import CapabilityError

__all__ = ["STEP_SETTABLE", "STEP_SETTABLE_PREFIXES", "VISIBLE", "install_primitives", "step_settable"]

# What a step sees of the environment: the locale, the time zone, the home and temp directories
# (tempfile, expanduser and locale-aware libraries read them at call time).
VISIBLE = frozenset({"HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP"})
# Display settings that a library keeps in environment variables (polars' `pl.Config` sets
# POLARS_FMT_* and its core reads them back at each repr): a step may set and read these, and
# they are put back after it (libraries/state.py). Nothing else of the environment is writable.
STEP_SETTABLE = frozenset({"POLARS_TABLE_WIDTH"})
STEP_SETTABLE_PREFIXES = ("POLARS_FMT_",)
_VISIBLE_PREFIXES = ("LC_", *STEP_SETTABLE_PREFIXES)

_THREADS = ("starting a thread is not allowed in the sandbox (threads): a thread would run "
            "outside the step's limits and guard, after it ended; compute in this thread "
            "(n_jobs=1, a plain loop)")


def _visible(key: Any) -> bool:
    name = key.decode("utf-8", "replace") if type(key) is bytes else key
    return type(name) is str and (name in VISIBLE or name in STEP_SETTABLE
                                  or name.startswith(_VISIBLE_PREFIXES))


def step_settable(key: Any) -> bool:
    """May a step set or unset this environment variable (a library's display setting)?"""
    name = key.decode("utf-8", "replace") if type(key) is bytes else key
    return type(name) is str and name.isascii() and \
        (name in STEP_SETTABLE or name.startswith(STEP_SETTABLE_PREFIXES))


def install_primitives(in_step: Callable[[], bool]) -> None:
    """Wrap the thread primitive and the environment's store, once per process. `in_step()` is
    True on a thread that runs a step with its guard on (not suspended for host code)."""
    import _thread

    if getattr(_thread.start_new_thread, "_codeagent_guarded", False):
        return
    for name in ("start_new_thread", "start_joinable_thread"):  # (the second: 3.13+)
        real = getattr(_thread, name, None)
        if real is None:
            continue
        guarded = _guarded_start(real, name, in_step)
        setattr(_thread, name, guarded)
        if getattr(threading, "_" + name, None) is real:
            setattr(threading, "_" + name, guarded)
    _guard_environment(in_step)


def _guarded_start(real: Callable[..., Any], name: str, in_step: Callable[[], bool]) -> Callable[..., Any]:
    def start(*args: Any, **kwargs: Any) -> Any:
        if in_step():
            raise CapabilityError("process", "_thread." + name, _THREADS)
        return real(*args, **kwargs)

    start._codeagent_guarded = True  # type: ignore[attr-defined]
    return start


def _guard_environment(in_step: Callable[[], bool]) -> None:
    environ = os.environ
    data = getattr(environ, "_data", None)
    if type(data) is not dict:  # another Python's os module: leave it
        return

    class StepEnvironment(dict):
        """os.environ's store: everything for the host, the visible few for a step."""

        __slots__ = ()

        def __getitem__(self, key: Any) -> Any:
            if in_step() and not _visible(key):
                raise KeyError(key)
            return dict.__getitem__(self, key)

        def __contains__(self, key: Any) -> bool:
            if in_step() and not _visible(key):
                return False
            return dict.__contains__(self, key)

        def get(self, key: Any, default: Any = None) -> Any:
            return self[key] if key in self else default

        def _shown(self) -> list:
            return [k for k in dict.keys(self) if _visible(k)]

        def __iter__(self) -> Any:
            return iter(self._shown()) if in_step() else dict.__iter__(self)

        def keys(self) -> Any:
            return self._shown() if in_step() else dict.keys(self)

        def items(self) -> Any:
            if in_step():
                return [(k, dict.__getitem__(self, k)) for k in self._shown()]
            return dict.items(self)

        def values(self) -> Any:
            if in_step():
                return [dict.__getitem__(self, k) for k in self._shown()]
            return dict.values(self)

        def __len__(self) -> int:
            return len(self._shown()) if in_step() else dict.__len__(self)

        def copy(self) -> dict:
            return dict(self.items())

        def __repr__(self) -> str:
            return repr(dict(self.items()))

    guarded = StepEnvironment(data)
    environ._data = guarded  # type: ignore[attr-defined]
    environb = getattr(os, "environb", None)
    if environb is not None and getattr(environb, "_data", None) is data:
        environb._data = guarded  # type: ignore[attr-defined]
