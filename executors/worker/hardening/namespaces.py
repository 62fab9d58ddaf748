"""Namespaces for every user: user (when not root), network and PID at the worker's start; at
configure, a mount namespace whose root holds only the runtime, the grants and a private /tmp.

`isolate_process(network, join_net)` runs before the worker has read a frame: one unshare(2)
makes the PID namespace (and an empty network namespace, and for an ordinary user the user
namespace that lets it make the others: uid and gid mapped to themselves, setgroups denied),
then the process forks. The child is PID 1 of the new namespace and goes on as the worker; the
parent closes every descriptor, waits for it and exits with its status, so the host's pid, the
process group, the session and the pids cgroup all still hold both. A process cannot be moved
into a PID namespace itself (unshare sets it for its children), hence the fork.

`new_root(read, write, tmp_mb)` as root or in that user namespace: a private mount namespace
(made recursively private and verified so before anything is mounted), a tmpfs as the new root,
each granted path bind-mounted at its own path (read-only but the write grants), the symlinks on
the way (/lib -> usr/lib) recreated, a tmpfs /tmp, then pivot_root and the old root detached.
What is not there cannot be reached by any system call: the host's /tmp, /run, /var/run,
/dev/log, home directories (where UNIX sockets live), /proc.

(`privileges.drop_capabilities()` then gives up the capabilities the user namespace gave.)

Whatever is unavailable (no user namespaces for this user, no CAP_SYS_ADMIN) is reported with
the reason and nothing is half made: unshare(2) with several flags is all or nothing. A failure
after something irreversible happened raises HardeningError.
"""

import os
import stat

from . import _kernel
from ._kernel import FrozenRecord, HardeningError
from .runtime import _shared_mounts

__all__ = ["EARLY", "NamespaceReport", "RootReport", "isolate_process", "new_root"]

# Where the new root's tmpfs may be mounted (in the private namespace only): the first of these
# that no bound path holds, since a recursive bind of a path above the stage would copy the stage
# into itself.
_STAGES = ("/tmp", "/mnt", "/media", "/srv", "/opt", "/var/tmp", "/run", "/boot", "/home")
_DEVICES = ("/dev/null", "/dev/urandom", "/dev/zero")
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4


class NamespaceReport(FrozenRecord):
    """user / net / pid: "on", "joined", "off" (not asked for) or "unavailable".
    why: the reason for anything not on.  interfaces: what the network namespace holds."""

    __slots__ = ("user", "net", "pid", "why", "interfaces")


# What isolate_process() did in this process (the configure step reports it), and what it cost
# the worker's timeline, in microseconds (the unshare and both forks, as the worker saw it).
EARLY: list = []
EARLY_COST_US: list = []


def _unavailable(why: str, network: bool, pid: bool) -> NamespaceReport:
    state = "unavailable"
    return NamespaceReport(user=state if os.geteuid() else "off", net="off" if network else state,
                           pid=state if pid else "off", why=why, interfaces=())


def isolate_process(network: bool, join_net=None, *, pid: bool = True) -> NamespaceReport:
    """Before the worker reads a frame, single-threaded: see the module doc. Returns in the child
    (PID 1 of its namespace); the parent never returns. pid=False: no PID namespace, no fork
    (a direct `harden()` call)."""
    import time

    start = time.perf_counter()
    root = os.geteuid() == 0
    flags = _kernel.CLONE_NEWPID if pid else 0
    joined = False
    if not network:
        if root and join_net is not None:
            from .privileges import join_network_namespace

            join_network_namespace(join_net)  # verified: only lo; raises HardeningError
            joined = True
        else:
            flags |= _kernel.CLONE_NEWNET
    if join_net is not None:
        os.close(join_net)
    if not root:
        flags |= _kernel.CLONE_NEWUSER
    uid, gid = os.getuid(), os.getgid()
    try:
        if flags:
            _kernel.unshare(flags)
    except OSError as exc:
        report = _unavailable(f"unshare: {exc.strerror} (user namespaces "
                              f"{'not needed: root' if root else 'refused to this user'})", network, pid)
        EARLY[:] = [report]
        return report
    if not root:
        _map_ids(uid, gid)
    interfaces = ()
    if not network:
        from .privileges import _interfaces

        interfaces = _interfaces()
    if pid:
        _fork_into_pid_namespace()
    report = NamespaceReport(
        user="off" if root else "on", net="off" if network else ("joined" if joined else "on"),
        pid="on" if pid else "off", why="root needs no user namespace" if root else "",
        interfaces=interfaces)
    EARLY[:] = [report]
    EARLY_COST_US[:] = [round((time.perf_counter() - start) * 1e6)]
    return report


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _map_ids(uid: int, gid: int) -> None:
    # A process that changed its uid is not dumpable, and its /proc/self files then belong to
    # root: its own map files would refuse it. An ordinary user's process is dumpable anyway.
    if _kernel.prctl(_PR_GET_DUMPABLE) != 1:
        _kernel.prctl(_PR_SET_DUMPABLE, 1)
    try:  # setgroups must be denied before an unprivileged process may write gid_map
        _write("/proc/self/setgroups", b"deny")
        _write("/proc/self/gid_map", f"{gid} {gid} 1".encode())
        _write("/proc/self/uid_map", f"{uid} {uid} 1".encode())
    except OSError as exc:
        raise HardeningError(exc.errno, f"cannot map ids in the new user namespace: {exc}")


