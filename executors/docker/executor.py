"""DockerExecutor: the worker in a hardened container, reached over its attach socket.

One container per executor runs the stdlib-only `executors.worker` package (the `executors`
directory is bind-mounted read-only at /opt/codeagent/executors) with stdin/stdout attached:
no network, no port, no gateway; the framed protocol of `executors.remote.protocol` runs over the attach
socket and host tools are called through it. The container is warm across `execute()` calls. A
timeout, a crash or a hostile frame removes it and starts a fresh one (the result says the state
was lost); an OOM kill comes back as a `MemoryError`.

    from executors import DockerExecutor, Limits
    with DockerExecutor(tools={"add": add}, limits=Limits(timeout_s=5, max_memory_mb=512)) as ex:
        ex.execute("import numpy")   # full Python: the image decides what is installed

Hardened by default: network none, read-only root, a size-limited tmpfs for /tmp, all
capabilities dropped, no-new-privileges, the engine's default seccomp profile, user 65534 (on a
root host; otherwise the host's own uid:gid), pids and memory (swap equal) limits, a CPU quota,
an init process, a per-file size limit.

Files and network are granted with `access=Access(read=[...], write=[...], workdir=None,
network=False)`, the same object every executor takes: each grant is bind-mounted at its own
absolute path (read-only / read-write), the workdir (a private host directory by default, kept for
the executor's life and removed on close()) is mounted read-write at its own path and is the
container's working directory, so paths mean the same on the host and inside. On a root host the
workdir and write grants are lent to uid 65534 while the executor lives (`remote.lease`).
`network=True` means the engine's default bridge network: a network namespace of its own with a
route out, but not the host's loopback. An engine started with `--bridge=none` (the project's
own) has no such network, and the executor then refuses to start rather than pick another;
`network="host"` (the host's network namespace, its loopback included) or the name of a Docker
network picks one explicitly.

The engine is `docker_url`, else DOCKER_HOST, else the project's own engine when its socket
(/run/codeagent-docker.sock, which `scripts/docker-engine.sh` starts) exists, else the platform's. `image=` takes any image with Python >= 3.10 on its PATH as `python3`; the
default image is built offline from the host's Python on first use (`build_image()`), and
`packages=["numpy", "pandas", "matplotlib"]` adds those distributions (and what they require)
from the host's environment, built once per set of versions. Authorizing a module the image
lacks is an error at construction (`importable.NotInImage`) that names the fix.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..access import Access, Isolation, ResolvedAccess
from ..base import (
    ExecutionError,
    ExecutionResult,
    ExecutorError,
    Limits,
    extra_imports,
    refuse_star,
)
from ..importable import PROBE_SOURCE, NotInImage, top_level_names
from ..remote import syscalls
from ..remote.environment import native_settings
from ..remote.executor import RemoteExecutor
from ..remote.isolation import container_isolation
from ..remote.lease import Lease, sandbox_ids
from ..remote.link import prepare_worker_code, worker_command
from ..remote.protocol import MAX_FRAME_BYTES
from .container import ContainerSpec, WorkerContainer, owner_labels, sweep
from .image import (
    LABEL_MODULES,
    build_image,
    connect,
    default_image,
    engine_url,
    ensure_image,
    image_modules,
    plan_image,
)

__all__ = ["DockerExecutor", "build_image", "default_image", "ensure_image", "sweep"]

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_INSIDE = "/opt/codeagent"  # where our code is mounted in the container (read-only)

_clients: dict[str | None, Any] = {}
_swept: set[str | None] = set()
_lock = threading.Lock()


def _client(docker_url: str | None) -> Any:
    """One SDK client per engine, shared by the executors of this process."""
    with _lock:
        key = engine_url(docker_url)
        client = _clients.get(key)
        if client is None:
            try:
                client = connect(docker_url)
                client.ping()
            except ExecutorError:
                raise
            except Exception as e:
                where = engine_url(docker_url) or "the default Docker socket"
                raise ExecutorError(
                    f"cannot reach a Docker engine at {where}: {e}. Start one (the project's "
                    "scripts/docker-engine.sh does) and set DOCKER_HOST or pass docker_url=."
                ) from e
            _clients[key] = client
        return client


def engine_problem(docker_url: str | None = None) -> str | None:
    """None when a Docker engine answers a ping, else why not (for callers that skip Docker with a
    reason rather than fail: test fixtures, benchmark columns)."""
    try:
        client = connect(docker_url, timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as e:  # no SDK, no engine, no permission
        where = engine_url(docker_url)
        return f"no Docker engine reachable via DOCKER_HOST={where!r}: {e}"
    return None


def _sweep_once(client: Any, key: str | None) -> None:
    """The first container this process starts on an engine clears earlier owners' leftovers."""
    with _lock:
        if key in _swept:
            return
        _swept.add(key)
    try:
        sweep(client=client)
    except Exception:
        pass  # a failed sweep must not stop the executor: the next process tries again


