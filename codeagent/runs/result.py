"""What a run of any agent produced: `RunResult` and its `StepRecord`s, the statuses and error
kinds, and the exceptions that carry a run (`RunFailed`, `RunInterrupted`).

`RunResult` is what `run()` returns and `save()`/`load()` keep as JSON; `RunResult.replies()` is
what a replay feeds back (`ScriptedModel.from_run`). The `Recorder` (record.py) writes them.
"""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_serializer

from ..events import NOT_JSON, model_json, plain_json
from ..models.replies import ModelReply, Usage
from ..tools.attachments import AttachmentRecord
from .atomic import write_atomic

__all__ = ["RunStatus", "ErrorKind", "ActionRefused", "StepRecord", "RunResult", "RunFailed", "RunInterrupted",
           "public_output", "cancelled_result", "RECORD_FORMAT", "RecordFormatError", "ToolCallRecord",
    "PendingCall"]

# interrupted: Ctrl-C (KeyboardInterrupt) ended the run; cancelled: the task awaiting arun() or
# iterating astream() was cancelled. Either way what it did so far is in the result.
# running: a durable record saved mid-run (the process may have died: `CodeAgent.resume` goes on);
# paused: a tool that needs approval is waiting for it (`RunResult.pending`, `codeagent approve`).
RunStatus = Literal["success", "max_steps", "failed", "interrupted", "cancelled", "running", "paused"]

# The record's format (`RunResult.format`, docs/runs.md). 2: steps carry their tool calls and
# whether they ended; the run its seed and pending call. A file without the field is format 1
# (before durable runs): readable, not resumable. A newer one is refused, never misread.
RECORD_FORMAT = 2


class ErrorKind(str, Enum):  # noqa: UP042 - StrEnum would change what str() gives
    """Why a step failed: `StepRecord.error_kind` and `ErrorEvent.kind` (the values are recorded)."""

    PARSE = "parse"  # no code (or no call) could be found in the reply
    INVALID_ACTION = "invalid_action"  # single-call mode: the reply is not one allowed call
    REPEATED_ACTION = "repeated_action"  # the action already ran; it was not run again
    EXECUTION = "execution"  # the code ran and raised (or broke a limit): the model can fix it
    TOOL = "tool"  # tool-calling mode: a call failed
    EMPTY_REPLY = "empty_reply"  # the model kept replying nothing: the run ends
    MODEL = "model"  # the model endpoint failed: the run ends
    EXECUTOR = "executor"  # the executor itself broke: the run ends

    def __str__(self) -> str:
        return self.value


class ActionRefused(Exception):
    """An action format refuses an action before it runs (`ActionFormat.vet`).

    `kind` (an `ErrorKind`, or its value) becomes the step's error_kind and the ErrorEvent's kind;
    `message` is written for the model and becomes the observation.
    """

    def __init__(self, kind: ErrorKind | str, message: str) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.message = message


class RunFailed(RuntimeError):
    """`RunResult.raise_for_status()` on a run that gave no final answer; `.result` is that run."""

    def __init__(self, result: RunResult) -> None:
        self.result = result
        self.status = result.status
        if result.status == "max_steps":
            why = (f"{result.error or 'no final answer'}: raise max_steps (the agent's max_steps=...), "
                   "or read result.steps to see where the model went")
        else:
            why = result.error or "the run failed"
        super().__init__(f"the run ended with status {result.status!r}: {why}")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a run: a KeyboardInterrupt (a script stops as it would anyway) that carries
    the run so far as `.result` (status "interrupted"), to save or inspect."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(result.error)
        self.result = result


def cancelled_result(error: BaseException) -> RunResult | None:
    """The run so far that a cancelled `arun()` / `astream()` recorded (status "cancelled"), from
    the CancelledError it raised; None for any other error."""
    result = getattr(error, "result", None)
    return result if isinstance(result, RunResult) else None


class RecordFormatError(ValueError):
    """A saved record this version cannot read (made by a newer codeagent) or resume (an older one)."""


class ToolCallRecord(BaseModel):
    """One call a step's code made to a host tool. `args` / `kwargs` / `result` are the executors'
    codec trees (`executors.worker.codec.encode_value`: JSON plus tags), what crossed the boundary.
    done=False: the call started and no result was saved (the process died inside it)."""

    name: str
    args: Any = None
    kwargs: Any = None
    done: bool = False
    result: Any = None
    error: str | None = None
    rejected: bool = False  # the user refused the call (approval): `error` is what the model read


class PendingCall(BaseModel):
    """A paused run's call waiting for approval: step, its index among the step's calls, what."""

    step: int
    index: int
    name: str
    arguments: str  # as the user reads it: name(args...), plain reprs of the decoded values


