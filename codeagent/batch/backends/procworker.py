"""A local batch worker: `python -m codeagent.batch.backends.procworker FD`.

FD is this process's end of a socket to the driver. First frame in: the runner's configuration
(JSON: factory reference, options, executor, runs at once); then one task record per frame,
answered by one result row per frame. A "ready" frame is sent once the factory is imported, so a
task's deadline does not pay for the worker's start. With `runs` > 1 the tasks run at once on one
event loop (`TaskRunner.arun`), their rows sent as each ends, in any order (each names its task).
See codeagent.batch.backends.local.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import sys
from multiprocessing.connection import Connection


def _die_with_parent() -> None:
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the socket's EOF still ends an idle worker
        return
    if os.getppid() != parent:  # the driver died before the signal was armed
        os._exit(1)


def main(fd: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    conn = Connection(fd)
    try:
        config = json.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return 0
    from ..worker import TaskRunner

    runner = TaskRunner(config["factory"], config.get("options"), config.get("executor"),
                        config.get("executor_options"), config.get("trace"))
    runner.warm_up()
    try:
        conn.send_bytes(json.dumps({"ready": os.getpid()}).encode())
        if int(config.get("runs") or 1) > 1:
            asyncio.run(_serve_at_once(conn, runner))
            return 0
        while True:
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):
                return 0  # the driver closed the pool or is gone
            row = runner.run(json.loads(data))
            conn.send_bytes(json.dumps(row).encode())
    except OSError:  # BrokenPipe: the driver closed the pool (or is gone) before it read this
        return 0
    finally:
        runner.close()


async def _serve_at_once(conn: Connection, runner: object) -> None:
    """Each task record as it comes, run as a task of this loop; its row sent when it ends. Ends
    when the driver closes the socket (what still runs is cancelled: the driver is gone or done)."""
    loop = asyncio.get_running_loop()
    records: asyncio.Queue = asyncio.Queue()

    def readable() -> None:
        try:
            records.put_nowait(json.loads(conn.recv_bytes()))
        except (EOFError, OSError):
            loop.remove_reader(conn.fileno())
            records.put_nowait(None)

    async def one(record: dict) -> None:
        row = await runner.arun(record)  # type: ignore[attr-defined]
        try:
            conn.send_bytes(json.dumps(row).encode())
        except OSError:  # the driver is gone
            pass

    loop.add_reader(conn.fileno(), readable)
    running: set[asyncio.Task] = set()
    while (record := await records.get()) is not None:
        task = asyncio.ensure_future(one(record))
        running.add(task)
        task.add_done_callback(running.discard)
    for task in list(running):
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
