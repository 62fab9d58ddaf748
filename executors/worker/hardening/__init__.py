"""Kernel-enforced confinement for the subprocess worker: seccomp, namespaces for every user,
Landlock, root dropped.

Stdlib only (plus `_ctypes`), relative imports only, so the worker can carry it as plain files.
Every function returns a frozen report (`to_dict()` for the wire) of what is in force; a step that
was expected to work and did not raises `HardeningError`, never leaves a half-confined process
believing it is confined. docs/kernel-isolation.md has the kernel facts relied on.

    harden(read, write, network, user="nobody", seccomp=bpf) -> HardeningReport   # all of it
    isolate_process(network, join_net) -> NamespaceReport   # at the worker's start (forks)
    restrict(read, write, network, scope=True) -> LandlockReport     # Landlock alone
    abi_version() -> int                                             # 0: no Landlock here
    drop_privileges(user) -> PrivilegeReport
    python_paths(network=False) -> list[str]                         # the runtime's read set

Modules: _kernel (libc via _ctypes, HardeningError, the record base), landlock, privileges
(root, capabilities, network namespace), namespaces (user, PID, the worker's own root),
seccomp (loading the host's filter), runtime (python_paths, exposing a runtime under a closed
directory), holds (which layers hold against native code; the import gate). Few modules on
purpose: each one costs the worker's cold start ~0.1-0.2 ms.

The order, over the worker's life:

0. at its start (`isolate_process`, single-threaded, before any frame): one unshare(2) for a PID
   namespace, an empty network namespace (network=False; root may join one the host kept) and,
   for an ordinary user, the user namespace that allows them; then a fork: the child, PID 1 of
   its namespace, is the worker. Unavailable namespaces are reported, not fatal.
harden(), at configure, once the runtime is imported:
1. refuse if several threads run (Landlock, no_new_privs, seccomp and the bounding set are per
   thread)
2. root, or an ordinary user in its user namespace: a private mount namespace whose root holds
   only the runtime (read-only), the grants and a private /tmp (`namespaces.new_root`)
3. build the Landlock ruleset in that view: opening the granted paths needs today's credentials
4. root: drop to the target user, verified; in a user namespace: give up its capabilities
5. no_new_privs + landlock_restrict_self
6. seccomp: the host's allowlist, for good (`seccomp.load`)
"""

import os

from . import namespaces as _namespaces
from . import seccomp as _seccomp
from ._kernel import FrozenRecord, HardeningError
from .landlock import (
    LandlockReport,
    Rule,
    Ruleset,
    Skipped,
    _checked_ports,
    abi_version,
    errata,
    path_list,
    restrict,
    thread_count,
)
from .namespaces import NamespaceReport, RootReport, isolate_process
from .privileges import (
    Capabilities,
    NetworkNamespaceReport,
    PrivilegeReport,
    capabilities,
    drop_privileges,
    drop_to,
    enter_network_namespace,
    resolve_user,
)
from .runtime import (
    MountReport,
    closed_ancestors,
    expose_paths,
    python_paths,
    python_paths_explained,
)
from .seccomp import SeccompReport

__all__ = [
    "Capabilities",
    "HardeningError",
    "HardeningReport",
    "LandlockReport",
    "MountReport",
    "NamespaceReport",
    "NetworkNamespaceReport",
    "PrivilegeReport",
    "RootReport",
    "Rule",
    "Ruleset",
    "SeccompReport",
    "Skipped",
    "abi_version",
    "capabilities",
    "drop_privileges",
    "enter_network_namespace",
    "errata",
    "expose_paths",
    "harden",
    "isolate_process",
    "python_paths",
    "python_paths_explained",
    "restrict",
]

# Writable whatever the grants: the bit bucket (the file rule gets READ/WRITE/TRUNCATE only).
ALWAYS_WRITABLE = ("/dev/null",)