def _fork_into_pid_namespace() -> None:
    """Three processes from here: this one (the host's handle: its pid, group, session and
    cgroup) waits; its child is PID 1 of the new namespace and only reaps; that one's child, PID
    2, returns from here and is the worker. Not PID 1 itself, because the kernel spares a
    namespace's init every signal it has no handler for, SIGKILL and RLIMIT_CPU's SIGXCPU from
    inside included: the worker must die of them as any process does."""
    import signal

    # Ctrl-C is the host's: a stray SIGINT must not end the waiter or the init (the worker
    # ignores it too, from main())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status_r, status_w = os.pipe()
    init = _fork("the PID namespace's init")
    if init == 0:
        os.close(status_r)
        worker = _fork("the worker into its PID namespace")
        if worker == 0:
            os.close(status_w)
            _kernel.prctl(_kernel.PR_SET_PDEATHSIG, 9)  # die with the init that reaps us
            return
        _kernel.prctl(_kernel.PR_SET_PDEATHSIG, 9)
        status = _reap(worker, keep=status_w)
        os.write(status_w, status.to_bytes(4, "little"))
        os._exit(0)  # as init: everything left in the namespace is killed with it
    os.close(status_w)
    _reap(init, keep=status_r)
    status = int.from_bytes(os.read(status_r, 4) or b"\0\0\0\0", "little")
    if os.WIFSIGNALED(status):  # die of the same signal, so the host's report names it
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP: no handler to reset
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _fork(what: str) -> int:
    try:
        return os.fork()
    except OSError as exc:
        raise HardeningError(exc.errno, f"cannot fork {what}: {exc.strerror}")


def _reap(pid: int, keep: int) -> int:
    """Close every descriptor but `keep` (the channel is the worker's alone), reap every child
    until `pid` has ended; its wait status."""
    os.closerange(0, keep)
    os.closerange(keep + 1, 1 << 16)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 9  # (cannot happen: `pid` is ours) as if killed
        if done == pid:
            return status


# ------------------------------------------------------------------------- the new root


class RootReport(FrozenRecord):
    """namespace: "on" (a private mount namespace with only what is listed), "off" or
    "unavailable".  read / write: the paths bound (read-only / read-write).  tmp: the private
    /tmp's size in MiB (0: a grant holds /tmp itself).  why: the reason when not on."""

    __slots__ = ("namespace", "read", "write", "tmp", "why")


def _chain(path: str) -> tuple[str, list[tuple[str, str]]]:
    """(real path, [(symlink path, its text), ...]) for every symlink met resolving `path`."""
    links = []
    seen = 0
    current = "/"
    parts = [p for p in path.split("/") if p]
    while parts:
        part = parts.pop(0)
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            seen += 1
            if seen > 40:
                raise OSError(40, f"too many symlinks under {path}")  # ELOOP
            text = os.readlink(candidate)
            links.append((candidate, text))
            target = os.path.normpath(os.path.join(current, text))
            parts = [p for p in target.split("/") if p] + parts
            current = "/"
        elif part == "..":
            current = os.path.dirname(current)
        else:
            current = candidate
    return current, links


def _plan(read, write) -> tuple[list, list]:
    """[(real path, writable)] without paths inside another of the same mode, and the symlinks."""
    entries: dict[str, bool] = {}
    links: dict[str, str] = {}
    for paths, writable in ((read, False), (write, True)):
        for path in paths:
            try:
                real, chain = _chain(path)
            except OSError:
                continue
            if not os.path.lexists(real):
                continue
            entries[real] = entries.get(real, False) or writable
            links.update(chain)
    kept = []
    for real in sorted(entries):
        writable = entries[real]
        if any(_inside(real, other) and entries[other] == writable for other, _w in kept):
            continue
        kept.append((real, writable))
    return kept, sorted(links.items())


