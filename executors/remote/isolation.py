"""What a subprocess worker or a container enforces, per concern, in words (`Isolation`).

The subprocess's table is built from the worker's own `HardeningReport` (sent at configure,
before any model code ran in it) when there is one, else predicted from this host (same kernel,
same user) until the worker has started. Values read from the report are checked for type: a
worker that sends nonsense gets "unknown", never an exception.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..access import LIBRARY_LAYER, Isolation

__all__ = ["container_isolation", "predicted_hardening", "subprocess_isolation"]

POLICY = {"restricted": "restricted AST whitelist (executors.restricted)", "open": "open (full Python)"}


def _get(report: Any, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(report, dict):
            return default
        report = report.get(key, default)
    return report


def predicted_hardening(network: bool, harden: bool) -> dict[str, Any] | None:
    """What the worker will report on this host (a rough HardeningReport.to_dict()), or None
    when it will not harden. Used before the first start."""
    if not harden:
        return None
    from ..worker.hardening import landlock

    abi = landlock.abi_version()
    root = os.geteuid() == 0
    return {
        "landlock": {"abi": abi, "restricted": abi > 0, "fs": abi > 0,
                     "tcp": "open" if network else ("denied" if abi >= 4 else "unsupported"),
                     "scopes": ["ABSTRACT_UNIX_SOCKET", "SIGNAL"] if abi >= 6 else [],
                     "not_covered": [], "predicted": True},
        "privileges": {"dropped": root, "user": "nobody" if root else None,
                       "uid": 65534 if root else os.getuid()},
        "network_namespace": {"entered": root and not network},
        "unusable_grants": [],
    }


def _user_name(uid: Any) -> str:
    try:
        import pwd

        return pwd.getpwuid(int(uid)).pw_name
    except (KeyError, TypeError, ValueError, ImportError):
        return "uid"


def _files(landlock: dict, harden: bool, audit_hook: bool) -> tuple[str, list[str]]:
    hook = " + audit hook" if audit_hook else ""
    if landlock.get("restricted") and landlock.get("fs"):
        return f"Landlock ABI {_get(landlock, 'abi', default='?')}{hook}", []
    if audit_hook:
        return "audit hook only (no kernel layer)", ["files: no kernel layer"]
    why = "harden=False" if not harden else "Landlock is not available on this kernel"
    return f"nothing ({why})", [f"files: nothing enforces the grants ({why})"]


def _network(report: dict, network: bool, audit_hook: bool) -> tuple[str, list[str]]:
    if network:
        return "open: the host's network namespace, TCP not handled", []
    tcp = _get(report, "landlock", "tcp")
    parts = []
    if _get(report, "network_namespace", "entered") is True:
        parts.append("network namespace (empty, lo down)")
    if tcp in ("denied", "ports"):
        parts.append("Landlock TCP")
    if audit_hook:
        parts.append("audit hook")
    missing = []
    if _get(report, "network_namespace", "entered") is not True:
        missing.append("network: UDP and non-TCP sockets are open (no network namespace: "
                       "the host is not root)" if parts else "network: nothing denies it")
    return " + ".join(parts) or "nothing", missing


def subprocess_isolation(*, policy: str, report: dict[str, Any] | None, harden: bool, network: bool,
                         memory_mb: int | None, processes: str, audit_hook: bool = False) -> Isolation:
    """The SubprocessExecutor's table. `report`: the worker's HardeningReport as a dict (or
    predicted_hardening()); None when it does not harden. `processes`: what caps its processes."""
    report = report if isinstance(report, dict) else {}
    landlock = _get(report, "landlock", default={}) or {}
    missing: list[str] = []
    files, gaps = _files(landlock, harden, audit_hook)
    missing += gaps
    net, gaps = _network(report, network, audit_hook)
    missing += gaps
    kernel = bool(landlock.get("restricted"))
    if not kernel:  # one line says what is missing, and what still holds
        why = ("harden=False" if not harden else "Landlock is not available here" if sys.platform
               == "linux" else f"no kernel layer on {sys.platform}")
        holds = ("files and network are held by the audit-hook guard alone; the policy, the "
                 "guard, process isolation, rlimits and the hard kill at the deadline still hold"
                 if audit_hook else "process isolation, rlimits and the hard kill at the deadline "
                 "hold, nothing else (the open policy)")
        missing = [f"kernel: none ({why}): {holds} (Access(require='kernel') refuses to run like "
                   "this)"] + ([] if audit_hook else [g for g in missing if g.startswith("files:")])
    layers = {"files": files, "network": net,
              "processes": (f"no execve (Landlock: nothing is executable) + {processes}" if kernel
                            else processes)}
    privileges = _get(report, "privileges", default={}) or {}
    if privileges.get("dropped") is True:
        layers["user"] = f"{_user_name(privileges.get('uid'))} (uid {privileges.get('uid')}), no capabilities"
    elif os.geteuid() == 0:
        layers["user"] = "root (harden=False)" if not harden else "root"
        missing.append("user: the worker runs as root")
    else:
        layers["user"] = f"uid {os.getuid()} (the host's user: not root, nothing to drop)"
        if kernel and (_get(landlock, "abi", default=0) or 0) < 9:
            missing.append("files: pathname UNIX sockets the host's user may open (Landlock < ABI 9 "
                           "does not govern them; only a root host drops to nobody)")
    scopes = landlock.get("scopes") or []
    if scopes:
        layers["ipc"] = "Landlock scopes: no signals to or abstract UNIX sockets of other processes"
    layers["memory"] = (f"RLIMIT_DATA ({memory_mb} MB + the runtime's allowance, on top of the worker "
                        "and its libraries once loaded; a looser RLIMIT_AS)" if memory_mb
                        else "none (Limits.max_memory_mb=None)")
    layers["time"] = "soft deadline in the worker + hard kill by the host"
    layers["policy"] = POLICY.get(policy, policy)
    if audit_hook:
        layers["libraries"] = LIBRARY_LAYER
    unusable = report.get("unusable_grants") or []
    missing += [f"grant unusable by the sandbox user: {_get(u, default=u)}" for u in unusable][:10]
    return Isolation(place="SubprocessExecutor", layers=layers, missing=tuple(missing))


def container_isolation(*, policy: str, network: bool | str, user: str, memory_mb: int | None,
                        pids_limit: int, audit_hook: bool = False) -> Isolation:
    """The DockerExecutor's table: the container is the boundary."""
    if network is False:
        net = "container: network none (only lo)"
    elif network is True:
        net = "open: the engine's default bridge network"
    else:
        net = f"open: Docker network {network!r}"
    uid = user.split(":")[0]
    layers = {
        "files": "container: read-only root, the grants bind-mounted at their own paths "
                 "(read-only / read-write), tmpfs /tmp" + (" + audit hook" if audit_hook else ""),
        "network": net,
        "processes": f"container pids cgroup (max {pids_limit})",
        "user": f"uid {uid} in the container, all capabilities dropped, no-new-privileges",
        "syscalls": "the engine's default seccomp profile",
        "memory": (f"container memory cgroup ({memory_mb} MB, no swap)" if memory_mb
                   else "none (Limits.max_memory_mb=None)"),
        "time": "soft deadline in the worker + the host removes the container",
        "policy": POLICY.get(policy, policy),
    }
    return Isolation(place="DockerExecutor", layers=layers, missing=())