class HardeningReport(FrozenRecord):
    """Everything `harden()` did. `namespaces`: user / net / pid (a NamespaceReport); `mounts`:
    the worker's own root (a RootReport); `seccomp`: the filter (a SeccompReport).
    `unusable_grants` lists (path, "read"|"write") grants that Landlock allows but the file
    permissions refuse to the dropped user (chown them to it). `shareable`: {"net": bool}, whether
    a later worker may join this one's (empty) network namespace."""

    __slots__ = ("landlock", "privileges", "namespaces", "mounts", "seccomp", "unusable_grants",
                 "shareable", "phases_us")


def _unusable_grants(read: list, write: list, missing: set) -> list[tuple[str, str]]:
    # os.access() answers with the real uid, i.e. the dropped user; Landlock does not take part.
    # A grant under a directory the user cannot enter is unusable too (access() says so).
    out = []
    for paths, mode, label in ((read, os.R_OK, "read"), (write, os.R_OK | os.W_OK, "write")):
        for path in paths:
            wanted = mode | (os.X_OK if os.path.isdir(path) else 0)
            if path not in missing and not os.access(path, wanted):
                out.append((path, label))
    return out


def harden(
    read=(), write=(), network=False, *, user="nobody", scope=True, runtime=True, join=None,
    namespaces=True, landlock=True, seccomp=None, tmp_mb=64
) -> HardeningReport:
    """Confine this process for good: its own root, Landlock grants, no network, not root,
    an allowlist of system calls.

    read / write / network: as for `restrict()`; the Python runtime's own paths are added to
    `read` when `runtime` (see `python_paths()`).  user: who to become when running as root
    (None keeps root).  join: {"net": fd}, an empty network namespace to join instead of making
    one (root; used only when `isolate_process` has not run in this process).
    namespaces / landlock: False leaves that layer out, as a kernel without it would.
    seccomp: {"bpf": bytes, "allowed": n} from the host (`executors.remote.syscalls`), or None.
    tmp_mb: the private /tmp's size.
    """
    threads = thread_count()
    if threads > 1:
        raise HardeningError(1, f"harden() must run before any thread starts ({threads} run)")
    read = path_list("read", read)  # every argument checked before anything irreversible
    write = path_list("write", write)
    _checked_ports(network)
    if type(tmp_mb) is not int or tmp_mb < 1:
        raise TypeError(f"tmp_mb must be a positive int, not {tmp_mb!r}")
    join_net = _checked_join(join)
    bpf = _checked_seccomp(seccomp)
    is_root = os.geteuid() == 0
    target = resolve_user(user) if is_root and user is not None else None
    runtime_paths = python_paths(network=network is not False) if runtime else []
    clock = _Clock()
    early = _early(namespaces, network, join_net)
    mounts = _own_root(namespaces, is_root or early.user == "on", runtime_paths + read, write,
                       tmp_mb, early)
    clock.lap("own_root")
    # the private /tmp is the worker's own; the host's /tmp (no root of its own) never is
    writable = write + list(ALWAYS_WRITABLE) + (["/tmp"] if mounts.tmp else [])
    if target is not None and mounts.namespace != "on":
        _runtime_reachable(runtime_paths, target)
    ruleset = Ruleset(runtime_paths + read, writable, network, scope=scope,
                      abi=None if landlock else 0)
    clock.lap("landlock")
    try:
        if target is not None:
            privileges = drop_to(*target)
        elif early.user == "on":
            privileges = _gave_up_capabilities()
        else:
            privileges = drop_privileges(user) if user is not None else _kept_root()
        clock.lap("drop")
        landlock_report: LandlockReport = ruleset.enforce()
        clock.lap("landlock")
    finally:
        ruleset.close()
    if bpf is None:
        filtered = _seccomp.not_loaded("off", "no filter was given")
    else:
        filtered = _seccomp.load(bpf[0], bpf[1])
    clock.lap("seccomp")
    return HardeningReport(
        landlock=landlock_report,
        privileges=privileges,
        namespaces=early,
        mounts=mounts,
        seccomp=filtered,
        unusable_grants=(
            _unusable_grants(read, write, {skip.path for skip in landlock_report.skipped})
            if privileges.dropped
            else ()
        ),
        shareable={"net": is_root and early.net == "on"},
        phases_us={"namespaces_at_start": _namespaces.EARLY_COST_US[0] if _namespaces.EARLY_COST_US
                   else 0, **clock.laps},
    )


