"""Progress of a batch: a one-line bar with rate and ETA on a terminal, NDJSON events otherwise.

Events (also what a callable `progress=` receives, as dicts):
  {"event": "batch_start", "total", "skipped", "to_run", "backend", "workers"}
  {"event": "task_end", "id", "status", "attempts", "wall_s", "done", "to_run", "rate", "eta_s"}
  {"event": "task_retry", "id", "attempt", "reason"}
  {"event": "batch_end", "ran", "wall_s", "rate", "success", "tasks"}
`done`/`to_run` count this session's tasks; `rate` is tasks per second since the batch started.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["Progress", "make_progress"]


class Progress:
    """Counts, rate and ETA; subclasses decide how an event is shown."""

    def __init__(self, emit: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._emit = emit
        self.t0 = time.perf_counter()
        self.to_run = 0
        self.done = 0
        self.failed = 0

    def emit(self, event: dict[str, Any]) -> None:
        if self._emit is not None:
            self._emit(event)

    def start(self, total: int, skipped: int, backend: str, workers: int) -> None:
        self.t0 = time.perf_counter()
        self.to_run = total - skipped
        self.emit({"event": "batch_start", "total": total, "skipped": skipped, "to_run": self.to_run,
                   "backend": backend, "workers": workers})

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.t0
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta(self) -> float | None:
        rate = self.rate()
        return (self.to_run - self.done) / rate if rate > 0 else None

    def task_end(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.failed += row["status"] != "success"
        eta = self.eta()
        self.emit({"event": "task_end", "id": row["id"], "status": row["status"], "attempts": row.get("attempts", 1),
                   "wall_s": row.get("wall_s"), "done": self.done, "to_run": self.to_run,
                   "rate": round(self.rate(), 3), "eta_s": None if eta is None else round(eta, 1)})

    def retry(self, task_id: str, attempt: int, reason: str) -> None:
        self.emit({"event": "task_retry", "id": task_id, "attempt": attempt, "reason": reason})

    def end(self, tasks: int, success: int) -> None:
        self.emit({"event": "batch_end", "ran": self.done, "wall_s": round(time.perf_counter() - self.t0, 3),
                   "rate": round(self.rate(), 3), "success": success, "tasks": tasks})


class BarProgress(Progress):
    """`[########......] 12/20  60%  3.1 tasks/s  ETA 3 s  1 not successful`, redrawn in place."""

    def __init__(self, stream: TextIO, width: int = 28) -> None:
        super().__init__()
        self.stream = stream
        self.width = width

    def emit(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "batch_start" and event["skipped"]:
            self.stream.write(f"resuming: {event['skipped']} of {event['total']} tasks already done\n")
        elif kind == "task_retry":
            self.stream.write(f"\r\x1b[K  retrying {event['id']} (attempt {event['attempt']}): {event['reason']}\n")
        if kind in ("batch_start", "task_end", "task_retry"):
            self._draw()
        elif kind == "batch_end":
            self._draw()
            self.stream.write("\n")
        self.stream.flush()

    def _draw(self) -> None:
        total = max(self.to_run, 1)
        filled = int(self.width * self.done / total)
        eta = self.eta()
        text = (f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.to_run} "
                f"{100 * self.done / total:3.0f}%  {self.rate():.2f} tasks/s")
        if eta is not None and self.done < self.to_run:
            text += f"  ETA {eta:.0f} s"
        if self.failed:
            text += f"  {self.failed} not successful"
        self.stream.write("\r\x1b[K" + text)


class JsonProgress(Progress):
    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, event: dict[str, Any]) -> None:
        self.stream.write(json.dumps(event) + "\n")
        self.stream.flush()


def make_progress(progress: str | Callable[[dict[str, Any]], None] | None, stream: TextIO | None = None) -> Progress:
    """"auto" (a bar when `stream` is a terminal, else NDJSON), "bar", "json", "none"/None, or a
    callable that receives each event dict. `stream` defaults to stderr."""
    stream = stream or sys.stderr
    if callable(progress):
        return Progress(progress)
    if progress in (None, "none"):
        return Progress()
    if progress == "auto":
        progress = "bar" if getattr(stream, "isatty", lambda: False)() else "json"
    if progress == "bar":
        return BarProgress(stream)
    if progress == "json":
        return JsonProgress(stream)
    raise ValueError(f"progress must be 'auto', 'bar', 'json', 'none' or a callable, got {progress!r}")
