"""The library-escape harness's "docker" mode: each attempt in a fresh DockerExecutor container.

    run_attempts(attempts, tmp_path, policy=, grant=, network=) -> DockerRun(outcomes, leftovers)
    run_neighbours(neighbours, tmp_path) -> DockerRun(outcomes, leftovers)

The harness's runner (tests/library_escape_harness.py) forks a child per attempt, two at a time;
each child makes one `CanaryDockerExecutor` on the PyData image (tests/data_image.py) with
policy="restricted", runs the tamper probe, the step and the probe again as steps of that one
container, and closes it. The host judges every canary as it does for the other modes.

The canaries are *in* the container but *not granted* to the code, so the restricted worker is
what refuses, not their absence. DockerExecutor grants the code everything it mounts (`access=`,
`mounts_ro=` and `mounts_rw=` all become the guard's grants), so `CanaryDockerExecutor` adds bind
mounts the guard is never told about:
  - the attempt's canary root (tmp_path/<attempt id>), read-write at its own path and lent to the
    sandbox user (uid 65534 on a root host), so a read or a write that gets through lands on
    the host;
  - the host's /bin/sh and `touch`, read-only: the image has neither (no shell, no coreutils)
    and every execute route runs `touch {MARKER}`, through a shell or not; a spawn that gets
    through must create the marker, not fail for want of a program (the image carries the
    host's libc, all the two need).
The env canary is in the container's environment (`environment=`): docker-init (PID 1) and the
worker both carry it, as the runner and the subprocess worker do for "subprocess".

What the container itself holds, and the harness says so rather than hide it:
  port    the host's listener is on the host's loopback; the container has no network
          (network="none"), so the network setting holds these, the worker's guard behind it.
  stdout  the container's logs are off (log driver "none"); its stderr stream is read from the
          attach socket (`worker_output()`: the kept tail of every container the executor
          started) and judged like a process's stdout; its stdout is the protocol stream, and a
          write there shows as a bad frame (WorkerProtocolError), which the judge counts too.

`grant=("secret",)` / `("target",)` grants the secret dir (read) / the target dir (write) for the
controls that prove the mode can see an escape; `policy="open"` (and `network="host"`) drops the
worker's guard (the network's) for the same purpose. Every container carries a label with the
run's id; after a run, the containers still labelled (the executors close theirs: none) are
removed and reported, and so is what is left in the runner's TMPDIR (the executors' workdirs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import library_escape_harness as harness
from data_image import PYDATA_PACKAGES

from executors import DockerExecutor
from executors.access import Access
from executors.remote.lease import sandbox_ids

RUN_LABEL = "org.codeagent.test.escape-run"


@dataclasses.dataclass(frozen=True)
class DockerRun:
    outcomes: list[Any]  # harness.Outcome / harness.NeighbourOutcome, one per attempt / neighbour
    leftovers: list[str]  # containers still there after the run, files left in its TMPDIR


class CanaryDockerExecutor(DockerExecutor):
    """A DockerExecutor that also mounts `canary_root` (read-write, at its own path) without
    granting it, labels its containers with `run_id`, and keeps every container it starts so
    that `worker_output()` can give back what came out on their stderr streams."""

    def __init__(self, *args: Any, canary_root: str | None = None, run_id: str = "", **kwargs: Any) -> None:
        self._canary_root, self._run_id = canary_root, run_id
        self._workers: list[Any] = []
        super().__init__(*args, **kwargs)

    def _spec(self) -> Any:
        spec = super()._spec()
        ro, rw = dict(spec.mounts_ro), dict(spec.mounts_rw)
        if self._canary_root:
            rw.setdefault(self._canary_root, self._canary_root)
            ro.update(_programs())
        return dataclasses.replace(spec, mounts_ro=ro, mounts_rw=rw, labels={**spec.labels, RUN_LABEL: self._run_id})

    def _start_worker(self) -> Any:
        worker = super()._start_worker()
        self._workers.append(worker)
        return worker

    def worker_output(self) -> bytes:
        """What came out on the containers' stderr streams. Each container is stopped and its
        stream read to the end first: stderr's frames travel apart from stdout's (two pipes
        into dockerd), so they may still be on the way when the step's answer has come."""
        for worker in self._workers:
            with contextlib.suppress(Exception):
                worker.client.api.kill(worker.id)
            deadline = time.monotonic() + 10
            with contextlib.suppress(Exception):
                while worker.channel.read(1 << 16, timeout=max(0.01, deadline - time.monotonic())):
                    pass
        return b"".join(bytes(w.channel.stderr_tail) for w in self._workers)


