"""The host's side of `Access` for places with a worker (subprocess, container).

Who the code runs as. A root host runs model code as `nobody` (uid/gid 65534: the subprocess
worker drops to it, the container starts as it); any other host runs it as its own user, which
owns the grants already (a container gets `--user uid:gid`). Landlock and the container decide
*where* the code may go; the uid decides what the kernel's file permissions still allow there.

Lending (root hosts only): `nobody` cannot write directories root made, so the workdir and the
write grants are lent to it for the executor's life and given back on close():

  - the private workdir (created by `Access.resolve`) is simply chowned: it is ours, new, empty,
    and removed on close;
  - a workdir or write grant the user named is walked without following symlinks (os.fwalk,
    lchown, relative to directory descriptors, so a symlink swapped in mid-walk changes nothing
    outside the tree); every directory and regular file is chowned to the sandbox user and its
    owner recorded. Skipped: symlinks (nothing to lend) and regular files with several hard
    links — one of the other names may be outside the grant, and chowning it would hand that
    file to the sandbox too (such a file stays read-only to the code);
  - on release the recorded owners come back (same inode only), and what the code created
    (owned by the sandbox user, one link) goes to the owner of the grant's top directory, with
    setuid/setgid bits cleared.

Leases are counted per path within this process (two executors granting one directory share a
lease). A host killed before close() leaves its grants owned by 65534: chown them back.
Read grants are never touched: they must be readable by 65534 (the worker reports, and the
executor refuses to start with, grants the sandbox user cannot use).
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass, field

from ..access import ResolvedAccess

__all__ = ["SANDBOX_IDS", "Lease", "sandbox_ids"]

SANDBOX_IDS = (65534, 65534)  # nobody:nogroup on Debian-likes, the container's user everywhere
_SETID_BITS = stat.S_ISUID | stat.S_ISGID


def sandbox_ids() -> tuple[int, int]:
    """(uid, gid) model code runs as outside this process: nobody for a root host, else ours."""
    return SANDBOX_IDS if os.geteuid() == 0 else (os.getuid(), os.getgid())


@dataclass
class _Lent:
    count: int
    owner: tuple[int, int]  # the top's owner: what the code created goes to it
    record: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # rel -> dev, ino, uid, gid


_lent: dict[str, _Lent] = {}
_lock = threading.Lock()


class Lease:
    """The workdir and write grants of one executor, lent to the sandbox user while it lives.

    A no-op unless this process is root. `release()` is idempotent."""

    def __init__(self, access: ResolvedAccess) -> None:
        self._paths: list[str] = []
        self._released = False
        if os.geteuid() != 0:
            return
        uid, gid = SANDBOX_IDS
        if access.private_workdir:
            os.chown(access.workdir, uid, gid)
        shared = access.write if access.private_workdir else (access.workdir, *access.write)
        try:
            for path in dict.fromkeys(shared):
                _lend(path)
                self._paths.append(path)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        for path in reversed(self._paths):
            _give_back(path)


def _lend(path: str) -> None:
    with _lock:
        lent = _lent.get(path)
        if lent is not None:
            lent.count += 1
            return
        top = os.stat(path, follow_symlinks=False)
        lent = _Lent(count=1, owner=(top.st_uid, top.st_gid))
        for rel, dir_fd, name, st in _entries(path):
            if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                continue  # another name of this inode may be outside the grant
            lent.record[rel] = (st.st_dev, st.st_ino, st.st_uid, st.st_gid)
            if (st.st_uid, st.st_gid) != SANDBOX_IDS:
                os.chown(name, *SANDBOX_IDS, dir_fd=dir_fd, follow_symlinks=False)
        _lent[path] = lent


def _give_back(path: str) -> None:
    with _lock:
        lent = _lent.get(path)
        if lent is None:
            return
        lent.count -= 1
        if lent.count > 0:
            return
        del _lent[path]
        try:
            for rel, dir_fd, name, st in _entries(path):
                was = lent.record.get(rel)
                if was is not None and was[:2] == (st.st_dev, st.st_ino):
                    owner = was[2:]
                elif st.st_uid == SANDBOX_IDS[0] and (stat.S_ISDIR(st.st_mode) or st.st_nlink == 1):
                    owner = lent.owner  # made by the code
                else:
                    continue
                if (st.st_uid, st.st_gid) != owner:
                    os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mode & _SETID_BITS:
                    _clear_setid(name, dir_fd, st)
        except OSError:
            pass  # the tree is gone or changed under us: nothing more to give back


def _clear_setid(name: str, dir_fd: int | None, st: os.stat_result) -> None:
    # Through a descriptor opened without following symlinks and checked to be the same inode.
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            os.fchmod(fd, stat.S_IMODE(now.st_mode) & ~_SETID_BITS)
    finally:
        os.close(fd)


def _entries(path: str):
    """(relative path, dir fd, name, lstat) for `path` and everything below it, symlinks not
    followed. The top comes first with dir_fd None and its absolute path as the name."""
    yield "", None, path, os.stat(path, follow_symlinks=False)
    if not os.path.isdir(path) or os.path.islink(path):
        return
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(path, follow_symlinks=False):
        rel_dir = os.path.relpath(dirpath, path)
        for name in (*dirnames, *filenames):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            yield os.path.normpath(os.path.join(rel_dir, name)), dir_fd, name, st
