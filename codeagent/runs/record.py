"""The run record: what a run of any agent produced, and the recorder that writes it.

`RunResult` (with its `StepRecord`s) is what `run()` returns and `save()`/`load()` keep as JSON;
`RunResult.replies()` is what a replay feeds back (`ScriptedModel.from_run`). The `Recorder` keeps
one run's clock, steps, usage and outcome and turns them into the typed events of `stream()`, so
CodeAgent's and ToolCallingAgent's runs record, report and fail alike: every way a step can fail
goes through `Recorder.fail_step`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_serializer

from ..events import (
    NOT_JSON,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    Observation,
    RunEnd,
    RunStart,
    plain_json,
)
from ..models.replies import ModelReply, Usage
from ..tools.attachments import AttachmentRecord
from ..tracing.spans import NO_TRACE, start_run

__all__ = ["RunStatus", "ErrorKind", "ActionRefused", "StepRecord", "RunResult", "RunFailed", "RunInterrupted",
           "Recorder", "Step", "interruptible"]

# interrupted: Ctrl-C (KeyboardInterrupt) ended the run; what it did so far is in the result
RunStatus = Literal["success", "max_steps", "failed", "interrupted"]
NO_USAGE = Usage()


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


def interruptible(events: Iterator[Event], rec: Recorder) -> Iterator[Event]:
    """A run's events; on KeyboardInterrupt the run ends "interrupted": its RunEnd is the last
    event, then RunInterrupted (with that result) is raised to the consumer."""
    try:
        yield from events
    except KeyboardInterrupt:
        end = rec.interrupted()
        yield end
        raise RunInterrupted(end.result) from None


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
    empty_replies: int = 0
    attachments: list[AttachmentRecord] = Field(default_factory=list)


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
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunResult:
        return cls.model_validate_json(text)

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
        path.write_text(self.to_json() + "\n", encoding="utf-8")
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


@dataclass
class Step:
    """A step in progress: its record, and the clocks and usage written into it when it ends."""

    number: int
    record: StepRecord
    started: float
    model_time: float = 0.0
    exec_time: float = 0.0
    usage: Usage = NO_USAGE  # Usage is frozen: one shared zero (building one costs ~2 µs a step)
    span: Any = None  # the step's span when the run is traced (codeagent.tracing)


def model_name(model: Any) -> str:
    return str(getattr(model, "model_id", type(model).__name__))


def join_notes(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return "\n\n".join(kept) if kept else None


def public_output(value: Any) -> Any:
    """`value` for JSON and events when it is plain JSON, else None (its output_repr says what it was)."""
    safe = plain_json(value)
    return None if safe is NOT_JSON else safe


class Recorder:
    """One run's id, clock, steps, usage and outcome, and the events that report them."""

    def __init__(self, model: Any, task: str, output_dir: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.task = task
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.run_id = uuid.uuid4().hex[:12]
        self.attached = 0  # attachments so far: the next one's index is attached + 1
        self.t0 = time.perf_counter()
        self.steps: list[StepRecord] = []
        self.usage = Usage()
        self.status: RunStatus = "max_steps"
        self.output: Any = None
        self.output_repr: str | None = None
        self.error: str | None = None
        self.trace: Any = NO_TRACE  # the run's spans (codeagent.tracing.spans), set by start()
        self.setup: dict[str, Any] = {}  # mode, executor, tools, max_steps, isolation: kept in the result

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def event(self, cls: type[Event], step: int | None = None, **fields: Any) -> Any:
        return cls(run_id=self.run_id, step=step, elapsed_s=round(self.elapsed(), 6), **fields)

    def start(self, *, max_steps: int, tools: Sequence[str], executor: str, mode: str = "code",
              agent: str = "agent", action_format: Any = None) -> RunStart:
        """The run starts when iteration does: the clock restarts here (and its trace, if any)."""
        self.t0 = time.perf_counter()
        self.setup.update(mode=mode, executor=executor, tools=list(tools), max_steps=max_steps)
        self.trace = start_run(agent=agent, model=self.model, mode=mode, action_format=action_format,
                               max_steps=max_steps, executor=executor, run_id=self.run_id, task=self.task)
        return self.event(
            RunStart, task=self.task, model=model_name(self.model), scripted=bool(getattr(self.model, "scripted", False)),
            max_steps=max_steps, tools=list(tools), executor=executor,
        )

    @property
    def running(self) -> bool:
        return self.status == "max_steps"

    def begin_step(self, number: int) -> Step:
        record = StepRecord(step=number)
        self.steps.append(record)
        return Step(number, record, time.perf_counter(), span=self.trace.step(number))

    def finish(self, step: Step) -> None:
        record = step.record
        record.usage = step.usage
        record.model_duration_s = step.model_time
        record.execution_duration_s = step.exec_time
        record.duration_s = time.perf_counter() - step.started
        self.usage = self.usage + step.usage
        self.trace.end_step(step.span, record)

    def fail_step(
        self, step: Step | None, kind: ErrorKind, message: str, *, ends_run: bool = False,
        observation: str | None = None,
    ) -> ErrorEvent:
        """Record why `step` failed, finish it, and return the ErrorEvent to yield.

        ends_run: the run ends here, failed, with `message` as its error (a step of None: the run
        failed before its first step). Otherwise the model is told: the observation is
        `observation`, by default "Error: <message>".
        """
        if ends_run or step is None:
            self.status, self.error = "failed", message
        if step is None:
            return self.event(ErrorEvent, kind=kind.value, message=message)
        record = step.record
        record.error, record.error_kind = message, kind.value
        if not ends_run:
            record.observation = observation if observation is not None else f"Error: {message}"
        self.finish(step)
        return self.event(ErrorEvent, step.number, kind=kind.value, message=message)

    def isolated_by(self, executor: Any) -> None:
        """Keep what the run's executor enforces (its `isolation`, once it has started)."""
        try:
            self.setup["isolation"] = executor.isolation.to_dict()
        except Exception:  # an executor without a report (or a broken one): the run goes on
            self.setup["isolation"] = None

    def attach(self, step: Step, attachments: Sequence[Any]) -> list[AttachmentRecord]:
        """Record the step's attachments, numbered across the run; with an output_dir, save each
        now as `<output_dir>/<run_id>.figure-<n>.<suffix>` (what `RunResult.save` of
        `<output_dir>/<run_id>.json` writes too)."""
        records = []
        for attachment in attachments:
            self.attached += 1
            record = AttachmentRecord.of(attachment, step=step.number, index=self.attached)
            if self.output_dir is not None:
                target = self.output_dir / record.file_name(self.run_id)
                try:
                    self.output_dir.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(attachment.data)
                    record.file = str(target.resolve())
                except OSError:  # a full disk must not end the run: the observation says "not saved"
                    record.file = None
            records.append(record)
        step.record.attachments.extend(records)
        return records

    def answer(self, step: Step, output: Any, output_repr: str | None) -> None:
        """The step gave the final answer: the run succeeded."""
        self.status, self.output, self.output_repr = "success", output, output_repr
        step.record.is_final_answer = True

    def observed(self, step: Step, error: tuple[ErrorKind, str] | None, **fields: Any) -> Iterator[Event]:
        """End a step whose action ran: its Observation, then its error if any, then the final answer.

        `fields` are the Observation's (logs, output_repr); the observation text is the record's.
        """
        if error is None:
            self.finish(step)
        yield self.event(
            Observation, step.number, observation=step.record.observation, duration_s=round(step.exec_time, 6),
            attachments=[a.metadata() for a in step.record.attachments], **fields,
        )
        if error is not None:
            yield self.fail_step(step, *error, observation=step.record.observation)
        if step.record.is_final_answer:
            yield self.event(
                FinalAnswerEvent, step.number, output=public_output(self.output), output_repr=self.output_repr
            )

    def ask(
        self, step: Step, build: Callable[[str | None], Any], send: Callable[[Any], ModelReply], *,
        note: str | None, empty_note: str, retries: int, has_content: Callable[[ModelReply], bool],
    ) -> Generator[ErrorEvent, None, ModelReply | None]:
        """Ask the model (build the messages with `build(note)`, `send` them), retrying empty replies.

        Returns the reply, or None after yielding the ErrorEvent that ended the run (a model failure,
        or `retries` + 1 empty replies in a row). Only `send` counts as model time.
        """
        record = step.record
        reply: ModelReply | None = None
        for attempt in range(retries + 1):
            messages = build(join_notes(note, empty_note) if attempt else note)
            t = time.perf_counter()
            try:
                with self.trace.chat(step.span, messages, attempt + 1) as chat:
                    reply = send(messages)
                    chat.reply(reply, has_content(reply))
            except Exception as exc:  # any model failure ends the run cleanly
                step.model_time += time.perf_counter() - t
                yield self.fail_step(step, ErrorKind.MODEL, f"model error: {exc}", ends_run=True)
                return None
            step.model_time += time.perf_counter() - t
            step.usage = step.usage + reply.usage
            if has_content(reply):
                record.model_output, record.reasoning = reply.text, reply.reasoning
                return reply
            record.empty_replies += 1
        assert reply is not None
        record.model_output, record.reasoning = reply.text, reply.reasoning
        message = f"the model returned {record.empty_replies} empty replies in a row at step {step.number}"
        yield self.fail_step(step, ErrorKind.EMPTY_REPLY, message, ends_run=True)
        return None

    def interrupted(self) -> RunEnd:
        """Ctrl-C: the run ends here, its step so far recorded; the RunEnd to yield."""
        step = self.steps[-1] if self.steps else None
        where = f" during step {step.step}" if step is not None else ""
        self.status, self.error = "interrupted", f"interrupted by the user (Ctrl-C){where}"
        if step is not None and not step.error and not step.is_final_answer and not step.observation:
            step.error = "interrupted"
        return self.end()

    def give_up(self, max_steps: int) -> None:
        self.error = f"no final answer after {max_steps} steps"

    def traced(self, events: Iterator[Event]) -> Iterator[Event]:
        """`events`, with the run's spans ended however the run stops (a dropped stream, an error)."""
        try:
            yield from events
        except BaseException as exc:
            self.trace.close(exc)
            raise
        finally:
            self.trace.close()

    def end(self) -> RunEnd:
        duration = self.elapsed()
        result = RunResult(
            run_id=self.run_id, task=self.task, status=self.status, output=self.output,
            output_repr=self.output_repr, error=self.error, steps=self.steps, usage=self.usage,
            duration_s=duration, model=model_name(self.model), scripted=bool(getattr(self.model, "scripted", False)),
            **self.setup,
        )
        self.trace.end(self)
        return self.event(
            RunEnd, status=self.status, output=public_output(self.output), output_repr=self.output_repr,
            error=self.error, steps=len(self.steps), usage=self.usage, duration_s=round(duration, 6), result=result,
        )
