"""What model code may touch besides tools: files and the network, one object for every executor.

    Access(read=["data/"], write=["out/"], workdir=None, network=False)

- `workdir`: the code's current directory, read-write. None: a private temporary directory per
  executor, removed on close(). Relative paths resolve against it in every executor.
- `read` / `write`: host paths (directories or files) the code may read / read and write. They
  appear at the same absolute path in every executor (a container gets bind mounts there).
- `network`: False (default) or True.

Two traps are refused at construction (unless `force=True`): a write grant over the host's code
or configuration (a directory on the host's `sys.path`, holding one, a project root, a home
directory, system directories) — files the code writes are untrusted, and the host's next
import would run them — and overlapping grants with different modes (the stricter one could be
bypassed through the other).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Access", "AccessError", "Isolation", "ResolvedAccess", "owned_tempdir", "sweep_dead_owners",
           "sweep_workdirs"]

# Markers of a project root or of a user's configuration: a write grant there could plant code.
_HOST_CODE_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", ".ssh", ".bashrc",
                      ".profile", ".config")
_SYSTEM_DIRS = ("/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/dev", "/proc",
                "/sys", "/run", "/var", "/root", "/home", "/opt", "/srv")


class AccessError(ValueError):
    """A grant that cannot be honoured safely; the message names the setting to change."""


def _paths(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, os.PathLike)):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise AccessError(f"Access({what}=...) takes a list of paths, not {type(value).__name__}") from None
    out = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)) or not os.fspath(item):
            raise AccessError(f"Access({what}=...) holds {item!r}, which is not a path")
        out.append(os.fspath(item))
    return tuple(out)


@dataclass(frozen=True)
class Access:
    """The grants. Paths are kept as given; `resolve()` checks them and makes them absolute."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    workdir: str | None = None
    network: bool = False
    force: bool = False
    require: str | None = None  # "kernel": refuse to start without the kernel-enforced layer

    def __post_init__(self) -> None:
        object.__setattr__(self, "read", _paths(self.read, "read"))
        object.__setattr__(self, "write", _paths(self.write, "write"))
        if self.workdir is not None:
            (workdir,) = _paths(self.workdir, "workdir") or (None,)
            object.__setattr__(self, "workdir", workdir)
        if not isinstance(self.network, bool):
            raise AccessError(f"Access(network=...) must be True or False, not {self.network!r}")
        if self.require not in (None, "kernel"):
            raise AccessError(f"Access(require=...) must be None or 'kernel', not {self.require!r}")

    def resolve(self, base: str | None = None, *, shared: bool = False) -> ResolvedAccess:
        """Absolute, checked grants (relative paths against `base`, default the host's cwd).
        A private workdir is created here when none is given; `shared`: another user (the
        sandbox user of a worker) must be able to reach it, so it goes under a temporary
        directory every user can enter."""
        base = base or os.getcwd()
        read = tuple(_existing(p, base, "read") for p in self.read)
        write = tuple(_existing(p, base, "write") for p in self.write)
        private = self.workdir is None
        workdir = owned_tempdir("codeagent-work-", reachable_tmp() if shared else None) \
            if private else _existing(self.workdir, base, "workdir")
        if not private and not os.path.isdir(workdir):
            raise AccessError(f"Access(workdir={self.workdir!r}) is not a directory")
        try:
            if not self.force:
                for path, what in [*((p, "write") for p in write),
                                   *(() if private else ((workdir, "workdir"),))]:
                    _refuse_host_code(path, what)
            _refuse_overlaps(read, (*write, workdir))
        except AccessError:
            if private:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        return ResolvedAccess(read=_dedupe(read), write=_dedupe(write), workdir=workdir,
                              network=self.network, private_workdir=private, require=self.require)


@dataclass(frozen=True)
class ResolvedAccess:
    read: tuple[str, ...]
    write: tuple[str, ...]
    workdir: str
    network: bool
    private_workdir: bool
    require: str | None = None

    @property
    def writable(self) -> tuple[str, ...]:
        """Every tree the code may write: the workdir and the write grants."""
        return (self.workdir, *self.write)

    def cleanup(self) -> None:
        if self.private_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def to_dict(self) -> dict[str, Any]:
        return {"read": list(self.read), "write": list(self.write), "workdir": self.workdir,
                "network": self.network}

    def listing(self, max_entries: int = 40) -> str:
        """A short listing of what the code can see, for the model's prompt (capped)."""
        lines = [f"Working directory (read-write): {self.workdir}"]
        for label, paths in (("read-only", self.read), ("read-write", self.write)):
            for path in paths:
                lines.append(f"{path} ({label})")
        shown = 0
        for root in (*self.read, *self.write, self.workdir):
            for entry in _walk(root, max_entries - shown):
                lines.append(f"  {entry}")
                shown += 1
            if shown >= max_entries:
                lines.append("  ... (more files not listed)")
                break
        return "\n".join(lines)


def _walk(root: str, limit: int) -> Iterable[str]:
    if limit <= 0:
        return
    if os.path.isfile(root):
        yield root
        return
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)
            count += 1
            if count >= limit:
                return


def owned_tempdir(prefix: str, parent: str | None = None) -> str:
    """A new temporary directory `<prefix><pid>-<random>`, named after this process, which owns
    it: when the owner dies without removing it (SIGKILL, a cut batch task), the next process that
    makes one with the same prefix there sweeps it (`sweep_dead_owners`; `sweep_workdirs` sweeps
    on demand, as a batch does after it killed a worker)."""
    parent = parent or tempfile.gettempdir()
    once = (os.getpid(), prefix, parent)  # one sweep per place and process: it scans the folder
    if once not in _SWEPT:
        _SWEPT.add(once)
        sweep_dead_owners(prefix, parent)
    path = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)
    if not _OWNED:
        atexit.register(_remove_owned)
    elif len(_OWNED) >= 256:  # (a long-lived host: forget the folders already removed)
        _OWNED[:] = [(owner, p) for owner, p in _OWNED if os.path.isdir(p)]
    _OWNED.append((os.getpid(), path))
    return path