def _inside(path: str, root: str) -> bool:
    return path != root and (root == "/" or path.startswith(root + "/"))


def _mkdirs(path: str) -> None:
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        os.mkdir(directory, 0o755)
        os.chmod(directory, 0o755)  # whatever the umask


def _setattr(path: str, set_: int, clear: int, recursive: bool) -> None:
    attr = _kernel.u64(set_) + _kernel.u64(clear) + _kernel.u64(0) + _kernel.u64(0)
    flags = _kernel.AT_RECURSIVE if recursive else 0
    _kernel.syscall("mount_setattr", -100, path, flags, attr, len(attr))  # AT_FDCWD


def new_root(read, write, tmp_mb: int = 64) -> RootReport:
    """As root or with CAP_SYS_ADMIN in this process's user namespace: see the module doc.
    `read` / `write`: absolute paths (missing ones are skipped). The cwd is kept (by path)."""
    cwd = os.getcwd()
    entries, links = _plan(list(read) + list(_DEVICES), write)
    stage = next((d for d in _STAGES if os.path.isdir(d) and not os.path.islink(d)
                  and not any(d == real or _inside(d, real) for real, _w in entries)), None)
    if stage is None:
        return RootReport(namespace="unavailable", read=(), write=(), tmp=0,
                          why="the grants hold every place a new root could be built")
    try:
        _kernel.unshare(_kernel.CLONE_NEWNS)
    except OSError as exc:
        return RootReport(namespace="unavailable", read=(), write=(), tmp=0,
                          why=f"unshare(CLONE_NEWNS): {exc.strerror}")
    pinned: list = []
    try:
        _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE, None)
        shared = _shared_mounts()
        if shared:  # a mount below would propagate back to the host
            raise HardeningError(1, f"mounts still shared with the host after MS_PRIVATE: {shared}")
        pinned = [(real, writable, os.open(real, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW))
                  for real, writable in entries]
        _kernel.mount("tmpfs", stage, "tmpfs", _kernel.MS_NOSUID | _kernel.MS_NODEV,
                      "mode=0755,size=1m,nr_inodes=4096")
        tmp = 0 if any(real in ("/", "/tmp") for real, _w in entries) else tmp_mb
        if tmp:
            _mkdirs(stage + "/tmp")
            _kernel.mount("tmpfs", stage + "/tmp", "tmpfs", _kernel.MS_NOSUID | _kernel.MS_NODEV,
                          f"mode=1777,size={int(tmp)}m,nr_inodes=65536")
        for real, _writable, fd in pinned:  # sorted: a parent is mounted before its children
            target = stage + real
            _mkdirs(os.path.dirname(target))
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                if not os.path.isdir(target):
                    os.mkdir(target, 0o755)
            elif not os.path.lexists(target):
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            _kernel.mount(f"/proc/self/fd/{fd}", target, None, _kernel.MS_BIND | _kernel.MS_REC,
                          None)
        for link, text in links:
            if not os.path.lexists(stage + link):
                _mkdirs(os.path.dirname(stage + link))
                os.symlink(text, stage + link)
        # everything read-only and setuid-free, then the write grants and /tmp writable again
        _setattr(stage, _kernel.MOUNT_ATTR_RDONLY | _kernel.MOUNT_ATTR_NOSUID, 0, True)
        for real, writable, _fd in pinned:
            if writable:
                _setattr(stage + real, 0, _kernel.MOUNT_ATTR_RDONLY, True)
        if tmp:
            _setattr(stage + "/tmp", 0, _kernel.MOUNT_ATTR_RDONLY, False)
        os.chdir(stage)
        _kernel.syscall("pivot_root", ".", ".")
        _kernel.libc("umount2", ".", _kernel.MNT_DETACH)
        os.chdir("/")
        os.chdir(cwd)
    except OSError as exc:
        if isinstance(exc, HardeningError):
            raise
        raise HardeningError(exc.errno or 1, f"cannot build the worker's mount namespace: {exc}")
    finally:
        for _real, _writable, fd in pinned:
            os.close(fd)
    return RootReport(namespace="on", read=tuple(r for r, w in entries if not w),
                      write=tuple(r for r, w in entries if w), tmp=tmp, why="")
