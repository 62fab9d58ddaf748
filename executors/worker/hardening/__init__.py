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
2. build the Landlock ruleset: opening the granted paths needs today's credentials
3. root, network=False: a new, empty network namespace (needs CAP_SYS_ADMIN)
4. root: a private mount namespace when the runtime is under a directory the target user
   cannot enter (needs CAP_SYS_ADMIN)
5. root: drop to the target user, verified (bounding set emptied first, while still root)
6. no_new_privs + landlock_restrict_self (needs nothing)
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
    resolve_user,
)
from .runtime import MountReport, expose_paths, python_paths, python_paths_explained

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
    Landlock allows but the file permissions refuse to the dropped user (chown them to it)."""

    __slots__ = ("landlock", "privileges", "network_namespace", "mounts", "unusable_grants")


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
    read=(), write=(), network=False, *, user="nobody", scope=True, runtime=True
) -> HardeningReport:
    """Confine this process for good: Landlock grants, no network, not root.

    read / write / network: as for `restrict()`; the Python runtime's own paths are added to
    `read` when `runtime` (see `python_paths()`).  user: who to become when running as root
    (None keeps root — then nothing stops the process from using root's file permissions, e.g.
    on root-only UNIX sockets that Landlock < ABI 9 does not govern).  When not root, steps 3-5
    are no-ops and the report says so.
    """
    threads = thread_count()
    if threads > 1:
        raise HardeningError(1, f"harden() must run before any thread starts ({threads} run)")
    read = path_list("read", read)  # every argument checked before anything irreversible
    write = path_list("write", write)
    is_root = os.geteuid() == 0
    target = resolve_user(user) if is_root and user is not None else None
    runtime_paths = python_paths(network=network is not False) if runtime else []
    ruleset = Ruleset(runtime_paths + read, write + list(ALWAYS_WRITABLE), network, scope=scope)
    try:
        netns = NetworkNamespaceReport(entered=False, interfaces=(), note="network granted")
        if network is False:
            netns = enter_network_namespace()
        mounts = MountReport(namespace=False, covered=(), exposed=(), unreachable=())
        if target is not None:
            mounts = expose_paths(runtime_paths + read + write, target[1], target[2])
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
    )


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
