"""A batch's outcome: one row per task and the totals, as a table; and what changed between two
batches. Built from `results.jsonl`, so a finished, resumed or interrupted batch reads the same."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .store import read_results

__all__ = ["TaskRow", "BatchSummary", "answers_match", "compare", "natural_key", "RUN_STATUSES", "BATCH_STATUSES"]

RUN_STATUSES = ("success", "max_steps", "failed", "interrupted", "cancelled")  # a RunResult's own statuses
# the batch's, for runs that did not end with a RunResult
BATCH_STATUSES = ("timeout", "crashed", "error")


def natural_key(task_id: str) -> list[Any]:
    """q2 before q10: ids ordered as a person reads them."""
    # split on digits, the parts alternate text, number, text...: an int never meets a str
    return [int(part) if part.isdecimal() else part for part in re.split(r"(\d+)", task_id)]


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _norm(v) for k, v in value.items()}
    return value


def answers_match(expected: Any, output: Any) -> bool:
    """The summary's check: equal as JSON, numbers within 1e-6 (bools are not numbers), strings
    compared without case and surplus whitespace. Stricter or looser checks belong to the caller."""
    if isinstance(expected, bool) or isinstance(output, bool):
        return type(expected) is type(output) and expected == output
    if isinstance(expected, (int, float)) and isinstance(output, (int, float)):
        return math.isclose(expected, output, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(expected, (list, tuple)) and isinstance(output, (list, tuple)):
        return len(expected) == len(output) and all(answers_match(e, o) for e, o in zip(expected, output, strict=True))
    return _norm(expected) == _norm(output)


@dataclass(frozen=True)
class TaskRow:
    """One line of results.jsonl."""

    id: str
    status: str  # success | max_steps | failed (the RunResult's) | timeout | crashed | error
    output: Any = None
    output_repr: str | None = None
    error: str | None = None
    steps: int = 0
    model_calls: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    attempts: int = 1
    correct: bool | None = None  # None: the task has no `expected`

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> TaskRow:
        known = {f: row[f] for f in cls.__dataclass_fields__ if f in row}
        known["id"] = str(row["id"])
        return cls(**known)

    @property
    def answer(self) -> str:
        """The answer for a table: strings as they are, other values as JSON, else the sandbox's repr."""
        if self.output is None and self.output_repr is not None:
            return self.output_repr
        return self.output if isinstance(self.output, str) else json.dumps(self.output, ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cut(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class BatchSummary:
    """Rows in task order plus totals. `wall_s` and `ran` cover this session only (a resumed
    batch skipped `skipped` tasks already done); the rows cover the whole batch."""

    rows: tuple[TaskRow, ...]
    wall_s: float = 0.0
    ran: int = 0
    skipped: int = 0
    skipped_by: Mapping[str, int] = field(default_factory=dict)  # skipped tasks by recorded status
    backend: str = ""
    workers: int = 0
    out: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dir(cls, out: str | os.PathLike[str], order: Iterable[str] | None = None, **fields: Any) -> BatchSummary:
        rows = {str(r["id"]): TaskRow.from_dict(r) for r in read_results(out)}  # a later line wins
        ids = [i for i in order if i in rows] if order is not None else list(rows)
        return cls(tuple(rows[i] for i in ids), out=str(out), **fields)

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def succeeded(self) -> int:
        return sum(r.status == "success" for r in self.rows)

    @property
    def success_rate(self) -> float:
        return self.succeeded / self.total if self.total else 0.0

    @property
    def checked(self) -> int:
        return sum(r.correct is not None for r in self.rows)

    @property
    def correct(self) -> int:
        return sum(r.correct is True for r in self.rows)

    @property
    def tasks_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else 0.0

    def by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        return counts

    def totals(self) -> dict[str, Any]:
        return {
            "tasks": self.total, "success": self.succeeded, "success_rate": round(self.success_rate, 4),
            "checked": self.checked, "correct": self.correct, "by_status": self.by_status(),
            "steps": sum(r.steps for r in self.rows), "model_calls": sum(r.model_calls for r in self.rows),
            "tokens": sum(r.tokens for r in self.rows), "task_wall_s": round(sum(r.wall_s for r in self.rows), 3),
            "ran": self.ran, "skipped": self.skipped, "skipped_by_status": dict(self.skipped_by),
            "wall_s": round(self.wall_s, 3),
            "tasks_per_s": round(self.tasks_per_s, 3),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "backend": self.backend, "workers": self.workers, "totals": self.totals(),
                "rows": [r.to_dict() for r in self.rows], **dict(self.extra)}

    def table(self, answer_width: int = 40) -> str:
        head = ["id", "status", "answer", "ok", "steps", "calls", "tokens", "wall s"]
        body = [[r.id, r.status, _cut(r.answer if r.status == "success" else (r.error or ""), answer_width),
                 {True: "✓", False: "✗", None: ""}[r.correct], str(r.steps), str(r.model_calls), str(r.tokens),
                 f"{r.wall_s:.2f}"] for r in self.rows]
        if not self.checked:
            head.pop(3)
            for b in body:
                b.pop(3)
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        numeric = {i for i, h in enumerate(head) if h in ("steps", "calls", "tokens", "wall s")}
        lines = ["  ".join(x.rjust(w) if i in numeric else x.ljust(w) for i, (x, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                 for row in [head, *body]]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines += ["", self.totals_line()]
        return "\n".join(lines)

    def totals_line(self) -> str:
        t = self.totals()
        parts = [f"{t['success']}/{t['tasks']} succeeded ({100 * self.success_rate:.0f}%)"]
        if self.checked:
            parts.append(f"{self.correct}/{self.checked} correct")
        others = ", ".join(f"{n} {s}" for s, n in sorted(t["by_status"].items()) if s != "success")
        if others:
            parts.append(others)
        parts.append(f"{t['model_calls']} model calls, {t['tokens']} tokens")
        if self.ran:
            parts.append(f"this session: {self.ran} run in {self.wall_s:.1f} s ({self.tasks_per_s:.2f} tasks/s)")
        if self.skipped:
            parts.append(self.skipped_line())
        return " · ".join(parts)

    def skipped_line(self) -> str:
        """What a resumed batch did not run, and why: those tasks' results are from before."""
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.skipped_by.items()))
        unfinished = sum(n for s, n in self.skipped_by.items() if s != "success")
        again = (" (run them again: --retry failed|timeout|all)" if unfinished else "")
        return (f"{self.skipped} skipped: already recorded in {self.out or 'the batch directory'}"
                + (f" ({counts})" if counts else "") + again)


def _state(row: TaskRow | None) -> str:
    if row is None:
        return "(absent)"
    return f"{row.status}: {_cut(row.answer if row.status == 'success' else (row.error or ''), 40)}"


def compare(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> tuple[str, list[dict[str, Any]]]:
    """Which tasks changed between batch `a` and batch `b` (status, correctness or answer), as a
    text report and as rows {id, change, a, b}."""
    rows_a = {r.id: r for r in BatchSummary.from_dir(a).rows}
    rows_b = {r.id: r for r in BatchSummary.from_dir(b).rows}
    changes: list[dict[str, Any]] = []
    for task_id in sorted({*rows_a, *rows_b}, key=natural_key):
        ra, rb = rows_a.get(task_id), rows_b.get(task_id)
        if ra is None or rb is None:
            kind = "only in a" if rb is None else "only in b"
        elif (ra.status == "success") != (rb.status == "success"):
            kind = "fixed" if rb.status == "success" else "broken"
        elif ra.correct is not None and rb.correct is not None and ra.correct != rb.correct:
            kind = "now correct" if rb.correct else "now wrong"
        elif ra.status != rb.status or (ra.status == "success" and (
                not answers_match(ra.output, rb.output) or ra.output_repr != rb.output_repr)):
            kind = "changed"
        else:
            continue
        changes.append({"id": task_id, "change": kind, "a": ra.to_dict() if ra else None,
                        "b": rb.to_dict() if rb else None})
    sa, sb = BatchSummary(tuple(rows_a.values())), BatchSummary(tuple(rows_b.values()))
    lines = [f"a: {a}: {sa.totals_line()}", f"b: {b}: {sb.totals_line()}", ""]
    if not changes:
        lines.append(f"no task changed ({len(set(rows_a) | set(rows_b))} compared)")
    else:
        width = max(len(c["id"]) for c in changes)
        lines.append(f"{len(changes)} task(s) changed:")
        for c in changes:
            lines.append(f"  {c['id']:<{width}}  {c['change']:<11}  {_state(rows_a.get(c['id']))}  →  "
                         f"{_state(rows_b.get(c['id']))}")
    return "\n".join(lines), changes

