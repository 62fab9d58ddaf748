"""One subprocess worker as the host sees it: its pipes, its kill, its pids cgroup, its spawner.

`SubprocessExecutor` (executor.py) starts workers through `_spawner` and wraps each in a
`ProcessWorker`; this module knows only processes: non-blocking pipes with poll deadlines, killing
a worker with everything it spawned (its pids cgroup, else its session), and sweeping the cgroups
of hosts that died without cleaning up.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..remote.link import Channel, WorkerHandle

__all__ = ["PIDS_CGROUP_ROOT", "PipeChannel", "ProcessWorker", "sweep_orphans"]

PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")


class PipeChannel(Channel):
    """The worker's stdin/stdout pipes, non-blocking, with poll-based deadlines."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._r = read_fd
        self._w = write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._rpoll = select.poll()
        self._rpoll.register(read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._wpoll = select.poll()
        self._wpoll.register(write_fd, select.POLLOUT | select.POLLERR)
        self._closed = False

    def read(self, max_bytes: int, timeout: float | None) -> bytes:
        if timeout == 0:  # a poll (the silence check between steps): one syscall, no failed read
            if not self._rpoll.poll(0):
                raise TimeoutError
            deadline = time.monotonic()
        else:  # an answer is awaited: it is rarely there yet, so wait first
            deadline = None if timeout is None else time.monotonic() + timeout
            _poll(self._rpoll, deadline)
        while True:
            try:
                return os.read(self._r, max_bytes)
            except BlockingIOError:
                pass
            _poll(self._rpoll, deadline)

    def write(self, data: bytes, timeout: float | None) -> None:
        try:  # a frame fits in the pipe's buffer almost always: one write, no deadline to keep
            n = os.write(self._w, data)
        except BlockingIOError:
            n = 0
        if n == len(data):
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        view = memoryview(data)[n:]
        while view:
            try:
                n = os.write(self._w, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            _poll(self._wpoll, deadline)

    def fileno(self) -> int | None:
        return None if self._closed else self._r

    def write_fileno(self) -> int | None:
        return None if self._closed else self._w

    def read_nowait(self, max_bytes: int) -> bytes | None:
        try:
            return os.read(self._r, max_bytes)
        except BlockingIOError:
            return None

    def write_nowait(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self._w, data)
        except BlockingIOError:
            return 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._r, self._w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _poll(poller: select.poll, deadline: float | None) -> None:
    if deadline is None:
        poller.poll()
        return
    left = deadline - time.monotonic()
    if left <= 0 or not poller.poll(max(1, int(left * 1000 + 0.999))):
        if time.monotonic() >= deadline:
            raise TimeoutError


class ProcessWorker(WorkerHandle):
    """A worker child process, its session and (when available) its pids cgroup."""

    def __init__(self, proc: subprocess.Popen, cgroup: Path | None) -> None:
        self.proc = proc
        self.cgroup = cgroup
        assert proc.stdout is not None and proc.stdin is not None
        # The channel owns dup'ed fds; the Popen file objects are closed right away.
        self.channel = PipeChannel(os.dup(proc.stdout.fileno()), os.dup(proc.stdin.fileno()))
        proc.stdout.close()
        with contextlib.suppress(OSError):
            proc.stdin.close()
        self._killed = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        pid = self.proc.pid
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)  # the worker is its own session and group leader
        if self.cgroup is not None:
            _kill_cgroup(self.cgroup)
        else:
            _kill_session(pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()
        self.channel.close()
        if self.proc.stderr is not None:
            with contextlib.suppress(OSError):
                self.proc.stderr.close()

    def exit_description(self) -> str:
        try:
            rc = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "still running"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = str(-rc)
            text = f"killed by signal {name}"
            if -rc == signal.SIGKILL:
                text += " - possibly the memory limit (Limits.max_memory_mb) or a kill from outside"
        else:
            text = f"exited with code {rc}"
        tail = self._stderr_tail()
        return f"{text}; stderr: {tail}" if tail else text

    def _stderr_tail(self) -> str:
        err = self.proc.stderr
        if err is None or err.closed:
            return ""
        try:
            os.set_blocking(err.fileno(), False)
            data = err.read(65536) or b""
        except (OSError, ValueError):
            return ""
        return data[-500:].decode("utf-8", "replace").strip()


def _kill_cgroup(cgroup: Path) -> None:
    """SIGKILL every process in the cgroup until it is empty (pids.max bounds the race)."""
    procs = cgroup / "cgroup.procs"
    for _ in range(200):
        try:
            pids = [int(p) for p in procs.read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.002)


def _kill_session(sid: int) -> None:
    """Without a cgroup: kill processes still in the worker's session (group-changers too)."""
    for _ in range(5):
        found = False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rindex(b")") + 2:].split()
                if int(fields[3]) == sid:  # field 6 of stat: session id
                    found = True
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ValueError):
                continue
        if not found:
            return


def _pids_cgroup_usable() -> bool:
    return os.access(PIDS_CGROUP_ROOT, os.W_OK) and (PIDS_CGROUP_ROOT / "cgroup.procs").exists()


_stale_swept = False


def sweep_orphans() -> int:
    """Kill what is left of workers whose host died without cleaning up: a SIGKILLed host takes
    its workers along (PR_SET_PDEATHSIG), but not processes those workers spawned. Their pids
    cgroups name the dead host's pid. Runs once per process on the first spawn; returns how many
    cgroups were removed. A no-op where no pids cgroup is writable."""
    removed = 0
    try:
        entries = list(PIDS_CGROUP_ROOT.glob("codeagent-*"))
    except OSError:
        return 0
    for path in entries:
        try:
            host_pid = int(path.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if _pid_running(host_pid):
            continue
        _kill_cgroup(path)
        with contextlib.suppress(OSError):
            path.rmdir()
            removed += 1
    return removed


def _pid_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _sweep_stale_cgroups() -> None:
    global _stale_swept
    if not _stale_swept:
        _stale_swept = True
        sweep_orphans()


class _Spawner:
    """Spawns workers from long-lived threads only: PR_SET_PDEATHSIG fires when the thread that
    forked the child exits, so spawning from short-lived threads would kill warm workers. The main
    thread spawns directly; other threads hand the job to one daemon thread."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def spawn(self, fn: Callable[[], Any]) -> Any:
        if threading.current_thread() is threading.main_thread():
            return fn()  # the main thread lives as long as the process: no hand-off needed
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="codeagent-spawner", daemon=True)
                self._thread.start()
        done: queue.Queue = queue.Queue(maxsize=1)
        self._jobs.put((fn, done))
        ok, value = done.get()
        if ok:
            return value
        raise value

    def _run(self) -> None:
        while True:
            fn, done = self._jobs.get()
            try:
                done.put((True, fn()))
            except BaseException as exc:
                done.put((False, exc))
            del fn, done  # keep nothing of the job (its closure may reference an executor) alive


_spawner = _Spawner()
