"""Batch task records: what one run of the batch is asked to do, read from JSONL or given as dicts.

A record is a JSON object:

    {"id": "q17", "task": "What is 2 + 40?", "expected": 42,
     "variables": {"rows": [...]}, "files": ["data/q17.csv"], ...anything else}

`id` (a non-empty string, or an int taken as its decimal string) and `task` (a string) are
required; ids are unique within a batch. `expected` (any JSON) lets the summary say whether the
answer was right. `variables` (a JSON object) are handed to `agent.run(task, variables=...)`.
`files` (a list of paths) are the files the run may use: they are passed to the agent factory as
`files=` (the factory decides how to grant them, e.g. an executor's `Access`), and a factory that
does not take `files` refuses such a task rather than run it without its files. Every other field is
kept in `meta` for the factory (the scripted test factory reads its replies from there).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BatchTask", "TaskError", "load_tasks", "run_file_name"]

_KNOWN = ("id", "task", "expected", "variables", "files")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class TaskError(ValueError):
    """A task record is malformed (the message names the record and the field)."""


@dataclass(frozen=True)
class BatchTask:
    id: str
    task: str
    expected: Any = None
    has_expected: bool = False
    variables: Mapping[str, Any] | None = None
    files: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Any, where: str = "task") -> BatchTask:
        if isinstance(record, BatchTask):
            return record
        if not isinstance(record, Mapping):
            raise TaskError(f"{where}: a task must be a JSON object with 'id' and 'task', got {type(record).__name__}")
        task_id = record.get("id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id.strip():
            raise TaskError(f"{where}: 'id' must be a non-empty string (or an integer), got {task_id!r}")
        text = record.get("task")
        if not isinstance(text, str) or not text.strip():
            raise TaskError(f"{where} (id {task_id!r}): 'task' must be a non-empty string")
        variables = record.get("variables")
        if variables is not None and not isinstance(variables, Mapping):
            raise TaskError(f"{where} (id {task_id!r}): 'variables' must be an object of name -> value")
        files = record.get("files") or ()
        if isinstance(files, str) or not all(isinstance(f, str) for f in files):
            raise TaskError(f"{where} (id {task_id!r}): 'files' must be a list of paths")
        meta = {k: v for k, v in record.items() if k not in _KNOWN}
        return cls(task_id, text, record.get("expected"), "expected" in record,
                   dict(variables) if variables is not None else None, tuple(files), meta)

    def to_record(self) -> dict[str, Any]:
        """The JSON object this task came from (what crosses to a worker)."""
        record: dict[str, Any] = {"id": self.id, "task": self.task, **self.meta}
        if self.has_expected:
            record["expected"] = self.expected
        if self.variables is not None:
            record["variables"] = dict(self.variables)
        if self.files:
            record["files"] = list(self.files)
        return record


def _records_from_file(path: Path) -> Iterator[tuple[str, Any]]:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TaskError(f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}): a tasks file is JSON "
                        "lines, saved as UTF-8")
    # lines end at \n only: splitlines() also breaks at U+2028 and friends, which JSON keeps raw
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            yield f"{path}:{number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{path}:{number}: not a JSON object: {exc}")


def load_tasks(tasks: str | Path | Iterable[Any]) -> list[BatchTask]:
    """Tasks from a JSONL file (one object a line; blank and `#` lines skipped) or an iterable of
    records (dicts or BatchTask). Raises TaskError for a malformed record or a repeated id."""
    if isinstance(tasks, (str, Path)):
        path = Path(tasks)
        if not path.is_file():
            raise TaskError(f"no task file at {path}")
        pairs: Iterable[tuple[str, Any]] = _records_from_file(path)
    else:
        pairs = ((f"task #{i}", r) for i, r in enumerate(tasks, 1))
    out: list[BatchTask] = []
    seen: dict[str, str] = {}
    for where, record in pairs:
        task = BatchTask.from_record(record, where)
        if task.id in seen:
            raise TaskError(f"{where}: id {task.id!r} is used twice (first at {seen[task.id]}); ids must be unique")
        seen[task.id] = where
        out.append(task)
    return out


def run_file_name(task_id: str) -> str:
    """`runs/<name>.json` for a task: the id itself when it is a safe file name, else a slug plus a
    hash of the id (so `a/b` and `a_b` never share a file)."""
    if _SAFE_NAME.fullmatch(task_id) and not task_id.endswith("."):
        return task_id + ".json"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._")[:60] or "task"
    return f"{slug}-{hashlib.sha256(task_id.encode()).hexdigest()[:10]}.json"
