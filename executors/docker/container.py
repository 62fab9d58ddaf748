"""One hardened worker container: its settings, its byte channel, its owner labels, and the sweep.

DockerExecutor (executor.py) speaks the worker protocol; this module only knows Docker:
create a container with every hardening option, attach to its stdin/stdout before it starts, turn
Docker's multiplexed attach stream back into plain bytes, kill it, tell an OOM kill from a crash,
and remove the containers whose owner process is gone.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import ssl
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import ExecutorError
from ..remote.link import Channel, WorkerHandle

__all__ = ["ContainerChannel", "ContainerSpec", "WorkerContainer", "owner_labels", "sweep"]

LABEL_EXECUTOR = "org.codeagent.executor"
LABEL_HOST = "org.codeagent.owner.host"
LABEL_PID = "org.codeagent.owner.pid"
LABEL_START = "org.codeagent.owner.start"

_STDOUT, _STDERR = 1, 2
_STDERR_KEEP = 8192  # the tail of the worker's stderr kept for crash reports


# --- who owns a container -------------------------------------------------------------------


def _host_id() -> str:
    """This machine (and boot): pids are only meaningful where they were issued."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "noboot"
    return f"{socket.gethostname()}/{boot}"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot: tells a reused pid from the owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # Field 22; the command name (field 2) may hold spaces, so count from its closing paren.
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels(kind: str = "DockerExecutor") -> dict[str, str]:
    pid = os.getpid()
    return {LABEL_EXECUTOR: kind, LABEL_HOST: _host_id(), LABEL_PID: str(pid),
            LABEL_START: _start_time(pid)}


def _owner_alive(labels: Mapping[str, str]) -> bool:
    if labels.get(LABEL_HOST) != _host_id():
        return True  # another machine's container: we cannot judge, so leave it alone
    try:
        pid = int(labels.get(LABEL_PID, ""))
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, belongs to someone else
    except ValueError:
        return False
    start = labels.get(LABEL_START, "")
    return not start or _start_time(pid) in ("", start)


def sweep(docker_url: str | None = None, *, client: Any = None) -> list[str]:
    """Remove every container this package started whose owner process is gone.

    Returns the ids removed. Containers owned by living processes, or by another machine that
    shares the engine, are left alone.
    """
    from .image import connect

    client = client or connect(docker_url)
    removed = []
    for c in client.api.containers(all=True, filters={"label": LABEL_EXECUTOR}):
        if _owner_alive(c.get("Labels") or {}):
            continue
        try:
            client.api.remove_container(c["Id"], force=True)
            removed.append(c["Id"])
        except Exception:  # already gone, or being removed by another sweeper
            pass
    return removed


