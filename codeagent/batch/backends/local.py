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

Runs at once (`runs` > 1): each process runs that many tasks together on one event loop (the
async agent API), so a slot is one lane of a process. The worker cuts a task at its time limit
itself (it cancels the run: the other lanes go on); the driver's deadline, later by
`deadline_grace_s`, is only the backstop for a process that stopped answering, and killing it
ends its other lanes' tasks too (they are reported as crashed, and retried).
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


class WorkerProcess:
    """One worker process: its socket, its lanes (the slots it serves), how it died."""

    def __init__(self, runner_config: dict[str, Any], env: dict[str, str]) -> None:
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
        self.lanes: list[ProcessSlot] = []
        self.ready = False
        self.dead = False

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
        self.dead = True
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable (D state): leave it to the OS
            pass
        self.conn.close()


class ProcessSlot(Slot):
    """One lane of a worker process: one task at a time."""

    def __init__(self, process: WorkerProcess) -> None:
        super().__init__()
        self.process = process
        process.lanes.append(self)


class LocalPool:
    """Worker processes on this machine; see the module docstring."""

    name = "local"

    def __init__(self, runner_args: tuple[Any, ...], runs: int = 1) -> None:
        factory, options, executor, executor_options, trace = runner_args
        self.config = {"factory": factory, "options": options, "executor": executor,
                       "executor_options": executor_options, "trace": trace, "runs": runs}
        self.runs = runs
        self.env = _child_env()
        self.slots: list[ProcessSlot] = []
        self.processes: list[WorkerProcess] = []
        self.pending: list[Event] = []  # events known before any socket is read
        # the worker cuts its own tasks when it runs several: the driver's kill comes this much later
        self.deadline_grace_s = 30.0 if runs > 1 else 0.0
        self.sends_time_limit = runs > 1

    def start_slot(self) -> ProcessSlot:
        process = next((p for p in self.processes if not p.dead and len(p.lanes) < self.runs), None)
        if process is None:
            process = WorkerProcess(self.config, self.env)
            self.processes.append(process)
        slot = ProcessSlot(process)
        self.slots.append(slot)
        if process.ready:
            slot.pid = process.proc.pid
            self.pending.append(Event(slot, "ready"))
        return slot

    def submit(self, slot: Slot, record: dict[str, Any]) -> None:
        assert isinstance(slot, ProcessSlot)
        try:
            slot.process.conn.send_bytes(json.dumps(record).encode())
        except OSError:
            pass  # it died just now: wait() reports the death

    def wait(self, timeout: float | None) -> list[Event]:
        if self.pending:
            events, self.pending = self.pending, []
            return events
        by_conn = {p.conn: p for p in self.processes if not p.dead
                   and any(s.state in ("starting", "busy") for s in p.lanes)}
        if not by_conn:
            return []
        events: list[Event] = []
        for conn in wait_any(list(by_conn), timeout):
            events.extend(self._read(by_conn[conn]))
        return events

    def _read(self, process: WorkerProcess) -> list[Event]:
        try:
            message = json.loads(process.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            return self._died(process, process.death_reason())
        if not isinstance(message, dict):
            return self._died(process, "the worker sent a malformed message")
        if "ready" in message:
            process.ready = True
            starting = [s for s in process.lanes if s.state == "starting"]
            for slot in starting:
                slot.pid = message["ready"]
            return [Event(slot, "ready") for slot in starting]
        slot = next((s for s in process.lanes if s.state == "busy" and s.task_id == message.get("id")), None)
        if slot is None:
            return self._died(process, "the worker answered for a task it was not given")
        return [Event(slot, "result", row=message)]

    def _died(self, process: WorkerProcess, reason: str) -> list[Event]:
        """Every lane of a dead process, once (a death before it started counts once)."""
        process.kill()
        lanes = [s for s in process.lanes if s in self.slots]
        return [Event(s, "died", reason=reason, counted=i == 0) for i, s in enumerate(lanes)]

    def replace(self, slot: Slot) -> ProcessSlot:
        assert isinstance(slot, ProcessSlot)
        self.slots.remove(slot)
        process = slot.process
        process.lanes.remove(slot)
        if not process.dead:  # its other lanes' tasks end with it
            reason = "another task of its worker process passed its time limit and the process was killed"
            process.kill()
            self.pending.extend(Event(s, "died", reason=reason, counted=False) for s in process.lanes)
        if not process.lanes:
            self.processes.remove(process)
        sweep_workdirs()  # a killed worker could not remove its executor's folder
        return self.start_slot()

    def close(self) -> None:
        for process in self.processes:
            process.conn.close()  # an idle worker ends on EOF
        for process in self.processes:
            if not any(s.state == "busy" for s in process.lanes):
                try:
                    process.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            process.kill()
        self.processes.clear()
        self.slots.clear()
        sweep_workdirs()
