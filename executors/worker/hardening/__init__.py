"""Kernel-enforced confinement for the subprocess worker: Landlock, root dropped, no network.

Stdlib only (plus `_ctypes`), relative imports only, so the worker can carry it as plain files.
Every function returns a frozen report (`to_dict()` for the wire) of what is in force; a step that
was expected to work and did not raises `HardeningError`, never leaves a half-confined process
believing it is confined. docs/kernel-isolation.md has the kernel facts relied on.

    harden(read, write, network, user="nobody") -> HardeningReport   # all of it, in order
    restrict(read, write, network, scope=True) -> LandlockReport     # Landlock alone
    abi_version() -> int                                             # 0: no Landlock here
    drop_privileges(user) -> PrivilegeReport
    enter_network_namespace() -> NetworkNamespaceReport
    expose_paths(paths, uid, gid) -> MountReport
    python_paths(network=False) -> list[str]                         # the runtime's read set

Modules: _kernel (libc via _ctypes, HardeningError, the record base), landlock, privileges
(root, capabilities, network namespace), runtime (python_paths, mount namespace); harden() is
here. Few modules on purpose: each one costs the worker's cold start ~0.1-0.2 ms.

harden() confines the worker in the one order that works:

1. refuse if several threads run (Landlock, no_new_privs and the bounding set are per thread)
2. root, `join`: enter the namespaces an earlier worker made and the host kept (see below)
3. build the Landlock ruleset: opening the granted paths needs today's credentials
4. root, network=False: a new, empty network namespace (needs CAP_SYS_ADMIN), unless joined
5. root: a private mount namespace when the runtime is under a directory the target user
   cannot enter (needs CAP_SYS_ADMIN), unless the joined one already exposes it
6. root: drop to the target user, verified (bounding set emptied first, while still root)
7. no_new_privs + landlock_restrict_self (needs nothing)

Sharing namespaces (a cold-start saving, ~1.5 ms of the ~3 ms steps 4-5 cost here): the report's
`shareable` says which of this worker's namespaces hold nothing of its own (the network one is
empty; the mount one exposes only the runtime, no grant). The host may keep them open
(/proc/PID/ns/net, /mnt, opened before any model code ran) and hand them to later workers of the
same interpreter as inherited descriptors: `join={"net": fd, "mnt": fd}`. A joined network
namespace is verified empty (only `lo`, down); a joined mount namespace is a snapshot, so it is
used only if every runtime path and grant names the same inode in it as outside, else the worker
goes back and builds its own.
"""

import os

from ._kernel import FrozenRecord, HardeningError
from .landlock import (
    LandlockReport,
    Rule,
    Ruleset,
    Skipped,
    abi_version,
    errata,
    path_list,
    restrict,
    thread_count,
)
from .privileges import (
    Capabilities,
    NetworkNamespaceReport,
    PrivilegeReport,
    capabilities,
    drop_privileges,
    drop_to,
    enter_network_namespace,
    join_network_namespace,
    resolve_user,
)
from .runtime import (
    MountReport,
    expose_paths,
    join_mount_namespace,
    needs_exposure,
    python_paths,
    python_paths_explained,
)

__all__ = [
    "Capabilities",
    "HardeningError",
    "HardeningReport",
    "LandlockReport",
    "MountReport",
    "NetworkNamespaceReport",
    "PrivilegeReport",
    "Rule",
    "Ruleset",
    "Skipped",
    "abi_version",
    "capabilities",
    "drop_privileges",
    "enter_network_namespace",
    "errata",
    "expose_paths",
    "harden",
    "python_paths",
    "python_paths_explained",
    "restrict",
]

# Writable whatever the grants: the bit bucket (the file rule gets READ/WRITE/TRUNCATE only).
ALWAYS_WRITABLE = ("/dev/null",)


