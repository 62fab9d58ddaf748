"""Trusted imports: during a step, an authorized package's modules load as the library, and every
module loads only from where the model's code cannot write.

The model's code is hostile; the libraries the user authorized are not. What a library does while
it *imports* (sets a thread-count variable for its native runtime, `exec`s a generated namespace,
builds functions, starts a helper thread, loads a shared library and probes the CPU) is its own
set-up, not something the model asked for. So a module whose top-level package is authorized
and the packages it requires (`Grants.libraries`, packages.py), loaded during a step (the
model's `import`, a lazy submodule, a library's own import at call time), and any module an
import statement in their code names (networkx's `import scipy` inside pagerank), runs its import
under the library's rules:

- the capability guard judges it by `table.LIBRARY_RULES` (files, native code, generated code and
  function building allowed; processes, signals, sockets, tracing, chdir still refused), and the
  thread primitive lets its helper threads start;
- it reads the process environment as the host's own import would (in a worker or container
  that is the sandbox's own, minimal one), and the changes it makes are put back when the
  import ends, in every executor (they are settings its native runtimes read as they load:
  scikit-learn's KMP_*, polars' _RJEM_MALLOC_CONF): no channel to the host, nothing left for
  the model's code to read;
- the address-space cap is lifted and the memory it took is not charged to the model; it gets
  the host's recursion headroom; the deadline waits for it as for a tool (interrupted only
  TOOL_GRACE_S past the deadline);
- nothing of the model runs inside it: the namespace is inert meanwhile (a model function called
  back raises), numpy's error callback is set aside.

It cannot become a hole: a module resolves only from sys.path entries the step cannot write (the
workdir and write grants are never searched, whatever sys.path says; a module found there is
refused), a module is trusted for its package or for an import statement of a trusted package's
code, never for a name the model passes (`importlib.import_module`, a plotting backend, sympy's
`import_module`: those load under the guard as before; `pkg.__main__` never), and afterwards every
call the model makes is under the guard again. Host code (no step on the thread, or a tool) imports as usual.
"""

from __future__ import annotations

import dis
import importlib.machinery
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..capabilities import GUARD
from ..capabilities.grants import StepContext, _resolve, under
from ..compiler.names import LIVE
from ..limits.process_caps import PROCESS_CAPS

__all__ = ["ImportRefused", "install", "library_import"]

_PATH_FINDER = importlib.machinery.PathFinder
_NOT_WRAPPED = (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter)


class ImportRefused(ImportError):
    """A module would load from a directory the step's code can write."""


# -- where modules come from ----------------------------------------------------------------------
_PATH_CACHE: dict[tuple, list[str]] = {}


def _readonly_entries(entries: Any, writable: tuple[str, ...]) -> list[str]:
    """The entries of a search path (sys.path, a package's __path__) the step cannot write."""
    entries = [e for e in entries if type(e) is str]
    key = (tuple(entries), writable, os.getcwd())
    found = _PATH_CACHE.get(key)
    if found is None:
        found = [e for e in entries if not under(_resolve(e or os.getcwd()), writable)]
        if len(_PATH_CACHE) > 256:
            _PATH_CACHE.clear()
        _PATH_CACHE[key] = found
    return found


def _writable_origin(spec: Any, writable: tuple[str, ...]) -> str | None:
    origin = getattr(spec, "origin", None)
    if type(origin) is str and getattr(spec, "has_location", False):
        real = _resolve(origin)
        if under(real, writable):
            return real
    return None


def _find(name: str, path: Any, target: Any, writable: tuple[str, ...]) -> Any:
    """The spec the other finders give for `name`, searching only entries the step cannot write."""
    for finder in sys.meta_path:
        if finder is _FINDER:
            continue
        if finder is _PATH_FINDER:
            entries = sys.path if path is None else path
            spec = _PATH_FINDER.find_spec(name, _readonly_entries(entries, writable), target)
        else:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(name, path, target)
        if spec is not None:
            shadow = _writable_origin(spec, writable)
            if shadow is not None:
                raise ImportRefused(_refusal(name, shadow))
            return spec
    # Not found where it may come from: is it where the code can write? Then say so (an import
    # that CPython would have made from the workdir); else it is simply not installed.
    shadow = _writable_origin(_PATH_FINDER.find_spec(name, path), writable)
    if shadow is not None:
        raise ImportRefused(_refusal(name, shadow))
    return None


def _refusal(name: str, where: str) -> str:
    return (f"cannot import {name!r} from {where}: in the sandbox modules load only from the "
            "Python installation, never from the working directory or a write grant (the code "
            "can write there); install the package where the executor runs")


