"""Resuming a saved run by replay: which recorded steps are replayed, and how a replayed step is
checked against its record.

`CodeAgent.resume(record)` runs the loop again from step 1 with the model's replies taken from the
record (no request is sent) and every recorded tool call answered from it (`journal.py`), so the
executor ends up in the state the run had; then it goes on live. A step that ended is checked
against its record (its code, printed output, value, error); the first difference stops the resume
with `ReplayDiverged`, naming the step and showing the difference, unless the user asked to go on
(`on_divergence="continue"`: then the difference is reported as a Notice and the model goes on
from the record's conversation, the executor's state being what the replay made of it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal

from .result import RECORD_FORMAT, ErrorKind, RecordFormatError, RunResult, StepRecord

__all__ = ["Resumption", "ReplayDiverged", "difference", "resumable"]

# a step that ended the run this way is done again live (the model's or executor's failure)
_ENDED_RUN = {ErrorKind.MODEL.value, ErrorKind.EMPTY_REPLY.value, ErrorKind.EXECUTOR.value}
_FIELDS = (("code", "its code"), ("logs", "what it printed"), ("output_repr", "its value"),
           ("error", "its error"), ("is_final_answer", "whether it gave the final answer"))


class ReplayDiverged(RuntimeError):
    """A replayed step did not do what the record says it did. `.step`: its number; `.difference`."""

    def __init__(self, step: int, difference: str) -> None:
        self.step, self.difference = step, difference
        super().__init__(
            f"the replay diverged at step {step}: {difference}\n(what the code reads changed since the run: "
            "a file, the time, unseeded randomness. Resume with on_divergence='continue' "
            "(codeagent resume --continue-on-divergence) to go on from the record anyway.)")


def resumable(record: RunResult) -> None:
    """Refuse a record this version cannot resume, saying why."""
    if record.format != RECORD_FORMAT:
        raise RecordFormatError(
            f"run {record.run_id} is a format-{record.format} record: it can be read and viewed, but only a "
            f"format-{RECORD_FORMAT} record (saved step by step, with its tool calls) can be resumed")


@dataclass
class Resumption:
    """What a resumed run replays: the record's steps, and the user's decisions on approvals."""

    record: RunResult
    decisions: dict[tuple[int, int], bool | str] = field(default_factory=dict)
    on_divergence: Literal["stop", "continue"] = "stop"

    def __post_init__(self) -> None:
        self.ended: list[StepRecord] = []  # the leading steps that ended: replayed and checked
        for step in self.record.steps:
            if not step.complete or step.error_kind in _ENDED_RUN:
                break
            self.ended.append(step)
        rest = self.record.steps[len(self.ended):]
        # the step a kill (or a pause) cut off: its reply and saved calls are reused, then live
        self.cut: StepRecord | None = rest[0] if rest and not rest[0].complete and rest[0].model_output else None

    def recorded(self, number: int) -> StepRecord | None:
        """Step `number`'s record when it is replayed (its reply taken from it), else None."""
        if number <= len(self.ended):
            return self.ended[number - 1]
        if self.cut is not None and number == len(self.ended) + 1:
            return self.cut
        return None

    def live_from(self) -> int:
        """The first step whose record is written again (saving resumes there)."""
        return len(self.ended) + 1


def difference(old: StepRecord, new: StepRecord) -> str | None:
    """How a replayed step differs from its record (the first field that does), or None."""
    for name, label in _FIELDS:
        before, after = getattr(old, name), getattr(new, name)
        if name == "error" and old.error_kind != ErrorKind.EXECUTION.value:
            continue  # (refusals and the like are re-derived from the same reply)
        if before != after:
            return f"{label} differs:\n{_diff(before, after)}"
    return None


def _diff(before: object, after: object, limit: int = 40) -> str:
    if not isinstance(before, str) or not isinstance(after, str):
        return f"- record: {before!r}\n+ replay: {after!r}"
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "record", "replay", lineterm="", n=1))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)
