"""The Python runtime under confinement: what it needs readable, and keeping it reachable.

python_paths(): the read-only set the runtime itself needs once it is confined. Kept minimal,
each entry with its reason. Nothing here is executable: extension modules and their shared
libraries are loaded with open(2) + mmap(2), and Landlock checks the open (READ_FILE), not
mmap(PROT_EXEC); tests/test_hardening.py imports C extensions under a ruleset with no EXECUTE.

Deliberately absent:
  /proc/self  exposes the environment, memory maps and magic links (/proc/self/root, /fd/N). The
              magic links are not a way out (Landlock checks the object they resolve to, so
              /proc/self/root/etc/passwd is refused unless /etc/passwd is granted; tested), but
              nothing in the runtime needs it, so it stays closed.
  /etc        only the few files named below; /etc/passwd, /etc/shadow, ... stay unreadable.
  the cwd     a relative sys.path entry ('' for `python -c`) means "the directory I was started
              in"; granting it implicitly would open whatever that is.
  /tmp        tempfile needs a writable directory: point TMPDIR at a write grant instead.

expose_paths(): keep the runtime reachable after root is dropped, without moving it. The trap:
a Python installed under a directory only root may enter (pyenv under /root, mode 0700, as on
the project's machines) stops importing anything new the moment the worker becomes `nobody`:
`import decimal` fails with ModuleNotFoundError. The files are world-readable; only an ancestor
directory is not searchable.

The fix, as root, before the drop: a private mount namespace in which each such ancestor is
covered by an empty tmpfs (mode 0755) and only the needed child is bind-mounted back at its own
path. Paths stay identical (`__file__`, realpath, sys.path all keep working), the rest of the
ancestor (e.g. everything else in /root) disappears from the worker's view, and nothing changes
for the host: the namespace is made recursively private before anything is mounted, and that is
verified from /proc/self/mountinfo.
"""

import os
import stat
import sys

from . import _kernel
from ._kernel import FrozenRecord, HardeningError

LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
_RUNTIME_FILES = (
    ("/etc/ld.so.cache", "how the dynamic loader finds extension modules' shared libraries"),
    ("/etc/localtime", "the local time zone (time.localtime, datetime.astimezone)"),
    ("/usr/share/zoneinfo", "zoneinfo.ZoneInfo and the TZ variable"),
    ("/dev/null", "os.devnull, read by libraries that silence output or input"),
    ("/dev/urandom", "randomness for libraries that read the device rather than getrandom(2)"),
)
_NETWORK_FILES = (
    ("/etc/ssl", "CA certificates for ssl.create_default_context() (with network only)"),
    ("/etc/resolv.conf", "DNS servers, for socket.getaddrinfo (with network only)"),
    ("/etc/hosts", "static host names, for socket.getaddrinfo (with network only)"),
    ("/etc/nsswitch.conf", "which name services getaddrinfo asks (with network only)"),
    ("/etc/gai.conf", "getaddrinfo address ordering (with network only)"),
    ("/etc/services", "socket.getservbyname (with network only)"),
)


def python_paths_explained(*, network: bool = False) -> list[tuple[str, str]]:
    """(path, why) for every path the runtime needs readable; only paths that exist, no repeats."""
    candidates = [
        (sys.prefix, "sys.prefix: the environment (site-packages, pyvenv.cfg)"),
        (sys.base_prefix, "sys.base_prefix: the installation (stdlib, lib-dynload)"),
        (sys.exec_prefix, "sys.exec_prefix: platform-specific modules"),
        (sys.base_exec_prefix, "sys.base_exec_prefix: platform-specific modules"),
    ]
    for entry in sys.path:
        if entry and os.path.isabs(entry):
            candidates.append((entry, "a sys.path entry: modules imported after confinement"))
    if sys.executable:
        candidates.append(
            (
                os.path.realpath(sys.executable),
                "the interpreter binary (platform.libc_ver() and sysconfig read it)",
            )
        )
    for directory in LIBRARY_DIRS:
        candidates.append((directory, "shared libraries that extension modules link against"))
    candidates.extend(_RUNTIME_FILES)
    if network:
        candidates.extend(_NETWORK_FILES)
    seen: set[str] = set()
    out = []
    for path, why in candidates:
        path = os.path.normpath(path)
        if path not in seen and os.path.exists(path):
            seen.add(path)
            out.append((path, why))
    return out


# python_paths() per (network, the sys values it reads): a forked worker gets the answer its zygote
# computed before forking instead of ~25 stat calls and a realpath on its cold start (~0.3 ms).
_PATHS_MEMO: dict = {}


def python_paths(*, network: bool = False) -> list[str]:
    """The read-only paths the Python runtime needs after confinement (see the module doc).

    Memoized on everything it reads from `sys`, so a changed sys.path or prefix is seen; which of
    the fixed system files exist (/etc/localtime, /usr/share/zoneinfo, ...) is read once per
    process (a zygote's: once per host). A system file created after that is not granted, so it
    stays unreadable (fails closed); one removed since is reported as skipped by the ruleset."""
    key = (bool(network), sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
           sys.executable, tuple(sys.path))
    paths = _PATHS_MEMO.get(key)
    if paths is None:
        paths = _PATHS_MEMO[key] = tuple(path for path, _why in python_paths_explained(network=network))
    return list(paths)


# ------------------------------------------------------- reachable after the drop (mounts)


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
        _kernel.unshare(_kernel.CLONE_NEWNS)
        _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE, None)
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
        flags = _kernel.MS_NOSUID | _kernel.MS_NODEV | _kernel.MS_NOEXEC
        _kernel.mount("tmpfs", ancestor, "tmpfs", flags, "mode=0755,size=64k")
        exposed = []
        for child, fd in pinned.items():
            target = os.path.join(ancestor, child)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            _kernel.mount(
                f"/proc/self/fd/{fd}", target, None, _kernel.MS_BIND | _kernel.MS_REC, None
            )
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
