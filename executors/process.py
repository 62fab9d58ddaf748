"""SubprocessExecutor: model code runs in a warm child process with OS-enforced limits.

The child is the stdlib-only `executors.worker` package (`remote_link.worker_command`) in its own
session/process group with:
  - rlimits (applied by the worker to itself before it reads its first frame): address space
    and data (Limits.max_memory_mb plus an allowance for the interpreter),
    CPU seconds (re-armed by the worker before each execute), processes (RLIMIT_NPROC; root is
    exempt from it, so a pids cgroup is used too when /sys/fs/cgroup/pids is writable), file size,
    open files, no core dumps;
  - a scrubbed environment (nothing from the host's os.environ unless passed in `env=`) and a
    private temporary working directory, removed on close;
  - PR_SET_PDEATHSIG=SIGKILL (set by the worker itself, which then checks that its parent is
    still the host), so the worker dies with the host even if the host is SIGKILLed; workers are
    spawned from one long-lived thread, because the death signal follows the spawning *thread*.
On a deadline the host kills the whole process group, every process left in the worker's pids
cgroup (or, without one, its session), reaps the worker, and starts a fresh one.

Caveat: root ignores RLIMIT_NPROC, so a host running as root without a writable pids cgroup has
no process cap under policy="open" but the deadline (the restricted policy cannot fork at all).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import ExecutorError, Limits
from .protocol import MAX_FRAME_BYTES
from .remote import RemoteExecutor
from .remote_link import WORKER_PARENT, Channel, WorkerHandle, prepare_worker_code, worker_command

__all__ = ["SubprocessExecutor", "PipeChannel", "ProcessWorker", "sweep_orphans"]

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
PIDS_CGROUP_ROOT = Path("/sys/fs/cgroup/pids")
# Virtual memory the interpreter itself needs on top of what the model code may use.
INTERPRETER_ALLOWANCE_MB = 192
_cgroup_counter = itertools.count(1)


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
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return os.read(self._r, max_bytes)
            except BlockingIOError:
                pass
            _poll(self._rpoll, deadline)

    def write(self, data: bytes, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._w, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            _poll(self._wpoll, deadline)

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


class SubprocessExecutor(RemoteExecutor):
    """Runs code in a warm child process; same contract as LocalExecutor.

    policy: "restricted" (default: the restricted runtime runs inside the child) or "open" (full
        Python in the child, for trusted setups; limits, tools and final_answer still apply).
    python: the interpreter for the worker (the restricted policy needs this package and
        RestrictedPython importable by it).
    cwd: working directory for the worker (default: a private temporary directory, deleted on close).
    env: extra environment variables for the worker; nothing else of the host's environment is passed.
    max_processes, max_file_mb, max_open_files: OS limits on the worker and its children.
    """

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        policy: str = "restricted",
        python: str = sys.executable,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        max_processes: int = 32,
        max_file_mb: int = 64,
        max_open_files: int = 256,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        self.python = str(python)
        self.max_processes = int(max_processes)
        self.max_file_mb = int(max_file_mb)
        self.max_open_files = int(max_open_files)
        self._extra_env = dict(env or {})
        for key, value in self._extra_env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError("env must map str to str")
        if cwd is None:
            self._tmpdir: str | None = tempfile.mkdtemp(prefix="codeagent-worker-")
            self.cwd = self._tmpdir
            # Registered before RemoteExecutor's finalizer, so at exit it runs after the kill.
            self._tmp_finalizer = weakref.finalize(self, shutil.rmtree, self._tmpdir, True)
        else:
            self._tmpdir = None
            self.cwd = os.fspath(cwd)
            if not os.path.isdir(self.cwd):
                raise ValueError(f"cwd {self.cwd!r} is not a directory")
        super().__init__(tools, authorized_imports, limits, policy=policy, max_frame_bytes=max_frame_bytes)

    # -- RemoteExecutor interface -----------------------------------------------------------------
    def _package_paths(self) -> list[str]:
        return [PACKAGE_ROOT] if self.policy == "restricted" else []

    def _on_close(self) -> None:
        if self._tmpdir is not None:
            self._tmp_finalizer()

    def _environment(self) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": self.cwd,
            "TMPDIR": self.cwd,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
        }
        env.update(self._extra_env)
        return env

    def _start_worker(self) -> WorkerHandle:
        cgroup = self._make_cgroup()
        # The worker hardens itself before it reads its first frame (death signal, rlimits):
        # a preexec_fn would force a full fork() of this (large) host instead of vfork(), which
        # costs milliseconds per start.
        spec = _json_arg({"parent": os.getpid(), "rlimits": self._rlimits()})
        prepare_worker_code()
        argv = worker_command(self.python, WORKER_PARENT, spec)
        cwd, env = self.cwd, self._environment()

        def spawn() -> subprocess.Popen:
            return subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
            )

        try:
            proc = _spawner.spawn(spawn)
        except (OSError, subprocess.SubprocessError) as exc:
            if cgroup is not None:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
            raise ExecutorError(f"cannot start the worker with python={self.python!r}: {exc}") from exc
        if cgroup is not None:  # before the first frame is sent, so before any model code runs
            try:
                (cgroup / "cgroup.procs").write_text(str(proc.pid))
            except OSError:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
                cgroup = None
        return ProcessWorker(proc, cgroup)

    def _make_cgroup(self) -> Path | None:
        if not _pids_cgroup_usable():
            return None
        _sweep_stale_cgroups()
        path = PIDS_CGROUP_ROOT / f"codeagent-{os.getpid()}-{next(_cgroup_counter)}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(self.max_processes))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return path

    def _rlimits(self) -> dict[str, int]:
        """What the worker applies to itself (soft = hard) before it reads its first frame."""
        limits = {
            "RLIMIT_CORE": 0,
            "RLIMIT_FSIZE": self.max_file_mb * 1024 * 1024,
            "RLIMIT_NOFILE": self.max_open_files,
        }
        mem = self.limits.max_memory_mb
        if mem is not None:
            cap = (mem + INTERPRETER_ALLOWANCE_MB) * 1024 * 1024
            limits["RLIMIT_AS"] = limits["RLIMIT_DATA"] = cap
        if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; the pids cgroup covers that case
            limits["RLIMIT_NPROC"] = _user_process_count() + self.max_processes
        return limits


def _json_arg(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry.path).st_uid == uid:
                    count += len(os.listdir(f"{entry.path}/task"))
    return count
