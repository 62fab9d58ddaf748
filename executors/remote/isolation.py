"""What a subprocess worker or a container enforces, per concern, in words (`Isolation`).

The subprocess's table is built from the worker's own `HardeningReport` (sent at configure,
before any model code ran in it) when there is one, else predicted from this host (same kernel,
same user) until the worker has started. Values read from the report are checked for type: a
worker that sends nonsense gets "unknown", never an exception.
"""

from __future__ import annotations

import os
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


def predicted_hardening(network: bool, harden: bool, leave_out=()) -> dict[str, Any] | None:
    """What the worker will report on this host (a rough HardeningReport.to_dict()), or None
    when it will not harden. Used before the first start."""
    if not harden:
        return None
    from ..worker.hardening import landlock
    from . import syscalls

    abi = 0 if "landlock" in leave_out else landlock.abi_version()
    root = os.geteuid() == 0
    program = syscalls.program(network)
    namespaces = "namespaces" not in leave_out
    userns, why = (True, "") if root else _user_namespaces()
    ns_state = ("on" if userns else "unavailable") if namespaces else "off"
    seccomp = ("off" if "seccomp" in leave_out else "on" if program.bpf else "unavailable")
    return {
        "predicted": True,
        "landlock": {"abi": abi, "restricted": abi > 0, "fs": abi > 0, "no_new_privs": True,
                     "tcp": "open" if network else ("denied" if abi >= 4 else "unsupported"),
                     "scopes": ["ABSTRACT_UNIX_SOCKET", "SIGNAL"] if abi >= 6 else []},
        "privileges": {"was_root": root, "dropped": root, "user": "nobody" if root else None,
                       "uid": 65534 if root else os.getuid(), "no_new_privs": True},
        "namespaces": {"user": "off" if root else ns_state, "net": "off" if network else ns_state,
                       "pid": ns_state, "why": why or ("left out" if not namespaces else "")},
        "mounts": {"namespace": ns_state, "why": why or ("left out" if not namespaces else ""),
                   "tmp": 0},
        "seccomp": {"state": seccomp, "allowed": program.allowed,
                    "why": "left out" if seccomp == "off" else program.why},
        "unusable_grants": [],
    }


def _user_namespaces() -> tuple[bool, str]:
    for path, name in (("/proc/sys/user/max_user_namespaces", "user.max_user_namespaces"),
                       ("/proc/sys/kernel/unprivileged_userns_clone",
                        "kernel.unprivileged_userns_clone")):
        try:
            with open(path) as f:
                if int(f.read()) == 0:
                    return False, f"{name} is 0"
        except (OSError, ValueError):
            continue
    return True, ""


def _user_name(uid: Any) -> str:
    try:
        import pwd

        return pwd.getpwuid(int(uid)).pw_name
    except (KeyError, TypeError, ValueError, ImportError):
        return "uid"


def _state(value: Any, on: str, why: Any) -> str:
    if value in ("on", "joined"):
        return f"on: {on}"
    return f"{value if value in ('off', 'unavailable') else 'unknown'}: {why or '?'}"


def kernel_layers(report: dict[str, Any], harden: bool, rlimits: dict[str, int],
                  leave_out=()) -> dict[str, str]:
    """Each kernel layer as "on: ...", "off: ..." or "unavailable: ...", with the reason."""
    limits = ", ".join(f"{k.removeprefix('RLIMIT_')} {v}" for k, v in rlimits.items())
    if not harden:
        off = "off: harden=False"
        return {name: off for name in ("seccomp", "user namespace", "network namespace",
                                       "mount namespace", "PID namespace", "Landlock", "drop",
                                       "no_new_privs")} | {"rlimits": f"on: {limits}"}
    ns, mounts = _get(report, "namespaces", default={}), _get(report, "mounts", default={})
    sec, lock = _get(report, "seccomp", default={}), _get(report, "landlock", default={})
    priv = _get(report, "privileges", default={})
    why = _get(ns, "why")
    user = _get(ns, "user")
    layers = {
        "seccomp": _state(_get(sec, "state"), f"an allowlist of {_get(sec, 'allowed')} system "
                          "calls, EPERM for the rest (no ptrace, process_vm_*, mount, bpf, "
                          "perf_event_open, io_uring, new namespaces, execve; sockets only as "
                          "granted)", _get(sec, "why")),
        "user namespace": ("off: not needed (root drops to nobody)" if user == "off" and
                           _get(priv, "was_root") else _state(user, "own uid mapped to itself, "
                                                              "its capabilities given up", why)),
        "network namespace": ("off: network granted (the host's namespace)"
                              if _get(ns, "net") == "off" and _get(report, "landlock", "tcp") == "open"
                              else _state(_get(ns, "net"), "empty, lo down", why)),
        "mount namespace": _state(_get(mounts, "namespace"), "only the runtime (read-only), the "
                                  f"grants and a private /tmp ({_get(mounts, 'tmp')} MiB)",
                                  _get(mounts, "why")),
        "PID namespace": _state(_get(ns, "pid"), "its own (the worker is PID 2 under an init that "
                                "only reaps)", why),
        "Landlock": (f"on: ABI {_get(lock, 'abi')}" + (f", scopes {', '.join(lock['scopes'])}"
                                                       if _get(lock, "scopes") else "")
                     if _get(lock, "restricted") else "off: left out" if "landlock" in leave_out
                     else "unavailable: this kernel has no Landlock (ABI 0)"),
        "drop": (f"on: {_user_name(_get(priv, 'uid'))} (uid {_get(priv, 'uid')}), no capabilities"
                 if _get(priv, "dropped") else f"on: not root (uid {_get(priv, 'uid')}), no "
                 "capabilities" if _get(priv, "was_root") is False else "off: runs as root"),
        "no_new_privs": "on" if _get(priv, "no_new_privs") or _get(lock, "no_new_privs") else "off",
        "rlimits": f"on: {limits}",
    }
    return layers


