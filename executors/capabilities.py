"""The capability guard under the policy: a PEP 578 audit hook that holds what libraries can do.

The restricted policy governs what model code *says*; the libraries it may import can still *do*
anything the process can (open files, unpickle, load native code, start processes, open sockets).
CPython reports those actions as audit events (`sys.audit`) before it performs them, on the thread
that performs them. This module installs one audit hook per process that judges events only on a
thread that is running a step, against that step's grants (`Grants`); every other thread, and the
same thread outside a step, pays one global check.

What each event means and the rule applied to it is a table (`capability_table.py`), so a user can
read what is enforced. Refusals raise `CapabilityError`, a `PermissionError`, which the model sees
as a clear error naming the capability and the setting that grants it. The hook cannot be removed
(CPython has no API for that) and its state is out of the model's reach (nothing here is in the
step's namespace; the policy refuses the frame and underscore attributes that could lead here).

Stdlib only: the subprocess/container worker uses it too.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CapabilityError", "CapabilityGuard", "Grants", "GUARD", "python_roots"]


class CapabilityError(PermissionError):
    """A library call or an action the step's grants do not allow.

    `capability` names the class of action (files.read, files.write, process, native, network,
    unpickle, interpreter, environment); `event` the audit event that carried it.
    """

    def __init__(self, capability: str, event: str, message: str) -> None:
        super().__init__(message)
        self.capability = capability
        self.event = event


@dataclass(frozen=True)
class Grants:
    """What one step may touch besides the policy's own rules. Paths are absolute and resolved.

    read: trees the code may read. write: trees it may read and write (the workdir is one).
    network: TCP/UDP sockets allowed (Unix sockets stay file accesses: they need a write grant).
    check_source: the policy's check of a string a library is about to compile (None: refuse
        every library compile that is not a known code generator); returns an error or None.
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: bool = False
    check_source: Callable[[Any], str | None] | None = None

    @classmethod
    def of(cls, read: Iterable[str] = (), write: Iterable[str] = (), network: bool = False,
           check_source: Callable[[Any], str | None] | None = None) -> Grants:
        return cls(tuple(_resolve(p) for p in read), tuple(_resolve(p) for p in write),
                   bool(network), check_source)


def _resolve(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def under(path: str, roots: Iterable[str]) -> bool:
    """`path` is one of `roots` or inside one (both resolved, absolute)."""
    for root in roots:
        if path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep):
            return True
    return False


# -- what the Python installation itself needs ---------------------------------------------------

# Files outside the installation that the stdlib reads on its own (time zones, /dev/null ...).
SYSTEM_READ_ROOTS = (
    "/usr/share/zoneinfo", "/etc/localtime", "/usr/share/fonts", "/etc/fonts",
    "/dev/null", "/dev/urandom", "/dev/random", "/etc/mime.types",
)
SYSTEM_WRITE_ROOTS = ("/dev/null",)
# Outside the installation, sys.path entries (a project directory, an editable install) give
# read access to code only: libraries import from there, but data files and secrets stay shut.
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".pth", ".pyi")


def python_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(installation trees readable in full, other sys.path directories readable for code only)."""
    import sysconfig

    full: list[str] = []
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              *sysconfig.get_paths().values()):
        if p and os.path.isdir(p):
            full.append(_resolve(p))
    code_only = []
    for p in sys.path:
        real = _resolve(p or os.getcwd())
        if os.path.isdir(real) and not under(real, full):
            code_only.append(real)
    return tuple(dict.fromkeys(full)), tuple(dict.fromkeys(code_only))


@dataclass
class StepContext:
    """The state of the hook for one running step on one thread."""

    grants: Grants
    read_roots: tuple[str, ...]
    code_roots: tuple[str, ...]
    host_frames: frozenset[int] = frozenset()
    suspended: int = 0
    busy: bool = False
    refusals: list[str] = field(default_factory=list)

    def refuse(self, capability: str, event: str, message: str) -> None:
        self.refusals.append(f"{capability}: {event}")
        raise CapabilityError(capability, event, message)


class _Local(threading.local):
    step: StepContext | None = None


class CapabilityGuard:
    """One per process. `install()` adds the audit hook once; `step(grants)` governs a step."""

    def __init__(self) -> None:
        self._installed = False
        self._lock = threading.Lock()
        self._local = _Local()
        self._active = 0  # steps running on any thread: the hook's fast exit when 0
        self._roots: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def installed(self) -> bool:
        return self._installed

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            from .capability_table import RULES, PREFIX_RULES

            local = self._local
            rules, prefix_rules = RULES, PREFIX_RULES
            guard = self

            def audit(event: str, args: tuple) -> None:
                if not guard._active:
                    return
                step = local.step
                if step is None or step.suspended or step.busy:
                    return
                rule = rules.get(event)
                if rule is None:
                    rule = prefix_rules.get(event.partition(".")[0])
                    if rule is None:
                        return
                step.busy = True
                try:
                    rule(step, event, args)
                finally:
                    step.busy = False

            self._roots = python_roots()
            sys.addaudithook(audit)
            self._installed = True

    @contextmanager
    def step(self, grants: Grants) -> Iterator[StepContext]:
        """Govern the current thread for the duration of a step."""
        if not self._installed:
            self.install()
        full, code_only = self._roots or ((), ())
        ctx = StepContext(
            grants=grants,
            read_roots=(*full, *(_resolve(p) for p in SYSTEM_READ_ROOTS if os.path.exists(p))),
            code_roots=code_only,
            host_frames=_host_frames(sys._getframe(1)),
        )
        local = self._local
        outer = local.step
        local.step = ctx
        with self._lock:
            self._active += 1
        try:
            yield ctx
        finally:
            with self._lock:
                self._active -= 1
            local.step = outer

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Host code called from a step (a tool) runs with the host's own capabilities."""
        step = self._local.step
        if step is None:
            yield
            return
        step.suspended += 1
        try:
            yield
        finally:
            step.suspended -= 1

    def current(self) -> StepContext | None:
        return self._local.step


def _host_frames(frame: Any) -> frozenset[int]:
    """Ids of the frames that called into the step: the host's, never handed to model code."""
    ids = set()
    while frame is not None:
        ids.add(id(frame))
        frame = frame.f_back
    return frozenset(ids)


GUARD = CapabilityGuard()