_FORBIDDEN_TARGETS = ("/proc", "/sys", "/dev", _INSIDE)


def _check_target(inside: str, what: str) -> str:
    inside = os.path.normpath(inside)
    if inside in ("/", "/tmp") or any(inside == t or inside.startswith(t + "/") for t in _FORBIDDEN_TARGETS):
        raise ValueError(f"{what}: the container path {inside!r} must be an absolute path that is "
                         f"not /, /tmp, or under /proc, /sys, /dev or {_INSIDE}")
    return inside


def _aliases(mounts: Mapping[Any, str] | None, what: str) -> dict[str, str]:
    """The older `mounts_ro` / `mounts_rw` spelling: {host path: container path}. The host paths
    become Access grants (checked like any other); the container paths where they appear."""
    out: dict[str, str] = {}
    for host, inside in (mounts or {}).items():
        host_path = os.path.abspath(os.fspath(host))
        if not os.path.exists(host_path):
            raise ValueError(f"{what}: host path {host_path!r} does not exist")
        if not isinstance(inside, str) or not inside.startswith("/"):
            raise ValueError(f"{what}: container path {inside!r} must be an absolute path")
        out[os.path.realpath(host_path)] = _check_target(inside, what)
    return out


def _merged_access(access: Access | None, mounts_ro: dict[str, str], mounts_rw: dict[str, str],
                   network: bool | str | None) -> Access:
    if access is None:
        access = Access()
    elif not isinstance(access, Access):
        raise TypeError(f"access must be an executors.access.Access, not {type(access).__name__}")
    granted = network is not None and network is not False
    if network is False and access.network:
        raise ValueError("network=False contradicts Access(network=True): pass it once")
    return dataclasses.replace(access, read=(*access.read, *mounts_ro), write=(*access.write, *mounts_rw),
                               network=access.network or granted)


