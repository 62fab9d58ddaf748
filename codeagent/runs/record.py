"""The recorder: the one place a run's facts go, and the typed events that report them.

The `Recorder` keeps one run's clock, steps, usage and outcome and turns them into the events of
`stream()` / `astream()`, so CodeAgent's and ToolCallingAgent's runs record, report and fail alike:
every way a step can fail goes through `Recorder.fail_step`, and a run that stops early ends
through `interrupted()` (Ctrl-C) or `cancelled()` (its task was cancelled). What it produces,
`RunResult` and its `StepRecord`s, is in `result.py` (its names are re-exported here).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..events import ErrorEvent, Event, FinalAnswerEvent, Observation, RunEnd, RunStart, TextDelta
from ..models.replies import ModelReply, Usage
from ..tools.attachments import AttachmentRecord
from ..tracing.spans import NO_TRACE, start_run
from .result import (
    ActionRefused,
    ErrorKind,
    RunFailed,
    RunInterrupted,
    RunResult,
    RunStatus,
    StepRecord,
    cancelled_result,
    public_output,
)

__all__ = ["RunStatus", "ErrorKind", "ActionRefused", "StepRecord", "RunResult", "RunFailed", "RunInterrupted",
           "Recorder", "Step", "interruptible", "cancellable", "public_output", "cancelled_result"]

NO_USAGE = Usage()
_REEXPORTED = (ActionRefused, RunFailed, RunStatus, cancelled_result)  # (names kept importable from here)


def interruptible(events: Iterator[Event], rec: Recorder) -> Iterator[Event]:
    """A run's events; on KeyboardInterrupt the run ends "interrupted": its RunEnd is the last
    event, then RunInterrupted (with that result) is raised to the consumer."""
    try:
        yield from events
    except KeyboardInterrupt:
        end = rec.interrupted()
        yield end
        raise RunInterrupted(end.result) from None


async def cancellable(events: AsyncIterator[Event], rec: Recorder) -> AsyncIterator[Event]:
    """A run's events, async; when the task iterating them is cancelled the run ends "cancelled"
    (recorded, its trace ended) and the CancelledError goes on, carrying that RunResult as
    `.result` (`cancelled_result(error)`). The very same error: `asyncio.timeout()` and the task's
    `cancelled()` see a plain cancellation."""
    try:
        async for event in events:
            yield event
    except asyncio.CancelledError as exc:
        exc.result = rec.cancelled().result  # type: ignore[attr-defined]
        raise


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
        self, step: Step, build: Callable[[str | None], Any], send: Callable[[Any], Any], *,
        note: str | None, empty_note: str, retries: int, has_content: Callable[[ModelReply], bool],
    ) -> Generator[Any, Any, ModelReply | None]:
        """Ask the model (build the messages with `build(note)`; `send` them: a `drive.ModelCall`),
        retrying empty replies; a streamed reply's text comes out as TextDelta events.

        Returns the reply, or None after yielding the ErrorEvent that ended the run (a model failure,
        or `retries` + 1 empty replies in a row). Only the request counts as model time.
        """
        record = step.record
        reply: ModelReply | None = None
        for attempt in range(1, retries + 2):
            messages = build(join_notes(note, empty_note) if attempt > 1 else note)
            t = time.perf_counter()
            try:
                with self.trace.chat(step.span, messages, attempt) as chat:
                    reply = yield from send(messages).events(
                        lambda d, a=attempt: self.event(TextDelta, step.number, text=d.text, reasoning=d.reasoning,
                                                        attempt=a), chat.aside)
                    chat.reply(reply, has_content(reply))
            except Exception as exc:  # any model failure ends the run cleanly
                step.model_time += time.perf_counter() - t
                yield self.fail_step(step, ErrorKind.MODEL, f"model error: {exc}", ends_run=True)
                return None
            step.model_time += time.perf_counter() - t
            step.usage = step.usage + reply.usage
            record.finish_reason = reply.finish_reason
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
        return self._stopped("interrupted", "interrupted by the user (Ctrl-C)")

    def cancelled(self) -> RunEnd:
        """The task running the run was cancelled: it ends here, its step so far recorded."""
        return self._stopped("cancelled", "cancelled (the task running it was cancelled)")

    def _stopped(self, status: RunStatus, why: str) -> RunEnd:
        step = self.steps[-1] if self.steps else None
        where = f" during step {step.step}" if step is not None else ""
        self.status, self.error = status, f"{why}{where}"
        if step is not None and not step.error and not step.is_final_answer and not step.observation:
            step.error = status
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

    async def atraced(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """`traced` for an async run."""
        try:
            async for event in events:
                yield event
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