def _programs() -> dict[str, str]:
    """{host path: container path} of what the execute routes run: a shell and `touch`. The
    image carries the host's own libc, which both need and nothing else."""
    touch = shutil.which("touch", path="/usr/bin:/bin")
    if touch is None:
        raise RuntimeError("the Docker escape mode needs the host's `touch` (coreutils) to mount")
    return {os.path.realpath("/bin/sh"): "/bin/sh", os.path.realpath(touch): "/usr/bin/touch"}


def canary_executor(job: dict, imports: list[str], limits: Any) -> CanaryDockerExecutor:
    """The runner child's executor for one job (tests/library_escape_harness.py `_make_executor`)."""
    root = job.get("root")
    grants = set(job.get("grant") or ())
    environment = {}
    if root:
        _lend(Path(root))
        environment[harness.ENV_VAR] = os.environ.get(harness.ENV_VAR, "")
    access = Access(read=[f"{root}/secret"] if "secret" in grants else [],
                    write=[f"{root}/target"] if "target" in grants else [])
    return CanaryDockerExecutor(
        packages=PYDATA_PACKAGES, policy=job.get("policy", "restricted"), authorized_imports=imports,
        limits=limits, access=access, network=job.get("network"), environment=environment,
        canary_root=root, run_id=job["run_id"])


def _lend(root: Path) -> None:
    """The canaries belong to the sandbox user: what the code reads or writes there if nothing
    stops it is what the kernel would allow it anywhere it could reach."""
    uid, gid = sandbox_ids()
    if (uid, gid) == (os.getuid(), os.getgid()):
        return
    for top, dirs, files in os.walk(root):
        for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
            os.lchown(name, uid, gid)


# ----------------------------------------------------------------------------- runs
def _settings(tmp_path: Path, **options: Any) -> tuple[dict, dict, Path]:
    from data_image import docker_enabled, pydata_image_tag

    docker_enabled()  # skips here, fails under CI=true, when Docker cannot run
    pydata_image_tag()  # built (or found) once here, not by every child at once
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    run_id = secrets.token_hex(6)
    return {"run_id": run_id, **options}, {"TMPDIR": str(tmpdir)}, tmpdir


def run_attempts(attempts: Sequence[Any], tmp_path: Path, *, policy: str = "restricted",
                 grant: Iterable[str] = (), network: bool | str | None = None, parallel: int = 2) -> DockerRun:
    tmp_path = Path(tmp_path)
    options, env, tmpdir = _settings(tmp_path, policy=policy, grant=list(grant), network=network)
    try:
        outcomes = harness.run_attempts("docker", attempts, tmp_path, jobs=parallel, options=options, env=env)
    finally:
        leftovers = clean_up(options["run_id"], tmpdir)
    return DockerRun(outcomes, leftovers)


def run_neighbours(neighbours: Sequence[Any], tmp_path: Path, *, parallel: int = 2) -> DockerRun:
    tmp_path = Path(tmp_path)
    options, env, tmpdir = _settings(tmp_path, policy="restricted")
    try:
        outcomes = harness.run_neighbours("docker", neighbours, tmp_path, jobs=parallel, options=options, env=env)
    finally:
        leftovers = clean_up(options["run_id"], tmpdir)
    return DockerRun(outcomes, leftovers)


def clean_up(run_id: str, tmpdir: Path) -> list[str]:
    """Remove the run's containers and its TMPDIR, however the run ended; returns what was left."""
    from executors.docker.image import connect

    left = []
    client = connect(None)
    try:
        for c in client.api.containers(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}):
            left.append("container " + c["Id"][:12])
            client.api.remove_container(c["Id"], force=True)
    finally:
        client.close()
    if tmpdir.exists():
        left.extend(str(p) for p in sorted(tmpdir.iterdir()))
        shutil.rmtree(tmpdir)
    return left