class DockerExecutor(RemoteExecutor):
    """The executor contract with the worker in a hardened container (see the module docstring).

    image: any image with `python3` >= 3.10; default: the offline-built `codeagent-python` image.
    docker_url: the engine (default: `image.engine_url()`: DOCKER_HOST, else the project's engine). policy: "open" (full Python, the container is
    the boundary) or "restricted" (the in-process policy inside the container too; our package is mounted
    read-only for it). access: the grants (`executors.access.Access`),
    bind-mounted at their own paths. network: None (from `access`), False (none), True (the
    engine's default bridge network) or a Docker network mode such as "host".
    Limits.max_memory_mb is the container's memory (swap equal: none extra). max_file_mb: the
    largest file the code may write (RLIMIT_FSIZE).

    Deprecated spellings, kept working: mounts_ro / mounts_rw = {host path: container path} are
    read / write grants mounted at the container path given; workdir = the container path at
    which the Access workdir is mounted (default: its own path).
    """

    #: The worker's own soft deadline (which keeps the variables) gets 0.5 s; then the host kills
    #: and replaces the container (~0.3 s), so a result still comes back within timeout_s + 1 s.
    kill_grace_s = 0.5
    slow_kill = True  # (removing a container is an engine call)

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        image: str | None = None,
        docker_url: str | None = None,
        policy: str = "open",
        access: Access | None = None,
        network: bool | str | None = None,
        mounts_ro: Mapping[Any, str] | None = None,
        mounts_rw: Mapping[Any, str] | None = None,
        cpus: float | None = 1.0,
        pids_limit: int = 128,
        tmp_mb: int = 64,
        max_file_mb: int = 64,
        workdir: str | None = None,
        environment: Mapping[str, str] | None = None,
        python: str = "python3",
        max_frame_bytes: int = MAX_FRAME_BYTES,
        packages: Iterable[str] | None = None,
    ) -> None:
        if packages is not None and image is not None:
            raise ValueError("pass image= or packages=, not both: packages= builds the image")
        self.packages = list(packages or ())
        # The image the worker will run and what it can import, known before anything starts.
        self._plan = plan_image(self.packages) if image is None else None
        refuse_star(authorized_imports, policy)
        self._check_imports(authorized_imports, image, docker_url, python)
        if not (network is None or isinstance(network, bool) or (isinstance(network, str) and network)):
            raise ValueError("network must be False (none), True (default bridge) or a network name")
        if pids_limit < 8:
            raise ValueError("pids_limit must be >= 8")
        ro, rw = _aliases(mounts_ro, "mounts_ro"), _aliases(mounts_rw, "mounts_rw")
        self._aliases = {**ro, **rw}
        # Access(require="kernel") is always met: the container is a kernel boundary.
        merged = _merged_access(access, ro, rw, network)
        self.image = image
        self.docker_url = docker_url
        self.network: bool | str = network if isinstance(network, str) else merged.network
        self.cpus, self.pids_limit, self.tmp_mb = cpus, pids_limit, tmp_mb
        self.max_file_mb = int(max_file_mb)
        self.environment = dict(environment or {})
        self.python = python
        self.user = "{}:{}".format(*sandbox_ids())
        self.access: ResolvedAccess = merged.resolve(shared=True)
        try:
            self.workdir = _check_target(workdir, "workdir") if workdir else self.access.workdir
            self._mounts = self._mount_table()
            lease = Lease(self.access)
        except BaseException:
            self.access.cleanup()
            raise
        # Registered before RemoteExecutor's finalizer, so at exit it runs after the kill.
        self._access_finalizer = weakref.finalize(self, _give_back, lease, self.access)
        try:
            super().__init__(tools, authorized_imports, limits, policy=policy,
                             max_frame_bytes=max_frame_bytes)
        except BaseException:
            self._access_finalizer()
            raise
        self._deaths: list[str] = []  # filled by our containers when the kernel OOM-kills one

    def _check_imports(self, authorized: Iterable[str] | None, image: str | None,
                       docker_url: str | None, python: str) -> None:
        """Authorizing a module the image lacks is a setup mistake: say so now, with the fix."""
        tops = top_level_names(extra_imports(authorized))
        if not tops:
            return
        if self._plan is not None:
            missing = [name for name in tops if name not in image_modules(self._plan)]
            if missing:
                raise NotInImage(missing, self._plan.tag, self.packages)
            return
        missing = _missing_in_image(_client(docker_url), str(image), tops, python)
        if missing:
            raise NotInImage(missing, str(image), own_image=False)

    @property
    def mounts_ro(self) -> dict[str, str]:
        return {h: t for h, (t, ro) in self._mounts.items() if ro}

    @property
    def mounts_rw(self) -> dict[str, str]:
        return {h: t for h, (t, ro) in self._mounts.items() if not ro}

    def _mount_table(self) -> dict[str, tuple[str, bool]]:
        """{host path: (container path, read_only)} for the grants and the workdir."""
        table: dict[str, tuple[str, bool]] = {}
        for paths, read_only in ((self.access.read, True), (self.access.write, False)):
            for host in paths:
                table[host] = (_check_target(self._aliases.get(host, host), "access"), read_only)
        table[self.access.workdir] = (self.workdir, False)
        targets = [t for t, _ in table.values()]
        if len(set(targets)) != len(targets):
            raise ValueError(f"two grants are mounted at the same container path: {sorted(targets)}")
        return table

    @property
    def isolation(self) -> Isolation:
        """What confines the code, per concern: the container."""
        return container_isolation(policy=self.policy, network=self.network, user=self.user,
                                   memory_mb=self.limits.max_memory_mb, pids_limit=self.pids_limit,
                                   seccomp=self._stacked_filter() is not None)

    def _on_close(self) -> None:
        self._access_finalizer()

    # -- the RemoteExecutor interface ----------------------------------------------------------
    def _start_worker(self) -> WorkerContainer:
        client = _client(self.docker_url)
        _sweep_once(client, engine_url(self.docker_url))
        if self.image is None:
            try:
                self.image = ensure_image(client=client, plan=self._plan)
            except Exception as e:
                raise ExecutorError(f"cannot build the image {self._plan.tag} offline: {e}; "
                                    "pass image=") from e
        if self.network is True:
            _check_default_bridge(client)
        name = f"codeagent-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        return WorkerContainer(client, self._spec(), name=name, deaths=self._deaths)

    def _worker_grants(self) -> dict[str, Any] | None:
        # The grants as the container sees them: each at its own path, the workdir at self.workdir.
        a = self.access
        return {"read": list(a.read), "write": [self.workdir, *a.write], "network": bool(self.network)}

    def _package_paths(self) -> list[str]:
        return [_INSIDE] if self.policy == "restricted" else []

    def _worker_access(self) -> dict[str, Any] | None:
        """The engine's default seccomp profile stays; under the restricted policy (where native
        packages may hand the code raw memory) the worker stacks the subprocess worker's own
        allowlist on it (`remote.syscalls`), before any model code. Nothing else of the
        subprocess's hardening: the container is the namespaces, the files and the user. The
        open policy is full Python in its container, subprocesses included: the engine's
        profile is its filter."""
        program = self._stacked_filter()
        if program is None:
            return None
        return {"read": [], "write": [], "network": self.network is not False, "user": None,
                "seccomp": program, "namespaces": False, "landlock": False}

    def _unconfined_native(self) -> bool:
        return True  # the container is the boundary native code meets (isolation says how)

    def _stacked_filter(self) -> dict[str, Any] | None:
        if self.policy != "restricted":
            return None
        return syscalls.program(self.network is not False).to_wire()

    def _spec(self) -> ContainerSpec:
        # Our code, read-only: the worker starts from it with nothing but the image's stdlib (the
        # mount brings the bytecode cache along); under the restricted policy it also imports
        # `executors.restricted` from here (stdlib only: nothing else to mount).
        ro = self.mounts_ro
        ro[str(_PACKAGE_DIR)] = f"{_INSIDE}/executors"
        prepare_worker_code()
        env = {"HOME": self.workdir, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
               # native thread pools: one thread each (the container's CPU share is the limit)
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "POLARS_MAX_THREADS": "1",
               # joblib (scikit-learn's n_jobs) in serial mode: no process pool from a step
               "JOBLIB_MULTIPROCESSING": "0",
               # the host's kernel choice and its own thread counts, if it sets them: the same
               # digits as the host's CPython (remote/environment.py)
               **native_settings()}
        env.update(self.environment)
        return ContainerSpec(
            image=str(self.image),
            command=worker_command(self.python, f"{_INSIDE}/executors"),
            workdir=self.workdir,
            user=self.user,
            memory_mb=self.limits.max_memory_mb,
            cpus=self.cpus,
            pids_limit=self.pids_limit,
            tmp_mb=self.tmp_mb,
            workdir_mb=None,
            max_file_mb=self.max_file_mb,
            network=self.network,
            mounts_ro=ro,
            mounts_rw=self.mounts_rw,
            environment=env,
            labels=owner_labels("DockerExecutor"),
        )

    # -- the contract, plus what only a container can tell -------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        self._deaths.clear()
        return self._judged(super().execute(code))

    async def aexecute(self, code: str) -> ExecutionResult:
        """`execute` awaited: the attach socket waited on by the loop; a failed step is judged
        (the engine asked about its processes) on a thread."""
        self._deaths.clear()
        result = await super().aexecute(code)
        if result.error is None:
            return result
        return await asyncio.to_thread(self._judged, result)

    def _judged(self, result: ExecutionResult) -> ExecutionResult:
        """A failed step as the container explains it: the memory limit, or stray processes."""
        if "oom" in self._deaths and result.error is not None and result.error.type in (
                "WorkerCrashed", "TimeoutError"):
            result = dataclasses.replace(result, error=ExecutionError(
                "MemoryError",
                f"the code needed more than the sandbox's {self.limits.max_memory_mb} MB of memory "
                "(Limits.max_memory_mb) and was killed; the sandbox was restarted and all variables "
                "are lost. Work on smaller pieces of data, or free what you no longer need.",
            ), state_lost=True)
        elif result.error is not None and not result.state_lost:
            result = self._check_processes(result)
        return result

    def _check_processes(self, result: ExecutionResult) -> ExecutionResult:
        """After a failed step: a container filled with stray processes (a fork bomb's children
        keep forking after the worker got its error) is useless, so replace it."""
        handle = self._link.handle
        if handle is None:
            return result
        try:
            count = len(handle.client.api.top(handle.id).get("Processes") or [])
        except Exception:
            return result
        # init + worker is the normal count. A failed fork/thread start with stray processes
        # around, or a process table half full, means a bomb: its children would keep running.
        exhausted = result.error.type == "BlockingIOError" or "can't start new thread" in (
            result.error.message or "")
        if count <= 2 or (not exhausted and count < max(8, self.pids_limit // 2)):
            return result
        with self._lock:
            self._restart()
        return dataclasses.replace(result, state_lost=True, error=dataclasses.replace(
            result.error, message=f"{result.error.message} [the sandbox ran out of processes "
            f"(pids_limit={self.pids_limit}) and {count - 2} stray processes were still running; "
            "it was restarted and all variables are lost]"))

    @property
    def container_id(self) -> str | None:
        """The id of the current worker container (None before the first start or after close)."""
        handle = self._link.handle
        return handle.id if handle is not None else None


def _missing_in_image(client: Any, image: str, tops: list[str], python: str) -> list[str]:
    """The names of `tops` the image cannot import: from its module label when we built it,
    else from one probe run in a throwaway container (no network)."""
    try:
        labels = client.images.get(image).labels or {}
    except Exception as e:
        raise ExecutorError(f"cannot inspect the image {image!r} to check authorized_imports: {e}") from e
    listed = labels.get(LABEL_MODULES)
    if listed is not None:
        have = set(listed.split(",")) | set(sys.stdlib_module_names)
        return [name for name in tops if name not in have]
    try:
        out = client.containers.run(image, [python, "-I", "-c", PROBE_SOURCE, *tops], remove=True,
                                     network_mode="none", stderr=False)
        missing = json.loads(out.decode().strip().splitlines()[-1])
    except Exception as e:
        raise ExecutorError(f"cannot run {python} in the image {image!r} to check "
                            f"authorized_imports: {str(e)[:300]}") from e
    return [str(name) for name in missing]


def _check_default_bridge(client: Any) -> None:
    """network=True is the engine's default bridge; refuse clearly when the engine has none."""
    try:
        found = client.api.networks(names=["bridge"])
    except Exception:
        return  # let the engine answer at create time
    if not any(n.get("Name") == "bridge" for n in found or []):
        raise ExecutorError(
            "network=True means the Docker engine's default bridge network, and this engine has "
            "none (it was started with --bridge=none). Pass network='host' to share the host's "
            "network namespace, or the name of a Docker network, to choose one explicitly.")


def _give_back(lease: Lease, access: ResolvedAccess) -> None:
    lease.release()
    access.cleanup()