# What this process made with owned_tempdir: whatever its owner did not remove (an executor never
# closed) goes when the process exits normally. Only the folders of the exiting process: a forked
# child inherits the list and the atexit hook, and must not remove its parent's folders.
_OWNED: list[tuple[int, str]] = []
_SWEPT: set[tuple[int, str, str]] = set()


def _remove_owned() -> None:
    me = os.getpid()
    for owner, path in _OWNED:
        if owner == me:
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, as another user
        return True
    return True


def sweep_dead_owners(prefix: str, parent: str | None = None) -> list[str]:
    """Remove the `owned_tempdir` folders under `parent` whose owner process is gone (only ours,
    or any when we are root); the paths removed."""
    parent = parent or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = os.scandir(parent)
    except OSError:
        return removed
    uid = os.getuid()
    with entries:
        for entry in entries:
            pid_text = entry.name[len(prefix):].partition("-")[0]
            if not (entry.name.startswith(prefix) and pid_text.isdigit()) or _alive(int(pid_text)):
                continue
            try:
                if not entry.is_dir(follow_symlinks=False) or (uid and entry.stat(follow_symlinks=False).st_uid != uid):
                    continue
            except OSError:
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def sweep_workdirs() -> list[str]:
    """Sweep the private workdirs (`codeagent-work-<pid>-*`) of dead owners, wherever they are made."""
    return [*sweep_dead_owners("codeagent-work-"),
            *(sweep_dead_owners("codeagent-work-", reachable_tmp())
              if os.path.realpath(reachable_tmp()) != os.path.realpath(tempfile.gettempdir()) else ())]


def reachable_tmp() -> str:
    """The host's temporary directory if every user can enter it (and its parents), else /tmp:
    a private TMPDIR (mode 0700, as pam_tmpdir makes) would shut the sandbox user out of its
    own workdir."""
    here = tempfile.gettempdir()
    path = os.path.realpath(here)
    while True:
        try:
            if not os.stat(path).st_mode & 0o001:
                return "/tmp" if os.path.isdir("/tmp") else here
        except OSError:
            return here
        parent = os.path.dirname(path)
        if parent == path:
            return here
        path = parent


def _existing(path: str, base: str, what: str) -> str:
    full = os.path.realpath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.exists(full):
        raise AccessError(f"Access({what}=[{path!r}]): {full} does not exist; create it first "
                          "or fix the path")
    return full


def _dedupe(paths: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _refuse_host_code(path: str, what: str) -> None:
    fix = "grant a dedicated directory instead, or pass Access(..., force=True) if you mean it"
    if path in _SYSTEM_DIRS or path == os.path.realpath(os.path.expanduser("~")):
        raise AccessError(f"Access({what}=...) would let model code write {path}, a system or "
                          f"home directory; {fix}")
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        if os.path.isdir(real) and (_inside(path, real) or _inside(real, path)):
            raise AccessError(
                f"Access({what}=...) would let model code write {path}, which holds or is on the "
                f"host's import path ({real}): the host's next import could run what the code "
                f"wrote; {fix}")
    if os.path.isdir(path):
        for marker in _HOST_CODE_MARKERS:
            if os.path.exists(os.path.join(path, marker)):
                raise AccessError(
                    f"Access({what}=...) would let model code write {path}, which holds the "
                    f"host's code or configuration ({marker}); {fix}")


def _refuse_overlaps(read: tuple[str, ...], writable: tuple[str, ...]) -> None:
    for r in read:
        for w in writable:
            if _inside(r, w) or _inside(w, r):
                raise AccessError(
                    f"Access grants overlap with different modes: {r} (read) and {w} (write); "
                    "the read-only one could be written through the other. Grant each path once.")


# The restricted runtime's library layer, in process and in the restricted worker alike.
LIBRARY_LAYER = ("dangerous members hidden; string evaluators checked with the policy; "
                 "library settings restored after each step")


@dataclass(frozen=True)
class Isolation:
    """What an executor enforces, and by what. `layers` maps a concern to its enforcers;
    `kernel_layers` each kernel layer (seccomp, the user / network / mount / PID namespaces,
    Landlock, the drop, no_new_privs, rlimits) to "on: ...", "off: ..." or "unavailable: ...",
    with the reason; `missing` what nothing covers."""

    place: str
    layers: dict[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    kernel_layers: dict[str, str] = field(default_factory=dict)

    @property
    def kernel(self) -> bool:
        """Files and network are enforced by the kernel (Landlock, the worker's own root, or a
        container)."""
        files = self.layers.get("files", "")
        return "Landlock" in files or "container" in files or "mount namespace" in files

    def __str__(self) -> str:
        width = max((len(k) for k in (*self.layers, *self.kernel_layers)), default=0)
        lines = [f"{self.place}:"] + [f"  {k.ljust(width)}  {v}" for k, v in self.layers.items()]
        if self.kernel_layers:
            lines.append("  kernel layers:")
            lines += [f"  {k.ljust(width)}  {v}" for k, v in self.kernel_layers.items()]
        lines += [f"  missing: {m}" for m in self.missing]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"place": self.place, "layers": dict(self.layers), "missing": list(self.missing),
                "kernel_layers": dict(self.kernel_layers)}
