"""The batch's directory: `results.jsonl` (one line per finished task, append-only) and
`runs/<id>.json` (each run's full RunResult), plus `batch.json` (how the batch was run), and
`partial/<id>.json`: an unfinished run's record, saved step by step, from which a batch started
again resumes that run mid-way (by replay: docs/runs.md) instead of from its first step.

`results.jsonl` is the commit log of the batch: a task is done when its line is there. Each line
is written whole, flushed and fsync'ed before the next task's line, so a batch killed at any moment
leaves at most one truncated last line; opening the store again drops that line (the task runs
again) and skips every id already recorded, which is what makes a batch resumable. The run file is
written (atomically, by rename) before the line, so a recorded task always has its run file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from executors.worker.bounds import BOUNDS
from executors.worker.bounds.scan import int_literal

from .tasks import run_file_name

__all__ = ["ResultStore", "read_results", "RESULTS", "RUNS", "META", "PARTIAL"]

RESULTS = "results.jsonl"
RUNS = "runs"
PARTIAL = "partial"  # each unfinished run's record, saved as it goes (docs/runs.md): resumed mid-run
META = "batch.json"

# a run's answer (an int of at most 4,300 digits crosses the boundary) is read back no bigger:
# int() from text is quadratic where a process turned Python's digit limit off
_INT = int_literal(BOUNDS)


def _scan(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The rows of a results file and the byte length of its intact part.

    Only the last line can be damaged (a write cut by a kill: no newline, or not JSON): it is left
    out of both. A bad line before the last means the file was edited: that is an error.
    """
    data = path.read_bytes() if path.exists() else b""
    lines = data.split(b"\n")  # the part after the last newline is the (possibly empty) torn tail
    complete, rows, good = lines[:-1], [], 0
    for number, line in enumerate(complete, 1):
        try:
            row = json.loads(line, parse_int=_INT) if line.strip() else None
        except ValueError:
            if number == len(complete) and not lines[-1]:
                break  # the last line is damaged: drop it
            raise ValueError(f"{path}:{number}: not JSON, and not the last line: the file is damaged")
        if row is not None:
            if not isinstance(row, dict) or "id" not in row:
                raise ValueError(f"{path}:{number}: a results line must be an object with an 'id'")
            rows.append(row)
        good += len(line) + 1
    return rows, good


def read_results(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a batch directory's results.jsonl, in the order the tasks finished."""
    path = Path(out) / RESULTS
    if not path.exists():
        raise FileNotFoundError(f"{out} is not a batch directory: it has no {RESULTS}")
    return _scan(path)[0]


# What a result depends on (a resumed batch must not mix results of other settings silently);
# not the backend, the number of workers or retries of crashed workers, which change only how fast.
SETTINGS = ("factory", "options", "executor", "executor_options", "timeout_s")


def changed_settings(before: dict[str, Any], now: dict[str, Any], prefix: str = "") -> list[str]:
    """"name: old → new" for every setting that differs (inside dicts by dotted name); a setting
    `before` does not know (a batch directory written before it was recorded) is not compared."""
    changes = []
    for key in sorted(before):
        old, new = before.get(key), now.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changes += changed_settings({k: old.get(k) for k in {*old, *new}}, new, f"{prefix}{key}.")
        elif old != new:
            changes.append(f"{prefix}{key}: {json.dumps(old, default=repr)} → {json.dumps(new, default=repr)}")
    return changes


class ResultStore:
    """Appends results to a batch directory; knows which task ids are done."""

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = Path(out)
        (self.out / RUNS).mkdir(parents=True, exist_ok=True)
        self.path = self.out / RESULTS
        rows, good = _scan(self.path)
        if self.path.exists() and good < self.path.stat().st_size:
            with self.path.open("r+b") as f:  # drop the torn last line: that task runs again
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        self.done: dict[str, dict[str, Any]] = {str(r["id"]): r for r in rows}
        self._file = self.path.open("ab")

    def run_path(self, task_id: str) -> Path:
        return self.out / RUNS / run_file_name(task_id)

    def partial_path(self, task_id: str) -> Path:
        """Where the task's run saves its record as it goes; gone once the task's line is committed."""
        return self.out / PARTIAL / run_file_name(task_id)

    def record(self, row: dict[str, Any], run: dict[str, Any] | None) -> None:
        """Save the run (if any), then commit the task's line."""
        self.record_many([(row, run)])

    def record_many(self, finished: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """Save each run, then commit all their lines with one fsync (results that arrive together
        share the disk's latency instead of queueing behind it)."""
        if not finished:
            return
        for row, run in finished:
            if run is not None:
                target = self.run_path(str(row["id"]))
                tmp = target.with_name(target.name + ".tmp")
                tmp.write_text(json.dumps(run, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
                os.replace(tmp, target)
        for row, _ in finished:
            self._file.write(json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        for row, _ in finished:
            self.done[str(row["id"])] = row
            self.partial_path(str(row["id"])).unlink(missing_ok=True)  # (its run file has it all)

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self.done.values())

    def _meta(self) -> dict[str, Any]:
        try:
            meta = json.loads((self.out / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        return meta if isinstance(meta, dict) else {}

    def recorded_settings(self) -> dict[str, Any] | None:
        """The settings the recorded results were made with (batch.json), None if unknown."""
        meta = self._meta()
        if isinstance(meta.get("settings"), dict):
            return meta["settings"]
        sessions = [s for s in meta.get("sessions") or () if isinstance(s, dict)]
        return {k: sessions[-1][k] for k in SETTINGS if k in sessions[-1]} if sessions else None

    def set_settings(self, settings: dict[str, Any]) -> None:
        """Record, before the first task runs, the settings this session's results are made with."""
        meta = self._meta()
        meta["settings"] = json.loads(json.dumps(settings, default=repr))
        self._write(meta)

    def write_meta(self, session: dict[str, Any]) -> None:
        """Add this session (options, timings) to batch.json; a resumed batch has several."""
        meta = self._meta()
        meta.setdefault("sessions", []).append({"ended_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **session})
        self._write(meta)

    def _write(self, meta: dict[str, Any]) -> None:
        path = self.out / META
        tmp = path.with_name(META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
