"""The `local` backend: a small pool of worker processes of our own.

Why not `concurrent.futures` or `multiprocessing.Pool`: neither can stop one task. A hung task must
be cut at its deadline, and the only reliable way to stop arbitrary Python (a model call blocked
in a socket, C code holding the GIL) is to kill the process running it. So each worker is one
process with its own socket: the driver sends one task at a time, waits on every socket at once,
and on a deadline or a death kills that process and starts a fresh one, leaving the others alone.

Workers are plain `python -m codeagent.batch.backends.procworker` processes rather than multiprocessing's
"spawn" children: spawn re-imports the caller's __main__ (a script without the
`if __name__ == "__main__"` guard then starts workers forever), and fork is unsafe when the caller
has threads. Like spawn, a worker gets the driver's sys.path (as PYTHONPATH) and working
directory, so a factory importable in the driver is importable in the worker. Only JSON crosses
the socket (length-prefixed frames). Workers ignore SIGINT (the driver decides what an interrupt
means) and die with the driver (PR_SET_PDEATHSIG), so an interrupted or killed driver leaves no
worker behind.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_any
from typing import Any

from executors.access import sweep_workdirs

from .pool import Event, Slot

__all__ = ["LocalPool"]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class ProcessSlot(Slot):
    def __init__(self, runner_config: dict[str, Any], env: dict[str, str]) -> None:
        super().__init__()
        parent_sock, child_sock = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "codeagent.batch.backends.procworker", str(child_sock.fileno())],
                pass_fds=(child_sock.fileno(),), env=env, stdin=subprocess.DEVNULL,
            )
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.conn.send_bytes(json.dumps(runner_config).encode())

    def death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "the worker process stopped answering (it closed its socket)"
        if code < 0:
            import signal

            try:
                return f"the worker process was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"the worker process was killed by signal {-code}"
        return f"the worker process exited (exit code {code})"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable (D state): leave it to the OS
            pass
        self.conn.close()


class LocalPool:
    """Worker processes on this machine; see the module docstring."""

    name = "local"

    def __init__(self, runner_args: tuple[Any, ...]) -> None:
        factory, options, executor, executor_options, trace = runner_args
        self.config = {"factory": factory, "options": options, "executor": executor,
                       "executor_options": executor_options, "trace": trace}
        self.env = _child_env()
        self.slots: list[ProcessSlot] = []

    def start_slot(self) -> ProcessSlot:
        slot = ProcessSlot(self.config, self.env)
        self.slots.append(slot)
        return slot

    def submit(self, slot: Slot, record: dict[str, Any]) -> None:
        assert isinstance(slot, ProcessSlot)
        try:
            slot.conn.send_bytes(json.dumps(record).encode())
        except OSError:
            pass  # it died just now: wait() reports the death

    def wait(self, timeout: float | None) -> list[Event]:
        by_conn = {s.conn: s for s in self.slots if s.state in ("starting", "busy")}
        if not by_conn:
            return []
        return [self._read(by_conn[c]) for c in wait_any(list(by_conn), timeout)]

    def _read(self, slot: ProcessSlot) -> Event:
        try:
            message = json.loads(slot.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            return Event(slot, "died", reason=slot.death_reason())
        if not isinstance(message, dict):
            return Event(slot, "died", reason="the worker sent a malformed message")
        if "ready" in message:
            slot.pid = message["ready"]
            return Event(slot, "ready")
        return Event(slot, "result", row=message)

    def replace(self, slot: Slot) -> ProcessSlot:
        assert isinstance(slot, ProcessSlot)
        self.slots.remove(slot)
        slot.kill()
        sweep_workdirs()  # a killed worker could not remove its executor's folder
        return self.start_slot()

    def close(self) -> None:
        for slot in self.slots:
            slot.conn.close()  # an idle worker ends on EOF
        for slot in self.slots:
            if slot.state != "busy":
                try:
                    slot.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            slot.kill()
        self.slots.clear()
        sweep_workdirs()
