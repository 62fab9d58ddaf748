"""A durable run's files: the record `<run_id>.json` and its log `<run_id>.json.log`.

The record is written whole, atomically (`atomic.write_atomic`: a temporary file renamed over it),
when the run starts, when the log has grown past `COMPACT_BYTES`, and when the run ends or pauses
(then the log is removed). Between, what happens is appended to the log, one line each: the
model's reply, each tool call with its result, each step's record when it ends (one
`write` to a file opened O_APPEND: microseconds, where renaming over the record costs a few
milliseconds on ext4, which flushes the replaced file's data at the rename). A process killed at
any point leaves the record whole plus the log's lines since (a line cut by the kill is dropped
when read); `load_record` puts them together. Appends and renames reach the page cache at once,
which a killed process cannot lose; the fsyncs that make them survive a power cut run on a
background thread at most once a second (the step does not wait for the disk), and at a run's end
or pause before the run returns.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from .atomic import sync_path, write_atomic
from .result import RunResult, StepRecord, ToolCallRecord

__all__ = ["RecordFile", "load_record", "log_path", "COMPACT_BYTES"]

SYNC_EVERY_S = 1.0  # how often the background thread fsyncs what was written since
COMPACT_BYTES = 4 << 20  # a log this long is folded into the record (a replay reads it all)


def log_path(path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".log")


class RecordFile:
    """Where one durable run is saved: `snapshot` at each step's end, `append` inside a step."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.log = log_path(self.path)
        self._fd: int | None = None
        self.logged = 0  # bytes in the log since the record was last written whole

    def full(self) -> bool:
        return self.logged >= COMPACT_BYTES

    def append(self, entry: dict[str, Any], *, sync: bool = False) -> None:
        """One line in the log; sync: have the background thread fsync it (a step's end)."""
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            line = _line(entry)
            _write(self._fd, line)
            self.logged += len(line)
            if sync:
                _syncer().put(self.log)
        except OSError:
            pass  # a disk that refuses: the run goes on; its end writes the record whole

    def snapshot(self, result: RunResult, *, wait: bool = False) -> None:
        """The whole record, atomically; then the log is emptied (the record has it all). wait:
        fsync before returning (a run's end, a pause), else on the background thread."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, result.to_json(indent=1) + "\n", sync=False)
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
            self.logged = 0
        except OSError:
            return
        if wait:
            sync_path(self.path)
        else:
            _syncer().put(self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.log.unlink(missing_ok=True)


_LINE = json.JSONEncoder(separators=(",", ":"))


def _line(entry: dict[str, Any]) -> bytes:
    """One log line: JSON text of plain data, by pydantic-core's serializer (1.3 us for a tool call's
    line, where the json module takes 4-6: a step of 33 calls saved in 5 % of its time or not), or
    by the json module for what pydantic-core refuses (a lone surrogate in a string)."""
    try:
        return to_json(entry) + b"\n"
    except PydanticSerializationError:
        return (_LINE.encode(entry) + "\n").encode("utf-8")


_write = os.write  # (one write per line: O_APPEND puts it whole at the end; tests cut it in two)
_QUEUE: queue.Queue[Path] | None = None
_LOCK = threading.Lock()


def _syncer() -> queue.Queue[Path]:
    """One daemon thread per process that fsyncs records after their steps, newest first."""
    global _QUEUE
    with _LOCK:
        if _QUEUE is None:
            _QUEUE = queue.Queue()
            threading.Thread(target=_sync_loop, args=(_QUEUE,), name="codeagent-record-sync", daemon=True).start()
        return _QUEUE


def _sync_loop(paths: queue.Queue[Path]) -> None:
    while True:
        pending = {paths.get()}
        while not paths.empty():  # (several steps ended meanwhile: one fsync each file)
            pending.add(paths.get_nowait())
        for path in pending:
            sync_path(path)
        # at most one round a second: an fsync holds up appends to the file it flushes (measured:
        # ~1 ms a step when every step's end was fsynced), so steps' lines are made durable in batches
        time.sleep(SYNC_EVERY_S)


def load_record(path: str | os.PathLike[str]) -> RunResult:
    """The record at `path` with its log's lines since (a run cut off inside a step)."""
    result = RunResult.load(path)
    log = log_path(path)
    try:
        data = log.read_bytes()
    except OSError:
        return result
    lines = data.split(b"\n")[:-1]  # the part after the last newline: a line cut by the kill
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and apply(result, entry):
            result.status = "running"
    return result


def apply(result: RunResult, entry: dict[str, Any]) -> bool:
    """Put one log line into the record (a line the record already has changes nothing)."""
    number, kind = entry.get("step"), entry.get("t")
    if not isinstance(number, int) or number < 1:
        return False
    if kind == "step" and isinstance(entry.get("record"), dict) and number in (len(result.steps), len(result.steps) + 1):
        record = StepRecord.model_validate(entry["record"])
        if number == len(result.steps):
            result.steps[-1] = record
        else:
            result.steps.append(record)
        return True
    if kind == "reply" and number == len(result.steps) + 1:
        fields = {k: entry[k] for k in ("model_output", "reasoning", "finish_reason", "empty_replies", "usage",
                                        "code") if k in entry}
        result.steps.append(StepRecord(step=number, complete=False, **fields))
        return True
    if number != len(result.steps) or result.steps[-1].complete:
        return False
    calls = result.steps[-1].tool_calls
    index = entry.get("index")
    if kind == "call" and index == len(calls):
        calls.append(ToolCallRecord.model_validate(entry["call"]))
        return True
    if kind == "done" and isinstance(index, int) and 0 <= index < len(calls):
        calls[index] = ToolCallRecord.model_validate(entry["call"])
        return True
    return False