class _InstallationFinder:
    """First on sys.meta_path. Host code (no step on this thread, or a tool): stands aside.
    In a step: finds the module where the step cannot write, and marks an authorized package's
    modules to load as the library."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        step = GUARD.current()
        if step is None or step.suspended or type(name) is not str:
            return None
        writable = step.grants.write
        spec = _find(name, path, target, writable)
        if spec is None or step.library:
            return spec  # (inside a trusted import: already the library's)
        loader = spec.loader
        libraries = step.grants.libraries
        if loader is not None and hasattr(loader, "exec_module") and \
                not isinstance(loader, _NOT_WRAPPED) and type(loader).__name__ != "NamespaceLoader" \
                and "__main__" not in name.split(".") and \
                (name.partition(".")[0] in libraries or _imported_by_library(libraries)):
            spec.loader = _LibraryLoader(loader)
        return spec

    def invalidate_caches(self) -> None:
        _PATH_CACHE.clear()


_IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def _imported_by_library(libraries: Any) -> bool:
    """Is this import an import statement in the code of a trusted package (networkx's
    `import scipy` inside pagerank)? Its name is then a constant of the library's code, never a
    string from the model (`importlib.import_module(name)` does not count)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    if frame is None:
        return False
    module = frame.f_globals.get("__name__")
    if type(module) is not str or module.partition(".")[0] not in libraries:
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    return 0 <= at < len(code) and code[at] == _IMPORT_NAME


class _LibraryLoader:
    """A module's own loader, run as a trusted import (creating the module runs an extension's
    init; executing it runs the module's code). Put back on the module and its spec as soon as
    the module exists."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        create = getattr(self.loader, "create_module", None)
        if create is None:
            return None
        with library_import():
            return create(spec)

    def exec_module(self, module: Any) -> None:
        real = self.loader
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = real
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = real
        with library_import():
            real.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


_FINDER = _InstallationFinder()


def install() -> None:
    """Put the finder first on sys.meta_path (once per process; it stands aside for host code)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


# -- the trusted import's scope -------------------------------------------------------------------
@contextmanager
def library_import() -> Iterator[None]:
    """Run the enclosed import as the library (see the module docstring). Host code, or a scope
    already open on this thread: nothing changes."""
    step = GUARD.current()
    if step is None or step.suspended or step.library:
        yield
        return
    with GUARD.library(step):
        environment = _environment_snapshot()
        caps, before = _lift_caps(step)
        run = step.run
        inert = _make_inert(run)
        errstate = _numpy_callbacks_aside()
        try:
            yield
        finally:
            try:
                if errstate is not None:
                    errstate.__exit__(None, None, None)
                _wake(run, inert)
                _restore_environment(environment)
                _after_import()
            finally:
                _restore_caps(step, caps, before)


def _environment_snapshot() -> dict | None:
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):
        return None
    return dict.copy(data) if type(data) is dict else \
        {k: dict.__getitem__(data, k) for k in dict.keys(data)}  # (the guard's filtered store)


def _restore_environment(saved: dict | None) -> None:
    data = getattr(os.environ, "_data", None)
    if saved is None or not isinstance(data, dict):
        return
    for key in [k for k in dict.keys(data) if k not in saved]:
        os.unsetenv(key)
        dict.__delitem__(data, key)
    for key, value in saved.items():
        if dict.get(data, key) != value:
            os.putenv(key, value)
            dict.__setitem__(data, key, value)


def _lift_caps(step: StepContext) -> tuple[Any, int]:
    step.suspended += 1  # setrlimit is ours, not the library's: the guard refuses it
    try:
        return PROCESS_CAPS.lift_for_library(), PROCESS_CAPS.address_space()
    finally:
        step.suspended -= 1


def _restore_caps(step: StepContext, caps: Any, before: int) -> None:
    step.suspended += 1
    try:
        grown = PROCESS_CAPS.address_space() - before if before else 0
        PROCESS_CAPS.restore_after_library(caps, grown)
    finally:
        step.suspended -= 1


def _make_inert(run: Any) -> tuple[bool, Any] | None:
    """While the import runs, the deadline waits as for a tool, and the model's functions are
    inert: called back from inside the import, they raise at their entry check."""
    if run is None:
        return None
    saved = (run.in_tool, run.ns.get(LIVE))
    run.in_tool = True
    if saved[1] is True:
        run.ns[LIVE] = False
    return saved


def _wake(run: Any, saved: tuple[bool, Any] | None) -> None:
    if run is None or saved is None:
        return
    in_tool, live = saved
    run.in_tool = in_tool
    if live is True and run.reason is None and run.ns.get(LIVE) is False:
        run.ns[LIVE] = True  # (unless the deadline expired the run meanwhile)


def _numpy_callbacks_aside() -> Any:
    """numpy's error callback is a process-wide hook the model can set (np.seterrcall): no model
    object may run inside a trusted import, so it is set aside for the import."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    try:
        if np.geterrcall() is None:
            return None
        state = np.errstate(call=None, divide="warn", over="warn", under="ignore", invalid="warn")
        state.__enter__()
        return state
    except Exception:  # noqa: BLE001 - another numpy: its defaults stay
        return None


def _after_import() -> None:
    # The checks placed inside libraries (hooks.py) go in as soon as the library exists.
    from .hooks import install_hooks

    install_hooks()
