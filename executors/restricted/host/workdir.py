"""The working directory of in-process steps: relative paths resolve against the workdir.

The current directory is one per process, so it is shared with every host thread. A step moves
the process into its workdir when no other step is running in another thread, and moves back
when the last one ends; a step that starts while another step (with another workdir) runs keeps
the current directory, and its relative paths resolve there (the capability guard still judges
every path against that step's own grants). Use absolute paths or SubprocessExecutor when
several in-process steps run at once.
"""

from __future__ import annotations

import os
import threading


class _Workdirs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._saved: bytes | None = None  # the host's directory while a step holds the process
        # Paths as bytes, the kernel's form: no encoding or decoding a step.
        self._encoded: dict[str, bytes] = {}

    def enter(self, workdir: str | None) -> None:
        """One more running step; the first one moves the process into its workdir."""
        with self._lock:
            self._active += 1
            if workdir is None or self._active != 1:
                return
            target = self._encoded.get(workdir)
            if target is None:
                if len(self._encoded) > 64:
                    self._encoded.clear()
                target = self._encoded[workdir] = os.fsencode(workdir)
            try:
                saved = os.getcwdb()
                if saved == target:  # already there (a worker lives in its workdir)
                    return
                os.chdir(target)
            except OSError:  # the host's cwd or the workdir is gone: stay where we are
                return
            self._saved = saved

    def leave(self) -> None:
        """One step fewer; the last one moves the process back."""
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._saved is not None:
                try:
                    os.chdir(self._saved)
                except OSError:
                    pass
                self._saved = None


WORKDIRS = _Workdirs()


def release_descriptors(workdir: str) -> int:
    """When an executor closes, the descriptors its steps left open on files in its private
    workdir (a file object kept in a variable, a library's handle) point at /dev/null instead:
    the workdir's files are gone for good, and the numbers stay taken until the model's objects
    close them (closing them outright would let a later host file get the same number, which the
    model's object would then close). Linux only (/proc/self/fd); returns how many."""
    base = os.path.realpath(workdir) + os.sep
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return 0
    released = 0
    null = None
    try:
        for fd in fds:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(base):
                if null is None:
                    null = os.open(os.devnull, os.O_RDWR)
                try:
                    os.dup2(null, fd)
                    released += 1
                except OSError:
                    pass
    finally:
        if null is not None:
            os.close(null)
    return released
