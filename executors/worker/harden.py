"""What the worker does to itself before it reads its first frame, and the checks it keeps making.
Stdlib only.

The host passes process settings as a JSON object in argv[1] (`harden(spec)`):
  parent   the host's pid: die with it (PR_SET_PDEATHSIG), and exit at once if it is already gone
  rlimits  {"RLIMIT_NOFILE": n, ...}: applied with soft = hard, so model code cannot raise them
           (unless it runs as root)
  memory   bytes of memory (RLIMIT_DATA) the worker may add once it is ready: applied by
           `cap_memory` after `configure`, when the runtime and the authorized libraries are
           loaded (what they hold is not the model's), with a loose RLIMIT_AS on top (the
           address space polars and pyarrow reserve is not memory they use)
  namespaces  {"network": bool, "join_net": fd or null}: the PID namespace, an empty network
           namespace (or the one the host kept, `join_net`) and, not root, the user namespace,
           made now, before a frame is read (`hardening.isolate_process`: the process forks
           twice, and PID 2 of the new namespace goes on as the worker)
Each setting is one small function so that more can be added without touching the others.

The rest of the kernel confinement (the worker's own root, Landlock, root dropped, seccomp: the
`hardening` package next to this module) comes at `configure`, once the runtime has been
imported: `confine(access, keep)`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["Capture", "CpuBackstop", "cap_memory", "close_other_fds", "confine", "harden", "has_children",
           "open_statm", "protect_channel"]


def harden(spec: dict) -> None:
    """Apply the process settings the host asked for (see the module docstring)."""
    _die_with_parent(spec.get("parent"))
    _apply_rlimits(spec.get("rlimits"))
    _isolate(spec.get("namespaces"))


def _isolate(namespaces) -> None:
    if type(namespaces) is not dict:
        return
    join = namespaces.get("join_net")
    from .hardening import HardeningError, isolate_process

    try:
        isolate_process(namespaces.get("network") is True, join if type(join) is int else None)
    except HardeningError as exc:  # half made: this process must not serve
        os.write(2, f"worker: HardeningError: {exc}\n".encode(errors="replace"))
        os._exit(4)


def _die_with_parent(parent) -> None:
    if not isinstance(parent, int):
        return
    try:  # through the hardening package's libc binding: `import ctypes` costs milliseconds
        from .hardening import _kernel

        _kernel.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass
    if os.getppid() != parent:  # the host died before the death signal was armed
        os._exit(1)


def _apply_rlimits(rlimits) -> None:
    if not isinstance(rlimits, dict) or not rlimits:
        return
    import resource

    for name, value in rlimits.items():
        which = getattr(resource, str(name), None)
        if not isinstance(which, int) or not isinstance(value, int):
            continue
        try:
            _soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY and value > hard:
                value = hard
            resource.setrlimit(which, (value, value))
        except (OSError, ValueError):
            pass


def open_statm() -> int | None:
    """A descriptor on /proc/self/statm, opened before confinement (Landlock closes /proc)."""
    try:
        return os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


# Address space that allocators reserve without using it (polars' and pyarrow's jemalloc reserve
# ~500 MB at their first use): the loose cap on top of the tight one on data.
RESERVED_ADDRESS_SPACE = 2 << 30


def cap_memory(extra, statm) -> None:
    """The memory cap, applied once the worker is ready: RLIMIT_DATA (the private writable
    memory: what allocations use) at what the process holds now plus `extra` bytes, and
    RLIMIT_AS as loosely again plus RESERVED_ADDRESS_SPACE (soft = hard). `statm`: a
    descriptor from `open_statm`, closed here."""
    if type(extra) is not int or statm is None:
        if statm is not None:
            os.close(statm)
        return
    try:
        fields = os.pread(statm, 256, 0).split()
        page = os.sysconf("SC_PAGE_SIZE")
        size, data = int(fields[0]) * page, int(fields[5]) * page
    except (OSError, ValueError, IndexError):
        return
    finally:
        os.close(statm)
    _apply_rlimits({"RLIMIT_DATA": data + extra, "RLIMIT_AS": size + extra + RESERVED_ADDRESS_SPACE})


def protect_channel() -> tuple[int, int, int | None]:
    """Move the protocol channel off fds 0/1 and point 0/1/2 somewhere harmless: fd 0 at
    /dev/null, fds 1/2 at an in-memory capture file that is read back into the logs, so nothing
    model code writes to a raw fd can forge a frame. Returns (fd_in, fd_out, capture_fd)."""
    fd_in = os.dup(0)  # os.dup makes non-inheritable fds: child processes do not get them
    fd_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    capture = None
    try:
        capture = os.memfd_create("worker-output", 0)
    except (AttributeError, OSError):
        try:
            capture = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            capture = None
    if capture is not None:
        import fcntl

        fcntl.fcntl(capture, fcntl.F_SETFL, fcntl.fcntl(capture, fcntl.F_GETFL) | os.O_APPEND)
        os.dup2(capture, 1)
        os.dup2(capture, 2)
    return fd_in, fd_out, capture


class Capture:
    """What the worker's fds 1/2 received: native code's own writes (numpy's seterr(all='print'),
    a Fortran solver's progress, a child process) in the file `protect_channel` put there, read
    back into the step's logs. Each print of a step first takes in what arrived since the last
    look (`since`: the logs keep CPython's order); the step's end takes the rest and empties the
    file (`drain`: only outside a step, the capability guard refuses os.truncate inside one)."""

    def __init__(self, fd: int | None, limit: Callable[[], int]) -> None:
        self.fd = fd
        self.limit = limit  # the step's max_output_chars (it can change with each configure)
        self.seen = 0  # bytes a print has taken in this step

    def since(self) -> str:
        """What arrived since the last look (in a step, before each print)."""
        try:
            # (lseek for the size: a fifth of fstat's cost, which builds a stat_result; the file
            # is O_APPEND, so moving its offset changes no write)
            size = os.lseek(self.fd, 0, os.SEEK_END)
            if size <= self.seen:
                return ""
            data = self._read(self.seen, size)
            self.seen = size
            return data
        except OSError:
            return ""

    def drain(self) -> str:
        """The rest, and the file emptied (between steps)."""
        if self.fd is None:
            return ""
        seen, self.seen = self.seen, 0
        try:
            size = os.fstat(self.fd).st_size
            if not size:
                return ""
            data = self._read(seen, size) if size > seen else ""
            os.ftruncate(self.fd, 0)
            return data
        except OSError:
            return ""

    def _read(self, start: int, end: int) -> str:
        limit = self.limit()
        if end - start <= 2 * limit:
            data = os.pread(self.fd, end - start, start)
        else:
            # bytes, not characters: the middle is never read, so its characters are not counted
            data = (os.pread(self.fd, limit, start) + f"\n... [{end - start - 2 * limit:,} bytes omitted] ...\n".encode()
                    + os.pread(self.fd, limit, end - limit))
        return data.decode("utf-8", "replace")


def has_children() -> bool:
    """Does this process (any of its threads) have child processes, live or zombie, right now?
    waitid(WNOWAIT) asks the kernel without reaping anything and without /proc, which Landlock
    keeps closed to a confined worker."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return True  # None: children, none exited yet; a result: a zombie waits to be reaped
    except ChildProcessError:
        return False
    except (AttributeError, OSError):
        return False


def close_other_fds(keep) -> None:
    """Close every descriptor but `keep`: Landlock does not revoke what is already open."""
    # Never an empty range: CPython's closerange(n, n) becomes close_range(n, n - 1), and
    # closerange(0, 0) closes every descriptor (close_range(0, ~0)).
    start = 0
    for fd in sorted(set(keep)):
        if fd > start:
            os.closerange(start, fd)
        start = max(start, fd + 1)
    try:
        top = os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        top = 65536
    if top > start:
        os.closerange(start, top)


def _paths(value, what: str) -> list:
    if not isinstance(value, list) or not all(isinstance(p, str) and p.startswith("/") for p in value):
        raise ValueError(f"access.{what} must be a list of absolute paths")
    return value


def confine(access: dict, keep) -> dict:
    """Confine this process for good with the host's grants (the `access` of `configure`):
    close stray descriptors, then `hardening.harden()` (its own root, root dropped to
    access["user"], Landlock, seccomp). Returns the report as a plain dict, with `missing`: what
    an owned worker could still reach (`hardening.holds`); raises HardeningError (an OSError) or
    ValueError, after which the worker must not run code.

    access: read, write, network, user as below; namespaces / landlock: false leaves that layer
    out (tests: as a kernel without it); seccomp: {"bpf": base64, "allowed": n} or null;
    tmp_mb: the private /tmp's size."""
    from . import hardening
    from .hardening import holds

    read = _paths(access.get("read", []), "read")
    write = _paths(access.get("write", []), "write")
    network = access.get("network", False)
    if not isinstance(network, bool):
        raise ValueError("access.network must be true or false")
    user = access.get("user")
    if user is not None:
        if not (isinstance(user, list) and len(user) == 2 and all(type(x) is int for x in user)):
            raise ValueError("access.user must be [uid, gid] or null")
        user = (user[0], user[1])
    seccomp = access.get("seccomp")
    if seccomp is not None:
        if type(seccomp) is not dict or type(seccomp.get("bpf")) is not str:
            raise ValueError("access.seccomp must be {'bpf': base64, 'allowed': n} or null")
        import binascii

        seccomp = {"bpf": binascii.a2b_base64(seccomp["bpf"]), "allowed": seccomp.get("allowed")}
    layers = {key: access.get(key, True) is not False for key in ("namespaces", "landlock")}
    tmp_mb = access.get("tmp_mb", 64)
    if type(tmp_mb) is not int or tmp_mb < 1:
        raise ValueError("access.tmp_mb must be a positive int")
    cpu, wall = time.thread_time(), time.perf_counter()
    close_other_fds(keep)
    report = hardening.harden(read, write, network, user=user, seccomp=seccomp, tmp_mb=tmp_mb,
                              **layers).to_dict()
    report["missing"] = holds.missing(report)
    # what confinement cost this worker (CPU is steady under load; the benchmark reads it)
    report["cost_us"] = {"cpu": round((time.thread_time() - cpu) * 1e6),
                         "wall": round((time.perf_counter() - wall) * 1e6)}
    return report


class CpuBackstop:
    """For CPU burnt outside the wall clock (threads): SIGXCPU past this step's share.
    RLIMIT_CPU is cumulative, so it is moved forward before every step."""

    def __init__(self) -> None:
        self.soft_limit = 0.0

    def arm(self, timeout_s) -> None:
        if not timeout_s:
            return  # no time limit: no CPU limit either
        used = time.process_time()
        if self.soft_limit - used >= 2 * float(timeout_s) + 1:
            return  # still far enough ahead: skip the syscalls
        try:
            import resource

            soft = int(used + 4 * float(timeout_s)) + 2
            _old, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard == resource.RLIM_INFINITY or soft <= hard:
                resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
                self.soft_limit = soft
        except (ImportError, OSError, ValueError):
            pass
