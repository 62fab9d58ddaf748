"""Keep the Python runtime reachable after root is dropped, without moving it.

The trap this solves: a Python installed under a directory only root may enter (pyenv under
/root, mode 0700, as on the project's machines) stops importing anything new the moment the
worker becomes `nobody`: `import decimal` fails with ModuleNotFoundError. The files are world-
readable; only an ancestor directory is not searchable.

The fix, as root, before the drop: a private mount namespace in which each such ancestor is
covered by an empty tmpfs (mode 0755) and only the needed child is bind-mounted back at its own
path. Paths stay identical (`__file__`, realpath, sys.path all keep working), the rest of the
ancestor (e.g. everything else in /root) disappears from the worker's view, and nothing changes
for the host: the namespace is made recursively private before anything is mounted, and that is
verified from /proc/self/mountinfo.
"""

import os
import stat

from . import _ffi
from ._record import FrozenRecord, HardeningError


class MountReport(FrozenRecord):
    """namespace: a private mount namespace was entered.  covered: directories hidden under a
    tmpfs.  exposed: paths bind-mounted back inside them.  unreachable: (path, reason) for paths
    the target user still cannot reach (a deeper ancestor, or the path itself, is closed)."""

    __slots__ = ("namespace", "covered", "exposed", "unreachable")


def _allows(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    """Classic permission bits as the target user (no supplementary groups, no ACLs) sees them."""
    if st.st_uid == uid:
        shift = 6
    elif st.st_gid == gid:
        shift = 3
    else:
        shift = 0
    return (st.st_mode >> shift) & bits == bits


def closed_ancestors(path: str, uid: int, gid: int, cache: dict | None = None) -> list[str]:
    """The directories above `path`, outermost first, that `uid` may not search."""
    cache = {} if cache is None else cache
    closed = []
    current = "/"
    for part in path.strip("/").split("/"):
        searchable = cache.get(current)
        if searchable is None:
            searchable = cache[current] = _allows(os.stat(current), uid, gid, 1)
        if not searchable:
            closed.append(current)
        current = os.path.join(current, part)
    return closed


def first_closed_ancestor(path: str, uid: int, gid: int) -> str | None:
    """The outermost directory above `path` that `uid` may not search, or None."""
    closed = closed_ancestors(path, uid, gid)
    return closed[0] if closed else None


def _plan(paths, uid: int, gid: int):
    """{ancestor: {child name}} to cover and expose, and the paths no plan can open."""
    plan: dict[str, set[str]] = {}
    unreachable = []
    cache: dict = {}
    for given in paths:
        path = os.path.realpath(given)
        if not os.path.exists(path):
            continue
        closed = closed_ancestors(path, uid, gid, cache)
        if not closed:
            continue
        if closed[0] == "/" or len(closed) > 1:
            unreachable.append((given, f"{closed[-1]} is closed to uid {uid}"))
            continue
        child = os.path.relpath(path, closed[0]).split("/")[0]
        plan.setdefault(closed[0], set()).add(child)
    return plan, unreachable


def _shared_mounts() -> list[str]:
    with open("/proc/self/mountinfo", "rb") as info:
        return [os.fsdecode(line.split()[4]) for line in info if b" shared:" in line]


def _enter_private_namespace() -> None:
    try:
        _ffi.unshare(_ffi.CLONE_NEWNS)
        _ffi.mount(None, "/", None, _ffi.MS_REC | _ffi.MS_PRIVATE, None)
    except OSError as exc:
        raise HardeningError(exc.errno, f"cannot enter a private mount namespace: {exc}")
    shared = _shared_mounts()
    if shared:  # a mount over them would propagate back to the host: stop before any
        raise HardeningError(1, f"mounts still shared with the host after MS_PRIVATE: {shared}")


def _cover(ancestor: str, children: set[str]) -> list[str]:
    pinned = {}
    try:
        for child in sorted(children):  # pin each child before the tmpfs hides it
            pinned[child] = os.open(os.path.join(ancestor, child), os.O_PATH | os.O_CLOEXEC)
        flags = _ffi.MS_NOSUID | _ffi.MS_NODEV | _ffi.MS_NOEXEC
        _ffi.mount("tmpfs", ancestor, "tmpfs", flags, "mode=0755,size=64k")
        exposed = []
        for child, fd in pinned.items():
            target = os.path.join(ancestor, child)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            _ffi.mount(f"/proc/self/fd/{fd}", target, None, _ffi.MS_BIND | _ffi.MS_REC, None)
            exposed.append(target)
        return exposed
    except OSError as exc:
        raise HardeningError(
            exc.errno or 1, f"cannot expose {sorted(children)} in {ancestor}: {exc}"
        )
    finally:
        for fd in pinned.values():
            os.close(fd)


def expose_paths(paths, uid: int, gid: int) -> MountReport:
    """As root: make every path in `paths` reachable by uid/gid in a private mount namespace.

    Only the ancestors that block the target user are touched; when none do, no namespace is
    created. Not root: a no-op. Call before drop_privileges() (mounting needs CAP_SYS_ADMIN).
    """
    if os.geteuid() != 0:
        return MountReport(namespace=False, covered=(), exposed=(), unreachable=())
    plan, unreachable = _plan(paths, uid, gid)
    if not plan:
        return MountReport(namespace=False, covered=(), exposed=(), unreachable=unreachable)
    _enter_private_namespace()
    exposed = []
    for ancestor in sorted(plan):
        exposed.extend(_cover(ancestor, plan[ancestor]))
    return MountReport(
        namespace=True, covered=sorted(plan), exposed=exposed, unreachable=unreachable
    )
