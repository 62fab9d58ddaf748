"""SubprocessExecutor: model code runs in a warm child process with OS-enforced limits.

The child is the stdlib-only `executors.worker` package (`remote.link.worker_command`) in its own
session/process group with:
  - rlimits (applied by the worker to itself before it reads its first frame): address space
    and data (Limits.max_memory_mb plus an allowance for the interpreter),
    CPU seconds (re-armed by the worker before each execute), processes (RLIMIT_NPROC; root is
    exempt from it, so a pids cgroup is used too when /sys/fs/cgroup/pids is writable), file size,
    open files, no core dumps;
  - a scrubbed environment (nothing from the host's os.environ unless passed in `env=`);
  - PR_SET_PDEATHSIG=SIGKILL (set by the worker itself, which then checks that its parent is
    still the host), so the worker dies with the host even if the host is SIGKILLed; workers are
    spawned from one long-lived thread, because the death signal follows the spawning *thread*;
  - the kernel's confinement (docs/kernel-isolation.md), for root and ordinary users alike: at its
    start a PID namespace, an empty network namespace (network=False) and, not root, the user
    namespace that allows them; at configure, once its runtime is imported and before any model
    code runs, the worker closes every descriptor but its channel and calls
    `worker.hardening.harden()`: a root of its own (the runtime read-only, the grants, a private
    /tmp), Landlock on files and TCP, the drop (root: nobody, uid 65534; any user: no
    capabilities), no_new_privs, then the seccomp allowlist the host built
    (`remote/syscalls.py`). Its cwd, HOME and TMPDIR are the workdir. Where a layer is missing,
    native packages that hand out raw memory are refused (`worker/hardening/holds.py`).
On a deadline the host kills the whole process group, every process left in the worker's pids
cgroup (or, without one, its session), reaps the worker, and starts a fresh one, which confines
itself the same way; the workdir (and the files in it) stays for the executor's life.

Caveat: root ignores RLIMIT_NPROC, so a host running as root without a writable pids cgroup has
no process cap under policy="open" but the deadline (the restricted policy cannot fork at all).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..access import Access, Isolation, ResolvedAccess
from ..base import ExecutorError, Limits, extra_imports, refuse_star
from ..importable import ensure_importable
from ..remote import syscalls
from ..remote.environment import native_settings
from ..remote.executor import RemoteExecutor
from ..remote.isolation import predicted_hardening, subprocess_isolation
from ..remote.lease import SANDBOX_IDS, Lease
from ..remote.link import WORKER_PARENT, WorkerHandle, prepare_worker_code, worker_command
from ..remote.protocol import MAX_FRAME_BYTES
from ..worker.hardening import holds
from ..worker.wire import Arena
from .child import (
    PIDS_CGROUP_ROOT,
    PipeChannel,
    ProcessWorker,
    _pids_cgroup_usable,
    _spawner,
    _sweep_stale_cgroups,
    sweep_orphans,
)
from .zygote import ZygoteUnavailable, zygote_for

__all__ = ["SubprocessExecutor", "PipeChannel", "ProcessWorker", "sweep_orphans"]

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# Virtual memory the worker may add, on top of what it holds when ready, besides what the model
# code may use (the runtime's own work, a submodule imported in a step).
INTERPRETER_ALLOWANCE_MB = 192
_cgroup_counter = itertools.count(1)


class _SharedNamespaces:
    """Empty network namespaces earlier workers made (their report's `shareable`), kept open
    here and handed to later root workers of the same interpreter as an inherited descriptor:
    joining costs ~0.1 ms where making one costs ~0.5-1 ms. Opened at configure, before any
    model code ran in that worker; never closed (a worker being spawned may be inheriting it),
    at most one per interpreter and runtime. (A worker's mount namespace holds its own grants
    and /tmp: never shared.)"""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[tuple, int] = {}

    def offer(self, key: tuple, network: bool) -> int | None:
        if network:
            return None
        with self._lock:
            return self._fds.get(key)

    def keep(self, key: tuple, pid: int, shareable: Any, offered: int | None) -> None:
        if not isinstance(shareable, dict) or shareable.get("net") is not True or offered is not None:
            return
        with self._lock:
            if key in self._fds:
                return  # a worker started before the first one was kept
            try:  # the worker is our child, not reaped: the pid cannot be anyone else's
                if os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net"):
                    return
                self._fds[key] = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return


_namespaces = _SharedNamespaces()


class SubprocessExecutor(RemoteExecutor):
    """Runs code in a warm child process; same contract as LocalExecutor.

    Workers are forked from a zygote (`process/zygote.py`: a process per interpreter that has
    started Python and imported the worker once), which makes a cold worker a fork instead of an
    interpreter start; `zygote = False` (class attribute) starts each one directly.

    policy: "restricted" (default: the restricted runtime runs inside the child) or "open" (full
        Python in the child, for trusted setups; limits, tools and final_answer still apply).
    access: what the code may touch (`executors.access.Access`; default `Access()`: a private
        workdir, nothing else, no network), enforced by the kernel in the worker (see above).
        `Access(require="kernel")` refuses to construct where the kernel layer is missing.
    harden: False skips the worker's kernel confinement (seccomp, namespaces, Landlock, the
        drop): for benchmarks, and hosts where it cannot work. `isolation` then says what is
        missing, and native packages that hand out raw memory (numpy and all on it) are refused.
    unconfined_native: let those packages load (and the open policy start) where the kernel
        does not hold by itself (`isolation.missing` says what is missing): the guard alone does
        not hold against native code. Default False: refused, with the layer that is missing.
    python: the interpreter for the worker (the restricted policy needs this package and
        RestrictedPython importable by it).
    cwd: older spelling of `access=Access(workdir=cwd)`.
    env: extra environment variables for the worker; nothing else of the host's environment is passed.
    max_processes, max_file_mb, max_open_files: OS limits on the worker and its children.

    On a root host the code runs as nobody (uid 65534), so the workdir and write grants are lent
    to it for the executor's life and given back on close() (`executors.remote.lease`).
    """

    zygote: bool = True
    #: Tests only: kernel layers to leave out ("landlock", "namespaces", "seccomp"), as a kernel
    #: without them would.
    leave_out: tuple[str, ...] = ()

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        policy: str = "restricted",
        access: Access | None = None,
        harden: bool = True,
        unconfined_native: bool = False,
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
        self.harden = bool(harden)
        self.unconfined_native = bool(unconfined_native)
        self._extra_env = dict(env or {})
        for key, value in self._extra_env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError("env must map str to str")
        refuse_star(authorized_imports, policy)
        # Authorizing a module the worker's interpreter lacks is a setup mistake: say so now.
        ensure_importable(extra_imports(authorized_imports), python=self.python)
        access = _with_cwd(access, cwd)
        _check_kernel(access, self.harden)
        if not self.harden and policy == "restricted" and not self.unconfined_native:
            _refuse_native(authorized_imports, holds.missing(None))
        self.access: ResolvedAccess = access.resolve(shared=True)
        try:
            lease = Lease(self.access)
        except OSError as exc:
            self.access.cleanup()
            raise ExecutorError(f"cannot lend the workdir and write grants to the sandbox user "
                                f"(uid {SANDBOX_IDS[0]}): {exc}") from exc
        self.cwd = self.access.workdir
        self._hardening: dict[str, Any] | None = None
        self._join: int | None = None  # the shared network namespace handed to this worker
        # Registered before RemoteExecutor's finalizer, so at exit it runs after the kill.
        self._access_finalizer = weakref.finalize(self, _give_back, lease, self.access)
        try:
            super().__init__(tools, authorized_imports, limits, policy=policy,
                             max_frame_bytes=max_frame_bytes)
        except BaseException:
            self._access_finalizer()
            raise

    @property
    def isolation(self) -> Isolation:
        """What confines the code, per concern (the worker's own report once it has started)."""
        report = self._hardening
        if report is None:
            report = predicted_hardening(self.access.network, self.harden, self.leave_out)
        if _pids_cgroup_usable():
            processes = f"pids cgroup (max {self.max_processes})"
        elif os.geteuid() != 0:
            processes = f"RLIMIT_NPROC (+{self.max_processes})"
        else:
            processes = "only the deadline (root without a writable pids cgroup)"
        return subprocess_isolation(policy=self.policy, report=report, harden=self.harden,
                                    network=self.access.network, memory_mb=self.limits.max_memory_mb,
                                    processes=processes, rlimits=self._rlimits(),
                                    leave_out=self.leave_out,
                                    # the restricted worker runs the capability guard too
                                    audit_hook=self.policy == "restricted")

    # -- RemoteExecutor interface -----------------------------------------------------------------
    def _package_paths(self) -> list[str]:
        return [PACKAGE_ROOT] if self.policy == "restricted" else []

    def _on_close(self) -> None:
        self._access_finalizer()

    def _worker_access(self) -> dict[str, Any] | None:
        if not self.harden:
            return None
        a = self.access
        seccomp = None if "seccomp" in self.leave_out else syscalls.program(a.network).to_wire()
        return {"read": list(a.read), "write": [a.workdir, *a.write], "network": a.network,
                "user": list(SANDBOX_IDS), "seccomp": seccomp, "tmp_mb": self.max_file_mb,
                "namespaces": "namespaces" not in self.leave_out,
                "landlock": "landlock" not in self.leave_out}

    def _unconfined_native(self) -> bool:
        return self.unconfined_native

    def _worker_grants(self) -> dict[str, Any] | None:
        a = self.access
        return {"read": list(a.read), "write": [a.workdir, *a.write], "network": a.network}

    def _namespace_key(self) -> tuple:
        return (self.python, tuple(self._package_paths()))

    def _on_configured(self, hardening: dict[str, Any] | None) -> None:
        self._hardening = hardening
        if hardening is None:
            return
        if os.geteuid() == 0 and self._link.handle is not None:
            _namespaces.keep(self._namespace_key(), self._link.handle.proc.pid,
                             hardening.get("shareable"), self._join)
        missing = holds.missing(hardening)
        if missing and self.access.require == "kernel":
            raise ExecutorError("Access(require='kernel'), but the worker does not hold by itself: "
                                f"{'; '.join(missing)}; drop require='kernel' to run with what is "
                                "available")
        if missing and not self.unconfined_native:
            if self.policy == "open":
                raise ExecutorError(
                    "the open policy runs any code, native code included, and this worker does "
                    f"not hold by itself: {'; '.join(missing)}. Run where those layers exist, "
                    f"or opt in with {holds.OPT_IN} ({holds.GUARD_ALONE}), or harden=False for "
                    "no kernel layer at all")
            _refuse_native(self.authorized_imports, missing)
        unusable = hardening.get("unusable_grants") or []
        if unusable:
            listed = ", ".join(f"{path} ({mode})" for path, mode in unusable[:10])
            raise ExecutorError(
                f"the sandbox user (uid {SANDBOX_IDS[0]}) cannot use these grants: {listed}. Make "
                "read grants readable by others (and their directories searchable); write grants "
                "are lent to it, but not through a second directory it cannot enter.")

    def _hardening_hint(self) -> str:
        return (" Pass SubprocessExecutor(harden=False) to run without the kernel layer "
                "(`isolation` then says what is missing).")

    def _environment(self) -> dict[str, str]:
        env = _base_environment()
        env["HOME"] = env["TMPDIR"] = self.access.workdir
        env.update(self._extra_env)
        return env

    def _start_worker(self) -> WorkerHandle:
        cgroup = self._make_cgroup()
        # The worker hardens itself before it reads its first frame (death signal, rlimits):
        # a preexec_fn would force a full fork() of this (large) host instead of vfork(), which
        # costs milliseconds per start.
        spec = {"parent": os.getpid(), "rlimits": self._rlimits()}
        mem = self.limits.max_memory_mb
        if mem is not None:
            # on top of what the worker holds once ready (the runtime and the authorized
            # libraries imported: statsmodels with polars reserves ~900 MB of address space)
            spec["memory"] = (mem + INTERPRETER_ALLOWANCE_MB) * 1024 * 1024
        a = self.access
        self._join = (_namespaces.offer(self._namespace_key(), a.network)
                      if self.harden and os.geteuid() == 0 and "namespaces" not in self.leave_out
                      else None)
        pass_fds = () if self._join is None else (self._join,)
        arena = _arena(self.limits.max_payload_bytes)
        if arena is not None:
            pass_fds += (arena.fd,)
        if self.harden and "namespaces" not in self.leave_out:
            spec["namespaces"] = {"network": a.network, "join_net": self._join}
        prepare_worker_code()
        argv = worker_command(self.python, WORKER_PARENT, _json_arg(spec))
        cwd, env = self.access.workdir, self._environment()

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
                pass_fds=pass_fds,
            )

        try:
            proc = self._fork_from_zygote(spec, cwd, env, pass_fds) or _spawner.spawn(spawn)
        except (OSError, subprocess.SubprocessError) as exc:
            if arena is not None:
                arena.close()
            if cgroup is not None:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
            raise ExecutorError(f"cannot start the worker with python={self.python!r}: {exc}") from exc
        if cgroup is not None:  # before the first frame is sent, so before any model code runs
            try:
                (cgroup / "cgroup.procs").write_text(str(proc.pid))
                _move_children(proc.pid, cgroup)
            except OSError:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
                cgroup = None
        worker = ProcessWorker(proc, cgroup)
        worker.arena = arena
        return worker

    def _fork_from_zygote(self, spec: dict, cwd: str, env: dict, pass_fds: tuple) -> Any:
        """A worker forked from this interpreter's zygote (a ZygoteChild), or None: then it is
        started directly (no zygote wanted, or none can serve)."""
        if not self.zygote:
            return None
        try:
            zygote = zygote_for(self.python, WORKER_PARENT, self._package_paths(),
                                _base_environment(), _spawner.spawn)
            return zygote.spawn(spec, cwd, env, pass_fds)
        except ZygoteUnavailable:
            return None

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
        if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; the pids cgroup covers that case
            limits["RLIMIT_NPROC"] = _user_process_count() + self.max_processes
        return limits


