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
"""

from ._record import HardeningError
from .harden import HardeningReport, harden
from .landlock import LandlockReport, Rule, Ruleset, Skipped, abi_version, errata, restrict
from .mounts import MountReport, expose_paths
from .paths import python_paths, python_paths_explained
from .privileges import (
    Capabilities,
    NetworkNamespaceReport,
    PrivilegeReport,
    capabilities,
    drop_privileges,
    enter_network_namespace,
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