class _Rendered:
    """Shows a value by the text the sandbox rendered for it."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text if self.text is not None else "<unrepresentable>"


class StepRecord(BaseModel):
    """One step of a run. `error_kind` is an `ErrorKind` value (parse, execution, ...) or None."""

    step: int
    model_output: str = ""
    reasoning: str | None = None
    code: str | None = None
    observation: str = ""
    logs: str = ""
    output_repr: str | None = None
    error: str | None = None
    error_kind: str | None = None
    is_final_answer: bool = False
    duration_s: float = 0.0
    model_duration_s: float = 0.0
    execution_duration_s: float = 0.0
    usage: Usage = Usage()
    # the endpoint's ("stop", "length", ...), or "cut": the agent stopped reading the streamed reply
    # once its code block had closed (its usage then is an estimate)
    finish_reason: str | None = None
    empty_replies: int = 0
    attachments: list[AttachmentRecord] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    complete: bool = True  # False: the step was cut off (a killed process, a pause) before its end


class RunResult(BaseModel):
    """What a run produced. Saved as JSON with `save(path)`, re-loaded with `RunResult.load(path)`.

    `output` is the final answer as the executor returned it. In JSON it is kept when it is made of
    plain JSON types; otherwise it is saved as null and `output_repr` (rendered in the sandbox) says
    what it was. Figures the steps produced are `attachments` (each step's are in its record); their
    bytes are saved beside the JSON, not in it.
    """

    run_id: str
    task: str
    status: RunStatus
    output: Any = None
    output_repr: str | None = None
    error: str | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    usage: Usage = Usage()
    duration_s: float = 0.0
    model: str = ""
    scripted: bool = False
    # how the run was made (what `codeagent view` shows above the steps); empty in older files
    mode: str = ""  # the agent's action mode: code, single_call, tool_calling
    executor: str = ""
    isolation: dict[str, Any] | None = None  # executors.Isolation.to_dict() of the run's executor
    tools: list[str] = Field(default_factory=list)
    max_steps: int = 0
    # durable runs (format 2): the record's format, the seed of the sandbox's random generators,
    # the call waiting for approval, and the command line that made it (`codeagent resume`)
    format: int = RECORD_FORMAT
    seed: int | None = None
    pending: PendingCall | None = None
    invocation: list[str] | None = None

    @field_serializer("output")
    def _serialize_output(self, value: Any) -> Any:
        safe = plain_json(value)
        return None if safe is NOT_JSON else safe

    def __repr_args__(self) -> Any:
        # Never run a model-made object's __repr__ on the host: show the sandbox's rendering.
        for name, value in super().__repr_args__():
            if name == "output":
                safe = plain_json(value)
                yield name, (value if safe is not NOT_JSON else _Rendered(self.output_repr))
            else:
                yield name, value

    @property
    def success(self) -> bool:
        return self.status == "success"

    def raise_for_status(self) -> RunResult:
        """This result when the run gave a final answer, else raise `RunFailed` with the reason.

        `run()` never raises for a model, endpoint or code failure (the result records it), so
        `print(agent.run(task).output)` would show None with no hint: use
        `agent.run(task).raise_for_status().output` where a failed run should stop the program.
        """
        if not self.success:
            raise RunFailed(self)
        return self

    def replies(self) -> list[ModelReply]:
        """The model's replies, step by step: what a replay of this run answers with."""
        return [ModelReply(text=s.model_output, reasoning=s.reasoning, usage=s.usage) for s in self.steps]

    def to_json(self, indent: int | None = 2) -> str:
        return model_json(self, indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunResult:
        data = json.loads(text)
        version = data.get("format", 1) if isinstance(data, dict) else None
        if not isinstance(version, int) or isinstance(version, bool):
            raise RecordFormatError(f"not a run record: its 'format' is {version!r}, not a number")
        if version > RECORD_FORMAT:
            raise RecordFormatError(
                f"this run record is format {version}, newer than this codeagent reads ({RECORD_FORMAT}): "
                "upgrade codeagent to read it")
        if version == 1:
            data["format"] = 1  # (missing in the file: say so, never take it for the current one)
            for step in data.get("steps") or ():
                if isinstance(step, dict):
                    step.setdefault("complete", True)
        return cls.model_validate(data)

    @property
    def attachments(self) -> list[AttachmentRecord]:
        """Every step's attachments (figures, images), in the order they came."""
        return [a for s in self.steps for a in s.attachments]

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the run as JSON at `path`, and its attachments beside it: `<stem>.figure-1.png`, ...

        The JSON names each file (`attachments[].file`, relative to its own directory), so the
        directory moves as a whole; `RunResult.load` finds them again. Attachments whose bytes are
        gone (a run loaded from JSON alone) keep the file they had.
        """
        path = Path(path)
        for record in self.attachments:
            target = path.parent / record.file_name(path.stem)
            if record.write(target):
                record.file = target.name
                record._base = path.parent.resolve()
        write_atomic(path, self.to_json() + "\n")
        return path

    def saved_files(self) -> list[Path]:
        """Where the attachments' bytes are (after `save`, or written during the run)."""
        return [p for p in (a.path for a in self.attachments) if p is not None]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunResult:
        path = Path(path)
        result = cls.from_json(path.read_text(encoding="utf-8"))
        for record in result.attachments:
            record._base = path.parent.resolve()
        return result


def public_output(value: Any) -> Any:
    """`value` for JSON and events when it is plain JSON, else None (its output_repr says what it was)."""
    safe = plain_json(value)
    return None if safe is NOT_JSON else safe