# --- the settings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerSpec:
    """Everything that decides how the worker container runs. Defaults are the hardened ones."""

    image: str
    command: Sequence[str]
    workdir: str = "/work"
    user: str = "65534:65534"
    memory_mb: int | None = 512
    cpus: float | None = 1.0
    pids_limit: int = 128
    tmp_mb: int = 64
    workdir_mb: int | None = 64  # None: the workdir is a bind mount (in mounts_rw), not a tmpfs
    max_file_mb: int | None = None  # RLIMIT_FSIZE in the container
    network: bool | str = False
    mounts_ro: Mapping[str, str] = field(default_factory=dict)  # host path -> container path
    mounts_rw: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def network_mode(self) -> str:
        if self.network is False:
            return "none"
        if self.network is True:
            return "bridge"
        return str(self.network)

    def create_kwargs(self, client: Any) -> dict[str, Any]:
        from docker.types import Mount

        mounts = [
            Mount(target=inside, source=os.path.abspath(os.fspath(host)), type="bind",
                  read_only=read_only)
            for table, read_only in ((self.mounts_ro, True), (self.mounts_rw, False))
            for host, inside in table.items()
        ]
        # tmpfs mounts are noexec,nosuid,nodev by default; size= caps what the code can write.
        tmpfs = {"/tmp": f"rw,size={self.tmp_mb}m,mode=1777"}
        if self.workdir_mb is not None:
            tmpfs[self.workdir] = (f"rw,size={self.workdir_mb}m,mode=0700,uid={self.user.split(':')[0]},"
                                   f"gid={self.user.split(':')[-1]}")
        ulimits = [{"Name": "nofile", "Soft": 1024, "Hard": 1024}]
        if self.max_file_mb is not None:
            size = self.max_file_mb * 1024 * 1024
            ulimits.append({"Name": "fsize", "Soft": size, "Hard": size})
        memory = f"{self.memory_mb}m" if self.memory_mb else None
        host_config = client.api.create_host_config(
            network_mode=self.network_mode(),
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],  # and the engine's default seccomp profile
            pids_limit=self.pids_limit,
            mem_limit=memory,
            memswap_limit=memory,  # equal: no swap on top
            nano_cpus=int(self.cpus * 1e9) if self.cpus else None,
            init=True,  # a real PID 1 reaps zombies and forwards signals
            tmpfs=tmpfs,
            mounts=mounts or None,
            ipc_mode="private",
            log_config={"type": "none"},  # the protocol stream must not be copied to disk
            ulimits=ulimits,
        )
        return dict(
            image=self.image,
            command=list(self.command),
            user=self.user,
            working_dir=self.workdir,
            stdin_open=True,
            tty=False,
            environment=dict(self.environment),
            labels=dict(self.labels),
            network_disabled=self.network is False,
            host_config=host_config,
        )


# --- the byte channel -----------------------------------------------------------------------