def _files(report: dict, harden: bool, audit_hook: bool) -> tuple[str, list[str]]:
    hook = " + audit hook" if audit_hook else ""
    landlock = _get(report, "landlock", default={}) or {}
    parts = []
    if landlock.get("restricted") and landlock.get("fs"):
        parts.append(f"Landlock ABI {_get(landlock, 'abi', default='?')}")
    if _get(report, "mounts", "namespace") == "on":
        parts.append("its own mount namespace (runtime read-only, grants, private /tmp)")
    if parts:
        return " + ".join(parts) + hook, []
    if audit_hook:
        return "audit hook only (no kernel layer)", ["files: no kernel layer"]
    why = "harden=False" if not harden else "no Landlock and no mount namespace here"
    return f"nothing ({why})", [f"files: nothing enforces the grants ({why})"]


def _network(report: dict, network: bool, audit_hook: bool) -> str:
    if network:
        return "open: the host's network namespace, TCP not handled; sockets: INET, INET6 only"
    parts = []
    if _get(report, "namespaces", "net") in ("on", "joined"):
        parts.append("network namespace (empty, lo down)")
    if _get(report, "seccomp", "state") == "on":
        parts.append("seccomp: no socket of any family")
    if _get(report, "landlock", "tcp") in ("denied", "ports"):
        parts.append("Landlock TCP")
    if audit_hook:
        parts.append("audit hook")
    return " + ".join(parts) or "nothing"


def subprocess_isolation(*, policy: str, report: dict[str, Any] | None, harden: bool, network: bool,
                         memory_mb: int | None, processes: str, rlimits: dict[str, int] | None = None,
                         audit_hook: bool = False, leave_out=()) -> Isolation:
    """The SubprocessExecutor's table. `report`: the worker's HardeningReport as a dict (or
    predicted_hardening()); None when it does not harden. `processes`: what caps its processes."""
    from ..worker.hardening import holds

    report = report if isinstance(report, dict) else {}
    files, missing = _files(report, harden, audit_hook)
    gaps = holds.missing(report if harden else None)
    if gaps and policy == "restricted":
        missing = [*gaps, "native packages that hand out raw memory (numpy and all on it) are "
                   f"refused unless {holds.OPT_IN}"] + [m for m in missing if m not in gaps]
    elif gaps:
        missing = [*gaps, *missing]
    seccomp_on = _get(report, "seccomp", "state") == "on"
    layers = {"files": files, "network": _network(report, network, audit_hook),
              "processes": (f"no execve (seccomp) + {processes}" if seccomp_on else processes)}
    if _get(report, "namespaces", "pid") == "on":
        layers["processes"] += "; its own PID namespace"
    privileges = _get(report, "privileges", default={}) or {}
    if privileges.get("dropped") is True:
        layers["user"] = f"{_user_name(privileges.get('uid'))} (uid {privileges.get('uid')}), no capabilities"
    elif os.geteuid() == 0:
        layers["user"] = "root (harden=False)" if not harden else "root"
    else:
        layers["user"] = f"uid {os.getuid()} (the host's user: not root, no capabilities)"
    scopes = _get(report, "landlock", "scopes") or []
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
    return Isolation(place="SubprocessExecutor", layers=layers, missing=tuple(missing),
                     kernel_layers=kernel_layers(report, harden, rlimits or {}, leave_out))


def container_isolation(*, policy: str, network: bool | str, user: str, memory_mb: int | None,
                        pids_limit: int, audit_hook: bool = False, seccomp: bool = False) -> Isolation:
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
        "syscalls": "the engine's default seccomp profile" + (
            " + the worker's own allowlist, stacked (as the subprocess worker's)" if seccomp else ""),
        "memory": (f"container memory cgroup ({memory_mb} MB, no swap)" if memory_mb
                   else "none (Limits.max_memory_mb=None)"),
        "time": "soft deadline in the worker + the host removes the container",
        "policy": POLICY.get(policy, policy),
    }
    return Isolation(place="DockerExecutor", layers=layers, missing=())