class _Clock:
    """Microseconds spent per phase (the benchmark reads them: benchmarks/subprocess_overhead.py)."""

    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self._last = self._now()
        self.laps: dict = {}

    def lap(self, name: str) -> None:
        now = self._now()
        self.laps[name] = self.laps.get(name, 0) + round((now - self._last) * 1e6)
        self._last = now


def _checked_join(join):
    if join is None:
        return None
    if not isinstance(join, dict) or set(join) - {"net"}:
        raise TypeError(f"join must be a dict with a 'net' descriptor, not {join!r}")
    fd = join.get("net")
    if fd is not None and (type(fd) is not int or fd < 0):
        raise TypeError(f"join: namespace descriptors must be ints, not {fd!r}")
    return fd


def _checked_seccomp(seccomp):
    if seccomp is None:
        return None
    if type(seccomp) is not dict or type(seccomp.get("bpf")) is not bytes:
        raise TypeError("seccomp must be {'bpf': bytes, 'allowed': int} or None")
    return seccomp["bpf"], int(seccomp.get("allowed") or 0)


def _early(namespaces: bool, network, join_net) -> NamespaceReport:
    """What isolate_process() did at the worker's start; called here when it did not run (a
    direct harden() call: no PID namespace then, as that needs a fork)."""
    if _namespaces.EARLY:
        if join_net is not None:
            os.close(join_net)
        return _namespaces.EARLY[0]
    if not namespaces:
        if join_net is not None:
            os.close(join_net)
        return NamespaceReport(user="off", net="off", pid="off", why="left out", interfaces=())
    return isolate_process(network is not False, join_net, pid=False)


def _own_root(namespaces: bool, capable: bool, read: list, write: list, tmp_mb,
              early: NamespaceReport) -> RootReport:
    if not namespaces:
        return RootReport(namespace="off", read=(), write=(), tmp=0, why="left out")
    if not capable:
        return RootReport(namespace="unavailable", read=(), write=(), tmp=0,
                          why=f"no user namespace ({early.why})")
    return _namespaces.new_root(read, write + list(ALWAYS_WRITABLE), tmp_mb)


def _runtime_reachable(paths: list, target) -> None:
    """Without a root of its own, a worker dropping to `target` must still reach the runtime."""
    _name, uid, gid = target
    for path in paths:
        closed = closed_ancestors(os.path.realpath(path), uid, gid)
        if closed:
            raise HardeningError(
                13, f"without a mount namespace the user {uid} cannot reach the runtime at {path} "
                f"({closed[0]} is closed to it); install Python where every user can read it")


def _gave_up_capabilities() -> PrivilegeReport:
    from .privileges import _last_cap, drop_capabilities

    caps = drop_capabilities(_last_cap())
    _kernel_prctl_nnp()
    return PrivilegeReport(
        was_root=False, dropped=False, user=None, uid=os.getuid(), gid=os.getgid(),
        groups=os.getgroups(), capabilities=Capabilities(**caps), no_new_privs=True,
        regain_refused=True,
        note="not root: the capabilities of its own user namespace given up, bounding set empty")


def _kernel_prctl_nnp() -> None:
    from . import _kernel

    _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)


def _kept_root() -> PrivilegeReport:
    return PrivilegeReport(
        was_root=os.geteuid() == 0,
        dropped=False,
        user=None,
        uid=os.getuid(),
        gid=os.getgid(),
        groups=os.getgroups(),
        capabilities=capabilities(),
        no_new_privs=False,
        regain_refused=False,
        note="user=None: privileges kept",
    )