class ContainerChannel(Channel):
    """The worker's stdin and stdout over one Docker attach socket.

    Writes go to stdin as they are. Reads come back in Docker's multiplexed format (without a
    TTY every chunk carries an 8-byte header: stream, 3 zero bytes, big-endian length); this
    class strips it, returns stdout bytes, and keeps the tail of stderr for crash reports.
    """

    def __init__(self, sock: Any) -> None:
        self._io = sock  # keep the SDK's wrapper alive: it owns the HTTP response
        self._sock: socket.socket = getattr(sock, "_sock", sock)
        self._raw = bytearray()  # undecoded bytes from the socket
        self._out = bytearray()  # decoded stdout not yet handed out
        self.stderr_tail = bytearray()
        self._eof = False
        self._closed = False

    def write(self, data: bytes, timeout: float | None = None) -> None:
        if self._closed:
            raise BrokenPipeError("the channel is closed")
        self._sock.settimeout(timeout)
        try:
            self._sock.sendall(data)
        except TimeoutError:
            raise TimeoutError("the worker did not take its input before the deadline") from None

    def _demux(self) -> None:
        raw = self._raw
        while len(raw) >= 8:
            kind = raw[0]
            (size,) = struct.unpack_from(">I", raw, 4)
            if len(raw) < 8 + size:
                return
            payload = raw[8:8 + size]
            del raw[:8 + size]
            if kind == _STDOUT:
                self._out += payload
            elif kind == _STDERR:
                self.stderr_tail += payload
                del self.stderr_tail[:-_STDERR_KEEP]
            # stream 0 (stdin) never comes back without a TTY; anything else is dropped

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """1..max_bytes stdout bytes as soon as any are there; b"" at end of stream."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._out:
            if self._eof or self._closed:
                return b""
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("no output from the worker before the deadline")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise TimeoutError("no output from the worker before the deadline") from None
            except OSError as e:
                if e.errno == errno.EINTR:
                    continue
                chunk = b""
            if not chunk:
                self._eof = True
            else:
                self._raw += chunk
                self._demux()
        data = bytes(self._out[:max_bytes])
        del self._out[:max_bytes]
        return data

    def fileno(self) -> int | None:
        # (a TLS socket may hold decrypted bytes the descriptor does not show: waited on a thread)
        if self._closed or isinstance(self._sock, ssl.SSLSocket):
            return None
        return self._sock.fileno()

    def read_nowait(self, max_bytes: int) -> bytes | None:
        while not self._out:
            if self._eof or self._closed:
                return b""
            self._sock.setblocking(False)
            try:
                chunk = self._sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError:
                chunk = b""
            if not chunk:
                self._eof = True
            else:
                self._raw += chunk
                self._demux()  # (only a header, or stderr: read on)
        data = bytes(self._out[:max_bytes])
        del self._out[:max_bytes]
        return data

    def write_nowait(self, data: bytes | memoryview) -> int:
        if self._closed:
            raise BrokenPipeError("the channel is closed")
        self._sock.setblocking(False)
        try:
            return self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0

    def close(self) -> None:
        self._closed = True
        for obj in (self._sock, self._io):
            try:
                obj.close()
            except Exception:
                pass


# --- one running container ------------------------------------------------------------------


class WorkerContainer(WorkerHandle):
    """One worker = one started container, attached before start so no byte is missed."""

    def __init__(self, client: Any, spec: ContainerSpec, name: str | None = None,
                 deaths: list[str] | None = None) -> None:
        self.client = client
        self.spec = spec
        self._deaths = deaths if deaths is not None else []  # the executor reads "oom" here
        self._state: dict[str, Any] | None = None
        api = client.api
        try:
            self.id: str = api.create_container(name=name, **spec.create_kwargs(client))["Id"]
        except Exception as e:
            raise ExecutorError(f"cannot create the worker container from image {spec.image!r}: "
                                f"{_explain(e)}") from e
        try:
            sock = api.attach_socket(self.id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                      "stream": 1})
            self.channel = ContainerChannel(sock)
            api.start(self.id)
        except Exception as e:
            self.kill()
            raise ExecutorError(f"cannot start the worker container: {_explain(e)}") from e

    def alive(self) -> bool:
        return bool(self.state().get("Running"))

    def state(self) -> dict[str, Any]:
        """Docker's view (Running, ExitCode, OOMKilled, ...); the last one seen once removed."""
        if self._state is not None:
            return self._state
        try:
            return self.client.api.inspect_container(self.id).get("State") or {}
        except Exception:
            return {}

    def final_state(self, timeout: float = 2.0) -> dict[str, Any]:
        """Docker's state once the container stopped (the worker's death ends the container)."""
        end = time.monotonic() + timeout
        state = self.state()
        while state.get("Running") and time.monotonic() < end:
            time.sleep(0.02)
            state = self.state()
        if not state.get("Running") and state and self._state is None:
            self._state = state
            if state.get("OOMKilled"):
                self._deaths.append("oom")
        return state

    def oom_killed(self) -> bool:
        return bool(self.final_state().get("OOMKilled"))

    def exit_description(self) -> str:
        state = self.final_state()
        if not state:
            return "its container is gone"
        if state.get("Running"):
            return "its container is still running"
        if state.get("OOMKilled"):
            text = (f"was killed by the kernel for exceeding the container's memory limit "
                    f"({self.spec.memory_mb} MB)")
        else:
            code = state.get("ExitCode")
            text = (f"was killed by signal {signal.Signals(code - 128).name}"
                    if isinstance(code, int) and 128 < code < 128 + 65 and code - 128 in _SIGNALS
                    else f"exited with code {code}")
        err = bytes(self.channel.stderr_tail).decode("utf-8", "replace").strip() if hasattr(
            self, "channel") else ""
        if err:
            text += f"; stderr: {err.splitlines()[-1][:300]}"
        return text

    def kill(self) -> None:
        """Remove the container and everything in it; idempotent, never raises."""
        channel = getattr(self, "channel", None)
        if channel is not None:
            channel.close()
        try:
            self.client.api.remove_container(self.id, force=True)
        except Exception:
            pass  # already gone (a sweep, the user)
        if self._state is None:
            self._state = {}


_SIGNALS = {s.value for s in signal.Signals}


def _explain(e: BaseException) -> str:
    explanation = getattr(e, "explanation", None)
    return str(explanation or e)
