"""The batch's directory: `results.jsonl` (one line per finished task, append-only) and
`runs/<id>.json` (each run's full RunResult), plus `batch.json` (how the batch was run).

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

__all__ = ["ResultStore", "read_results", "RESULTS", "RUNS", "META"]

RESULTS = "results.jsonl"
RUNS = "runs"
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

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self.done.values())

    def write_meta(self, session: dict[str, Any]) -> None:
        """Add this session (options, timings) to batch.json; a resumed batch has several."""
        path = self.out / META
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {"sessions": []}
        meta.setdefault("sessions", []).append({"ended_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **session})
        tmp = path.with_name(META + ".tmp")
        tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
