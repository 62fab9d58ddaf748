"""What a step may do under the capability guard: its grants, its per-step state, the error.

The lower floor of the guard: `capability_table` (the rules) and `capabilities` (the hook) both
build on it. Stdlib only (the worker imports it).
"""


from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CapabilityError", "Grants", "StepContext", "python_roots", "text_of", "under"]


class CapabilityError(PermissionError):
    """A library call or an action the step's grants do not allow.

    `capability` names the class of action (files.read, files.write, process, native, network,
    unpickle, interpreter, environment); `event` the audit event that carried it.
    """

    def __init__(self, capability: str, event: str, message: str) -> None:
        super().__init__(message)
        self.capability = capability
        self.event = event

    def __str__(self) -> str:
        # the message, even after a library sets .filename on it (shutil.rmtree does), which
        # would make OSError print "[Errno None] None: <path>"
        return str(self.args[0]) if self.args else super().__str__()


@dataclass(frozen=True)
class Grants:
    """What one step may touch besides the policy's own rules. Paths are absolute and resolved.

    read: trees the code may read. write: trees it may read and write (the workdir is one).
    network: TCP/UDP sockets allowed (Unix sockets stay file accesses: they need a write grant).
    check_source: the policy's check of a string a library is about to compile (None: refuse
        every library compile that is not a known code generator); returns an error or None.
    libraries: top-level packages whose modules, loaded during a step, import as the library
        (trusted_imports.py): the authorized ones.
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: bool = False
    check_source: Callable[[Any], str | None] | None = None
    libraries: Any = frozenset()  # `top in libraries` (a frozenset, or libraries/packages.py's)

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


# The guard never calls a method of an argument (a str subclass's `__eq__`, a path-like's
# `__fspath__`): text is read with str's and bytes' own C code.
def text_of(value: Any) -> str | bytes | None:
    """`value` as an exact str or bytes, read by the builtin type's C code; None if neither."""
    t = type(value)
    if t is str or t is bytes:
        return value
    if issubclass(t, str):
        return str.__str__(value)
    if issubclass(t, (bytes, bytearray)):
        return bytes(memoryview(value))
    return None


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


@dataclass(slots=True)  # (one a step: slots make it and every hook lookup cheaper)
class StepContext:
    """The state of the hook for one running step on one thread."""

    grants: Grants
    read_roots: tuple[str, ...]
    code_roots: tuple[str, ...]
    caller: Any = None  # the frame that runs the step: it and the frames below it are the host's
    suspended: int = 0
    busy: bool = False
    library: int = 0  # inside a trusted import (trusted_imports.py): the library's own rules
    run: Any = None  # the step's RunState (the trusted import defers its deadline)
    refusals: list[str] = field(default_factory=list)
    outer: StepContext | None = None  # the step this one interrupted on the same thread
    _host_frames: frozenset[int] | None = None

    @property
    def host_frames(self) -> frozenset[int]:
        """Ids of the frames that called into the step (found when first asked: few steps do)."""
        if self._host_frames is None:
            ids = set()
            frame = self.caller
            while frame is not None:
                ids.add(id(frame))
                frame = frame.f_back
            self._host_frames = frozenset(ids)
        return self._host_frames

    def refuse(self, capability: str, event: str, message: str) -> None:
        self.refusals.append(f"{capability}: {event}")
        raise CapabilityError(capability, event, message)
