"""The host side of the zygote (`worker/zygote.py`): workers forked from a process that has
already started the interpreter and imported the worker, instead of started from nothing.

One zygote per interpreter and package path, started on first need from the spawner thread (its
death signal follows that thread, as a worker's does) and kept for the host's life. `spawn()`
hands it a worker's SPEC, workdir, environment and descriptors (its pipes and the namespaces it
joins) and returns a `ZygoteChild`, which stands in for the `subprocess.Popen` of a worker
started directly: its pid, its pipes, `poll()`/`wait()` on the exit status the zygote reports.
Anything wrong with the zygote (it cannot start, it died, it refused) raises ZygoteUnavailable,
and the caller starts the worker directly instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import threading
import time
from typing import Any

__all__ = ["ZygoteChild", "ZygoteUnavailable", "zygote_for"]

_SPAWN_TIMEOUT_S = 30.0


class ZygoteUnavailable(Exception):
    """The zygote cannot fork this worker: start it directly."""


class Zygote:
    def __init__(self, python: str, directory: str, package_paths: list[str], env: dict) -> None:
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        spec = json.dumps({"parent": os.getpid(), "preload": package_paths})
        boot = (f"import sys,os;sys.path.insert(0,{directory!r});from worker.zygote import main;"
                "del sys.path[0];os._exit(main())")
        try:
            self.proc = subprocess.Popen(
                [python, "-I", "-c", boot, spec], stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=env, cwd="/", start_new_session=True,
                close_fds=True)
        finally:
            theirs.close()
        self._lock = threading.Lock()  # one request at a time
        self._answers: queue.Queue = queue.Queue()
        self._seq = 0
        self._exits: dict[int, int] = {}
        self._exited = threading.Condition()
        self.alive = True
        threading.Thread(target=self._read, name="codeagent-zygote", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = self._control.recv(1 << 16)
                message = json.loads(data) if data else None
            except (OSError, ValueError):
                message = None
            if type(message) is not dict:
                break
            if "exit" in message:
                with self._exited:
                    self._exits[int(message["exit"])] = int(message["status"])
                    self._exited.notify_all()
            else:
                self._answers.put(message)
        self.alive = False  # its children died with it (their death signal)
        self._answers.put(None)
        with self._exited:
            self._exited.notify_all()

    def spawn(self, spec: dict, cwd: str, env: dict, pass_fds: tuple[int, ...]) -> ZygoteChild:
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr: (read, write)
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1], *pass_fds]
        try:
            with self._lock:
                if not self.alive:
                    raise ZygoteUnavailable("the zygote is gone")
                self._seq += 1
                request = json.dumps({"seq": self._seq, "spec": spec, "cwd": cwd, "env": env,
                                      "fds": list(pass_fds)})
                try:
                    socket.send_fds(self._control, [request.encode()], theirs)
                    answer = self._answer(self._seq, time.monotonic() + _SPAWN_TIMEOUT_S)
                except (OSError, queue.Empty) as exc:
                    # a zygote that does not answer is not asked again: the next start gets a new
                    # one (or starts directly), instead of waiting out the same one every time
                    self.alive = False
                    with contextlib.suppress(OSError):
                        self.proc.kill()
                    raise ZygoteUnavailable(f"the zygote did not answer: {exc}") from None
            if type(answer) is not dict or type(answer.get("pid")) is not int:
                raise ZygoteUnavailable(f"the zygote could not fork: {answer}")
        except BaseException:
            for r, w in pipes:
                os.close(r)
                os.close(w)
            raise
        for fd in theirs[:3]:
            os.close(fd)
        return ZygoteChild(self, answer["pid"], pipes[0][1], pipes[1][0], pipes[2][0])

    def _answer(self, seq: int, deadline: float) -> Any:
        """The answer to request `seq` (a late answer to one that timed out is dropped: its
        child found its pipes closed and exited)."""
        while True:
            answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            if type(answer) is not dict or answer.get("seq") == seq:
                return answer

    def returncode(self, pid: int) -> int | None:
        with self._exited:
            if pid in self._exits:
                return self._exits[pid]
            return None if self.alive else -9

    def wait(self, pid: int, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._exited:
            while True:
                code = self._exits.get(pid)
                if code is not None:
                    return code
                if not self.alive:
                    return -9
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._exited.wait(left)

    def forget(self, pid: int) -> None:
        with self._exited:
            self._exits.pop(pid, None)


class ZygoteChild:
    """A worker the zygote forked, as `ProcessWorker` uses a `subprocess.Popen`."""

    def __init__(self, zygote: Zygote, pid: int, stdin: int, stdout: int, stderr: int) -> None:
        self._zygote = zygote
        self.pid = pid
        self.stdin = open(stdin, "wb", buffering=0)  # noqa: SIM115 - owned by the worker handle
        self.stdout = open(stdout, "rb", buffering=0)  # noqa: SIM115
        self.stderr = open(stderr, "rb")  # noqa: SIM115
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.returncode(self.pid)
            if self.returncode is not None:
                self._zygote.forget(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._zygote.wait(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            self.returncode = code
            self._zygote.forget(self.pid)
        return self.returncode


_zygotes: dict[tuple, Zygote] = {}
_zygotes_lock = threading.Lock()


def zygote_for(python: str, directory: str, package_paths: list[str], env: dict,
               start: Any) -> Zygote:
    """The zygote for this interpreter and these package paths, started (through `start`, the
    spawner: `start(fn)` runs fn on the long-lived spawning thread) if there is none alive."""
    key = (python, directory, tuple(package_paths))
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.alive and zygote.proc.poll() is None:
            return zygote
        if zygote is not None:
            with contextlib.suppress(OSError):
                zygote.proc.kill()
        try:
            zygote = start(lambda: Zygote(python, directory, package_paths, env))
        except (OSError, subprocess.SubprocessError) as exc:
            raise ZygoteUnavailable(f"cannot start the zygote: {exc}") from None
        _zygotes[key] = zygote
        return zygote