class HardeningReport(FrozenRecord):
    """Everything `harden()` did. `unusable_grants` lists (path, "read"|"write") grants that
    Landlock allows but the file permissions refuse to the dropped user (chown them to it).
    `shareable`: {"net": bool, "mnt": bool}, the namespaces a later worker may join (see above)."""

    __slots__ = ("landlock", "privileges", "network_namespace", "mounts", "unusable_grants",
                 "shareable")


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
    read=(), write=(), network=False, *, user="nobody", scope=True, runtime=True, join=None
) -> HardeningReport:
    """Confine this process for good: Landlock grants, no network, not root.

    read / write / network: as for `restrict()`; the Python runtime's own paths are added to
    `read` when `runtime` (see `python_paths()`).  user: who to become when running as root
    (None keeps root — then nothing stops the process from using root's file permissions, e.g.
    on root-only UNIX sockets that Landlock < ABI 9 does not govern).  join: {"net": fd, "mnt":
    fd} namespaces to enter instead of making new ones (root only; the fds are closed here).
    When not root, steps 2 and 4-6 are no-ops and the report says so.
    """
    threads = thread_count()
    if threads > 1:
        raise HardeningError(1, f"harden() must run before any thread starts ({threads} run)")
    read = path_list("read", read)  # every argument checked before anything irreversible
    write = path_list("write", write)
    join = _checked_join(join)
    is_root = os.geteuid() == 0
    target = resolve_user(user) if is_root and user is not None else None
    runtime_paths = python_paths(network=network is not False) if runtime else []
    joined = _join(join, network, runtime_paths + read + write) if is_root else _close(join)
    ruleset = Ruleset(runtime_paths + read, write + list(ALWAYS_WRITABLE), network, scope=scope)
    try:
        netns = NetworkNamespaceReport(entered=False, interfaces=(), note="network granted")
        if network is False:
            netns = joined.get("net") or enter_network_namespace()
        mounts = MountReport(namespace=False, covered=(), exposed=(), unreachable=())
        own_mounts = False
        if target is not None:
            mounts, own_mounts = _expose(runtime_paths, read + write, target, "mnt" in joined)
            privileges = drop_to(*target)
        else:
            privileges = drop_privileges(user) if user is not None else _kept_root()
        landlock: LandlockReport = ruleset.enforce()
    finally:
        ruleset.close()
    return HardeningReport(
        landlock=landlock,
        privileges=privileges,
        network_namespace=netns,
        mounts=mounts,
        unusable_grants=(
            _unusable_grants(read, write, {skip.path for skip in landlock.skipped})
            if privileges.dropped
            else ()
        ),
        shareable={"net": bool(netns.entered) and "net" not in joined, "mnt": own_mounts},
    )


def _checked_join(join) -> dict:
    if join is None:
        return {}
    if not isinstance(join, dict) or set(join) - {"net", "mnt"}:
        raise TypeError(f"join must be a dict with 'net' and/or 'mnt' descriptors, not {join!r}")
    for fd in join.values():
        if fd is not None and (type(fd) is not int or fd < 0):
            raise TypeError(f"join: namespace descriptors must be ints, not {fd!r}")
    return {k: v for k, v in join.items() if v is not None}


def _close(join: dict) -> dict:
    for fd in join.values():
        try:
            os.close(fd)
        except OSError:
            pass
    return {}


def _join(join: dict, network, paths) -> dict:
    """Step 2: the namespaces handed over, each verified. Returns {"net": report, "mnt": True}
    for those joined."""
    joined = {}
    try:
        if "net" in join and network is False:
            joined["net"] = join_network_namespace(join["net"])
        if "mnt" in join and join_mount_namespace(join["mnt"], paths):
            joined["mnt"] = True
    finally:
        _close(join)
    return joined


def _expose(runtime_paths: list, grants: list, target, joined: bool) -> tuple:
    """Step 5: (MountReport, whether the namespace made holds only the runtime, so is shareable).
    Grants under a closed directory get one combined namespace, never shared. A joined namespace
    exposes the runtime already (`join_mount_namespace` verified every runtime path names the
    same inode there): planning the runtime's mounts again would cost ~0.5 ms and find nothing."""
    _name, uid, gid = target
    if needs_exposure(grants, uid, gid):
        return expose_paths(runtime_paths + grants, uid, gid), False
    if joined:
        return MountReport(namespace=True, covered=(), exposed=(), unreachable=()), False
    report = expose_paths(runtime_paths, uid, gid)
    return report, report.namespace


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
