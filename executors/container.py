"""DockerExecutor: the worker in a hardened container, reached over its attach socket.

One container per executor runs the stdlib-only `executors.worker` package (the `executors`
directory is bind-mounted read-only at /opt/codeagent/executors) with stdin/stdout attached:
no network, no port, no gateway; the framed protocol of `executors.protocol` runs over the attach
socket and host tools are called through it. The container is warm across `execute()` calls. A
timeout, a crash or a hostile frame removes it and starts a fresh one (the result says the state
was lost); an OOM kill comes back as a `MemoryError`.

    from executors import DockerExecutor, Limits
    with DockerExecutor(tools={"add": add}, limits=Limits(timeout_s=5, max_memory_mb=512)) as ex:
        ex.execute("import numpy")   # full Python: the image decides what is installed

Hardened by default: network none, read-only root, size-limited tmpfs for /tmp and the working
directory, all capabilities dropped, no-new-privileges, the engine's default seccomp profile,
user 65534, pids and memory (swap equal) limits, a CPU quota, an init process. Host directories
are mounted only when asked (`mounts_ro`, `mounts_rw`), the network only with `network=`.

The engine is `docker_url`, else DOCKER_HOST (`source <(scripts/docker-engine.sh --env)` starts
the project's own). `image=` takes any image with Python >= 3.10 on its PATH as `python3`; the
default image is built offline from the host's Python on first use (`build_image()`).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import ExecutionError, ExecutionResult, ExecutorError, Limits
from .container_image import build_image, connect, default_image, ensure_image
from .container_runtime import ContainerSpec, WorkerContainer, owner_labels, sweep
from .protocol import MAX_FRAME_BYTES
from .remote import RemoteExecutor
from .remote_link import prepare_worker_code, worker_command

__all__ = ["DockerExecutor", "build_image", "default_image", "ensure_image", "sweep"]

_PACKAGE_DIR = Path(__file__).resolve().parent
_INSIDE = "/opt/codeagent"  # where our code is mounted in the container (read-only)

_clients: dict[str | None, Any] = {}
_swept: set[str | None] = set()
_lock = threading.Lock()


def _client(docker_url: str | None) -> Any:
    """One SDK client per engine, shared by the executors of this process."""
    with _lock:
        key = docker_url or os.environ.get("DOCKER_HOST")
        client = _clients.get(key)
        if client is None:
            try:
                client = connect(docker_url)
                client.ping()
            except ExecutorError:
                raise
            except Exception as e:
                where = docker_url or os.environ.get("DOCKER_HOST") or "the default Docker socket"
                raise ExecutorError(
                    f"cannot reach a Docker engine at {where}: {e}. Start one (the project's "
                    "scripts/docker-engine.sh does) and set DOCKER_HOST or pass docker_url=."
                ) from e
            _clients[key] = client
        return client


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


def _mounts(mounts: Mapping[Any, str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for host, inside in (mounts or {}).items():
        host_path = os.path.abspath(os.fspath(host))
        if not os.path.exists(host_path):
            raise ValueError(f"{what}: host path {host_path!r} does not exist")
        if not isinstance(inside, str) or not inside.startswith("/") or inside.rstrip("/") in (
                "", "/proc", "/sys", "/dev", "/tmp", _INSIDE):
            raise ValueError(f"{what}: container path {inside!r} must be an absolute path that is "
                             f"not /, /proc, /sys, /dev, /tmp or {_INSIDE}")
        out[host_path] = inside
    return out


class DockerExecutor(RemoteExecutor):
    """The executor contract with the worker in a hardened container (see the module docstring).

    image: any image with `python3` >= 3.10; default: the offline-built `codeagent-python` image.
    docker_url: the engine (default: DOCKER_HOST). policy: "open" (full Python, the container is
    the boundary) or "restricted" (the in-process policy inside the container too; our package is
    mounted read-only for it). network: False (none), True (the engine's
    default bridge) or a Docker network mode such as "host". mounts_ro / mounts_rw: {host path:
    container path}. Limits.max_memory_mb is the container's memory (swap equal: none extra).
    """

    #: The worker's own soft deadline (which keeps the variables) gets 0.5 s; then the host kills
    #: and replaces the container (~0.3 s), so a result still comes back within timeout_s + 1 s.
    kill_grace_s = 0.5

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any]] | Iterable[Any] | None = None,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        *,
        image: str | None = None,
        docker_url: str | None = None,
        policy: str = "open",
        network: bool | str = False,
        mounts_ro: Mapping[Any, str] | None = None,
        mounts_rw: Mapping[Any, str] | None = None,
        cpus: float | None = 1.0,
        pids_limit: int = 128,
        tmp_mb: int = 64,
        workdir: str = "/work",
        workdir_mb: int = 64,
        environment: Mapping[str, str] | None = None,
        python: str = "python3",
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> None:
        super().__init__(tools, authorized_imports, limits, policy=policy,
                         max_frame_bytes=max_frame_bytes)
        if not (network is False or network is True or (isinstance(network, str) and network)):
            raise ValueError("network must be False (none), True (default bridge) or a network name")
        if pids_limit < 8:
            raise ValueError("pids_limit must be >= 8")
        self.image = image
        self.docker_url = docker_url
        self.network = network
        self.mounts_ro = _mounts(mounts_ro, "mounts_ro")
        self.mounts_rw = _mounts(mounts_rw, "mounts_rw")
        self.cpus, self.pids_limit = cpus, pids_limit
        self.tmp_mb, self.workdir, self.workdir_mb = tmp_mb, workdir, workdir_mb
        self.environment = dict(environment or {})
        self.python = python
        if workdir.rstrip("/") in {p.rstrip("/") for p in [*self.mounts_ro.values(),
                                                           *self.mounts_rw.values()]}:
            raise ValueError(f"the working directory {workdir!r} is a tmpfs: mount elsewhere")
        self._deaths: list[str] = []  # filled by our containers when the kernel OOM-kills one

    # -- the RemoteExecutor interface ----------------------------------------------------------
    def _start_worker(self) -> WorkerContainer:
        client = _client(self.docker_url)
        _sweep_once(client, self.docker_url or os.environ.get("DOCKER_HOST"))
        if self.image is None:
            try:
                self.image = ensure_image(client=client)
            except Exception as e:
                raise ExecutorError(f"cannot build the default image offline: {e}; pass image=") from e
        name = f"codeagent-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        return WorkerContainer(client, self._spec(), name=name, deaths=self._deaths)

    def _package_paths(self) -> list[str]:
        return [_INSIDE] if self.policy == "restricted" else []

    def _spec(self) -> ContainerSpec:
        # Our code, read-only: the worker starts from it with nothing but the image's stdlib (the
        # mount brings the bytecode cache along); under the restricted policy it also imports
        # `executors.restricted` from here (stdlib only: nothing else to mount).
        ro = dict(self.mounts_ro)
        ro[str(_PACKAGE_DIR)] = f"{_INSIDE}/executors"
        prepare_worker_code()
        env = {"HOME": self.workdir, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        env.update(self.environment)
        return ContainerSpec(
            image=str(self.image),
            command=worker_command(self.python, f"{_INSIDE}/executors"),
            workdir=self.workdir,
            memory_mb=self.limits.max_memory_mb,
            cpus=self.cpus,
            pids_limit=self.pids_limit,
            tmp_mb=self.tmp_mb,
            workdir_mb=self.workdir_mb,
            network=self.network,
            mounts_ro=ro,
            mounts_rw=self.mounts_rw,
            environment=env,
            labels=owner_labels("DockerExecutor"),
        )

    # -- the contract, plus what only a container can tell -------------------------------------
    def execute(self, code: str) -> ExecutionResult:
        self._deaths.clear()
        result = super().execute(code)
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
