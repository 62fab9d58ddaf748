"""Fuzz campaign shards as batch tasks: `codeagent fuzz --backend local|ray` runs through run_batch.

Each shard (executors.fuzzing.campaigns.shards: one hypothesis run of up to 1,000 examples, a seed and a
count rather than the programs) is one batch task, so the driver's ~5 ms per task is spent once
per thousand examples, and the batch machinery gives the campaign what it gives agent runs:
worker processes or Ray actors on any node, a worker killed and replaced when a shard wedges it,
a shard retried when its worker dies, a results directory a rerun resumes from.

The "agent" of a task runs the shard and answers its report (JSON) as the run's output:

    run_fuzz_shards(tasks, backend="ray", workers=8)    # tasks: executors.fuzzing.shard_tasks(...)
    -> {task id: shard report (dict), or why the shard failed (str)}
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from executors.access import owned_tempdir

from .scheduler import run_batch
from .store import read_results

__all__ = ["fuzz_shard_agent", "run_fuzz_shards", "ShardProgress", "SHARD_FACTORY"]

SHARD_FACTORY = "codeagent.batch.fuzz_shards:fuzz_shard_agent"
# A shard whose examples all hang takes examples × (timeout + margin + 5 s): past this, its
# worker is wedged rather than busy, and is killed and replaced.
_SHARD_SLACK_S = 300.0


class _ShardAgent:
    """Runs the shard task it is given (JSON text) and returns its report as the run's output."""

    def run(self, task: str) -> Any:
        from codeagent.agent.code_agent import RunResult
        from executors.fuzzing.campaigns.distributed import run_shard_task

        t0 = time.perf_counter()
        report = run_shard_task(json.loads(task))
        return RunResult(run_id=uuid.uuid4().hex, task=task, status="success", output=report,
                         duration_s=time.perf_counter() - t0)


def fuzz_shard_agent(**_options: Any) -> _ShardAgent:
    """The batch factory of fuzz shards (the shard and its options travel in the task)."""
    return _ShardAgent()


class ShardProgress:
    """`fuzz ray × 2: 3/10 shards  0.4 shards/s  ETA 18 s` on stderr: redrawn on a terminal,
    a line every 10 s otherwise (and at the end)."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label, self.stream = label, stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.last = 0.0

    def __call__(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "task_retry":
            self.stream.write(f"\n{self.label}: retrying {event['id']}: {event['reason']}\n")
        if kind != "task_end":
            return
        now = time.monotonic()
        last = event["done"] >= event["to_run"]
        if not (last or now - self.last >= (0.2 if self.tty else 10.0)):
            return
        self.last = now
        eta = "" if event.get("eta_s") is None or last else f"  ETA {event['eta_s']:.0f} s"
        line = f"{self.label}: {event['done']}/{event['to_run']} shards  {event['rate']:.2f} shards/s{eta}"
        self.stream.write(("\r\x1b[K" + line + ("\n" if last else "")) if self.tty else line + "\n")
        self.stream.flush()


def _shard_timeout(tasks: Sequence[Mapping[str, Any]]) -> float:
    longest = max((t["shard"]["examples"] for t in tasks), default=1)
    opts = tasks[0]["options"] if tasks else {"timeout": 2.0, "margin": 1.0}
    return longest * (float(opts["timeout"]) + float(opts["margin"]) + 5.0) + _SHARD_SLACK_S


def run_fuzz_shards(tasks: Sequence[dict[str, Any]], *, backend: str = "local", workers: int = 2,
                    address: str | None = None, out: str | None = None, progress: Any = None,
                    ray_init: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run shard tasks on `workers` workers of `backend` ("local" or "ray"); {task id: the shard's
    report as JSON data, or why it failed}. `out` keeps the batch directory (a rerun with the same
    `out` skips the shards already done); by default a temporary one is removed afterwards.
    Raises codeagent.batch.BatchError when the batch cannot run (no Ray, workers that cannot start)."""
    directory = out or owned_tempdir("codeagent-fuzz-shards-")
    records = [{"id": t["id"], "task": json.dumps({"options": t["options"], "shard": t["shard"]})} for t in tasks]
    try:
        run_batch(SHARD_FACTORY, records, out=directory, backend=backend, workers=workers,
                  timeout_s=_shard_timeout(tasks), retries=1, address=address, ray_init=ray_init,
                  progress=progress)
        results: dict[str, Any] = {}
        for row in read_results(directory):
            ok = row.get("status") == "success" and isinstance(row.get("output"), dict)
            results[str(row["id"])] = row["output"] if ok else f"{row.get('status')}: {row.get('error')}"
        return results
    finally:
        if out is None:
            shutil.rmtree(directory, ignore_errors=True)