def _move_children(pid: int, cgroup: Path) -> None:
    """The worker forks its PID namespace's first process at once (`isolate_process`), maybe
    before it was put in the cgroup: move what it forked. A child forked after the worker moved
    is born inside, so reading the children after the move misses none."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split():
                (cgroup / "cgroup.procs").write_text(child)


def _refuse_native(authorized: Iterable[str] | None, missing: list[str]) -> None:
    """ExecutorError when an authorized package hands out raw memory and the kernel does not
    hold by itself (`worker.hardening.holds`)."""
    native = sorted({str(name).split(".")[0] for name in authorized or ()} & holds.RAW_MEMORY)
    if native:
        raise ExecutorError(
            f"{', '.join(native)} can hand the model's code raw memory, and this worker does not "
            f"hold by itself: {'; '.join(missing)}. {holds.GUARD_ALONE[0].upper()}"
            f"{holds.GUARD_ALONE[1:]}: run where those layers exist (harden=True on Linux with "
            f"user namespaces, seccomp and Landlock), or opt in with {holds.OPT_IN}")


def _arena(size: int) -> Arena | None:
    """The worker's shared-memory arena for binary payloads (worker/codec/frames.py), or None
    where memfd or sealing is missing: then payloads cross inline in the pipe."""
    try:
        return Arena.create(size)
    except (AttributeError, OSError):
        return None


def _base_environment() -> dict[str, str]:
    """The environment every worker starts from (the zygote's own): nothing of the host's but
    the settings of its native numerical runtimes (remote/environment.py: the worker computes
    what the host's CPython computes, with as many threads)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        # joblib (scikit-learn's n_jobs) runs in serial mode: no process from a step
        "JOBLIB_MULTIPROCESSING": "0",
        # pyarrow's default allocator (mimalloc) reserves address space by the GiB (64 MiB
        # arenas when told to): under the memory cap (RLIMIT_DATA counts reservations) that, not
        # the data, used up the model's budget (statsmodels after pandas' string index: OpenBLAS
        # could not map its buffer and exit(1)ed the worker). The system allocator reserves
        # nothing ahead; results are the same (an allocator is no setting of the computation).
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        # (native thread pools start as the libraries import, once the worker is confined: a
        # thread made after Landlock's restrict_self is confined too; their CPU time counts
        # against the worker's CPU backstop, 4x the step's time limit)
        **native_settings(),
    }


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


def _with_cwd(access: Access | None, cwd: str | os.PathLike[str] | None) -> Access:
    if access is None:
        access = Access()
    elif not isinstance(access, Access):
        raise TypeError(f"access must be an executors.access.Access, not {type(access).__name__}")
    if cwd is None:
        return access
    if access.workdir is not None:
        raise ValueError("cwd= is the older spelling of Access(workdir=...): pass one of them")
    return dataclasses.replace(access, workdir=os.fspath(cwd))


def _check_kernel(access: Access, harden: bool) -> None:
    """Access(require="kernel"): refuse here, before anything starts, when the kernel layer
    (Landlock) cannot be in force."""
    if access.require != "kernel":
        return
    if not harden:
        raise ExecutorError("Access(require='kernel') and harden=False contradict each other: "
                            "drop one of them")
    from ..worker.hardening import landlock

    abi, why = landlock.landlock_status()
    if abi == 0:
        raise ExecutorError(f"Access(require='kernel'), but Landlock is not available here ({why}); "
                            "drop require='kernel' to run with the audit hook alone, or use "
                            "DockerExecutor")


def _give_back(lease: Lease, access: ResolvedAccess) -> None:
    lease.release()
    access.cleanup()
