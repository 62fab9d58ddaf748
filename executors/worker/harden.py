"""What the worker does to itself before it reads its first frame, and the checks it keeps making.
Stdlib only.

The host passes process settings as a JSON object in argv[1] (`harden(spec)`):
  parent   the host's pid: die with it (PR_SET_PDEATHSIG), and exit at once if it is already gone
  rlimits  {"RLIMIT_AS": bytes, ...}: applied with soft = hard, so model code cannot raise them
           (unless it runs as root)
Kernel file-system and network rules (Landlock) are a separate module next to this one; each
setting is one small function so that more can be added without touching the others.
"""

from __future__ import annotations

import os
import time

__all__ = ["CpuBackstop", "harden", "has_children", "protect_channel"]


def harden(spec: dict) -> None:
    """Apply the process settings the host asked for (see the module docstring)."""
    _die_with_parent(spec.get("parent"))
    _apply_rlimits(spec.get("rlimits"))


def _die_with_parent(parent) -> None:
    if not isinstance(parent, int):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
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


def has_children() -> bool:
    """Does this process have live child processes (forks, subprocesses) right now?"""
    me = os.getpid()
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children", "rb") as f:
                if f.read().strip():
                    return True
        return False
    except OSError:
        pass
    try:  # no /proc/.../children: scan parent pids
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        if int(f.read().rsplit(b")", 1)[1].split()[1]) == me:
                            return True
                except (OSError, ValueError, IndexError):
                    continue
    except OSError:
        pass
    return False


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
