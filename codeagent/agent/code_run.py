"""One CodeAgent run: the loop, written once for `run`/`stream` and `arun`/`astream`.

A step is four moves, each a method of `CodeRun`:
  ask      the model, with the conversation so far (empty replies are retried); streamed, its
           text comes out as TextDelta events and reading stops once the action has closed;
  extract  the action from the reply and vet it (the agent's action format);
  execute  it in the executor;
  observe  what it printed and returned (truncated head+tail): the next message, or the answer.
The loop (`events()`) is generators that yield the run's events and what they wait for (`Op`s,
`runs.drive`): the sync API drives it with the blocking calls (`codeagent.aio.events`: no event
loop, no thread), the async API awaits the async models, executors and tools on the caller's loop
(`aio.aevents`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Generator, Iterator, Mapping
from typing import Any

from executors.base import ExecutionResult, ExecutorError

from ..events import CodeAction, ErrorEvent, Event, ModelReplyEvent, Notice
from ..models.replies import ModelReply
from ..parsing import CodeParseError
from ..runs.drive import ModelCall, blocking, execute, request
from ..runs.record import ActionRefused, ErrorKind, Recorder, Step
from ..tools.attachments import AttachmentRecord, describe_line, image_part, is_sendable_image
from ..tools.tool import collecting_attachments
from .memory import Memory
from .observation import observation_text

__all__ = ["CodeRun", "AdaptationNotes", "sees_images", "EMPTY_REPLY_NOTE"]

EMPTY_REPLY_NOTE = (
    "Your previous reply was empty. Reply with a thought and one code block, in the format shown."
)


class CodeRun:
    """One CodeAgent run: its record, its conversation, and the four moves of a step.

    streaming: ask for streamed replies (their text as TextDelta events)."""

    def __init__(self, agent: Any, task: str, variables: Mapping[str, Any] | None, reset: bool,
                 streaming: bool) -> None:
        self.agent = agent
        self.rec = Recorder(agent.model, task, agent.output_dir)
        self.variables = variables
        self.reset = reset
        self.format = agent.action_format
        self.memory: Memory | None = None
        self.notes = agent._notes
        self.send = request(agent.model, streaming, self.format.block_watch)
        self._last = False  # whether the step being asked is the run's last

    def events(self) -> Generator[Any, Any, None]:
        agent, rec = self.agent, self.rec
        executor_name = type(agent._executor).__name__ if agent._executor else "SubprocessExecutor"
        yield rec.start(max_steps=agent.max_steps, tools=list(agent.tools), executor=executor_name,
                        mode=self.format.mode, agent=type(agent).__name__, action_format=self.format)
        # a constraint probe, a worker's start: blocking work, on a thread under the async API
        # (what is quick stays on the loop: a thread's hop costs more than it)
        yield blocking(lambda: self.format.use_constraint(agent.constraint_kind()), _probes(agent.model))
        yield from self.notes.new(rec)
        try:
            self.memory = yield blocking(self._prepare, not getattr(agent._executor, "warm", False))
        except ExecutorError as exc:
            yield rec.fail_step(None, ErrorKind.EXECUTOR, f"executor failed to start: {exc}")
            yield rec.end()
            return
        self.format.start_run()
        for number in range(1, agent.max_steps + 1):
            yield from self.step(number, last=number == agent.max_steps)
            if not rec.running:
                break
        else:
            rec.give_up(agent.max_steps)
        yield rec.end()

    def _prepare(self) -> Memory:
        agent = self.agent
        executor = agent.executor
        if self.reset:
            executor.reset()
        if agent._tools_given_to is not executor:
            # Once per executor: registering again would, e.g., drop a runtime's compile cache.
            executor.register_tools(dict(agent.tools))
            agent._tools_given_to = executor
        task_text = f"Task:\n{self.rec.task}"
        if self.variables:
            executor.set_variables(dict(self.variables))
            names = ", ".join(f"{k} ({type(v).__name__})" for k, v in self.variables.items())
            task_text += f"\n\nThese Python variables are already defined for you: {names}."
        examples = self.format.examples(task_text=lambda task: f"Task:\n{task}",
                                        observation=lambda value: f"Observation:\nLast value: {value!r}")
        memory = Memory(agent.system_prompt(), task_text, examples=examples)
        self.rec.isolated_by(executor)
        return memory

    def step(self, number: int, last: bool) -> Generator[Any, Any, None]:
        step = self.rec.begin_step(number)
        reply = yield from self.ask(step, last)
        if reply is None:
            return
        said = self._as_said(reply.text)
        code = yield from self.extract(step, reply.text, said)
        if code is None:
            return
        result = yield from self.execute(step, code)
        if result is not None:
            yield from self.observe(step, result, said)

    # -- the four moves ----------------------------------------------------------------------

    def ask(self, step: Step, last: bool) -> Generator[Any, Any, ModelReply | None]:
        agent = self.agent
        self._last = last  # the constraint of the last step allows only the final answer
        reply = yield from self.rec.ask(
            step, self._messages, self._send, note=agent.last_step_note if last else None,
            empty_note=EMPTY_REPLY_NOTE, retries=agent.empty_reply_retries, has_content=_has_text,
        )
        yield from self.notes.new(self.rec, step.number)
        if reply is not None:
            yield self.rec.event(
                ModelReplyEvent, step.number, text=reply.text, reasoning=reply.reasoning, usage=step.usage,
                duration_s=round(step.model_time, 6), finish_reason=reply.finish_reason,
            )
        return reply

    def extract(self, step: Step, text: str, said: str) -> Generator[Event, None, str | None]:
        """The code to run, or None once the model has been told why there is none."""
        try:
            code = self.format.extract(text)
        except CodeParseError as exc:
            yield self._refuse(step, ErrorKind.PARSE, self.format.lesson(exc), said)
            return None
        step.record.code = code
        try:
            code = step.record.code = self.format.vet(code, step.number)
        except ActionRefused as exc:
            yield self.rec.event(CodeAction, step.number, code=code)
            yield self._refuse(step, exc.kind, exc.message, said)
            return None
        yield self.rec.event(CodeAction, step.number, code=code)
        return code

    def execute(self, step: Step, code: str) -> Generator[Any, Any, ExecutionResult | None]:
        t = time.perf_counter()
        executor = self.agent.executor
        try:
            with self.rec.trace.execution(step.span, executor, code) as span, \
                    collecting_attachments() as attached:  # images the tools handed over (MCP image blocks)
                result = yield execute(executor, code)
                span.result(result)
        except ExecutorError as exc:
            step.exec_time = time.perf_counter() - t
            yield self.rec.fail_step(step, ErrorKind.EXECUTOR, f"executor failed: {exc}", ends_run=True)
            return None
        step.exec_time = time.perf_counter() - t
        if attached:
            result = dataclasses.replace(result, attachments=(*result.attachments, *attached))
        return result

    def observe(self, step: Step, result: ExecutionResult, said: str) -> Iterator[Event]:
        rec, record = self.rec, step.record
        final = result.is_final_answer
        failed = result.error is not None and not final
        record.logs, record.output_repr = result.logs, result.output_repr
        attached = rec.attach(step, result.attachments)
        shown = [a for a in attached if is_sendable_image(a.media_type)] if sees_images(self.agent.model) else []
        figures = "\n".join(describe_line(a, shown=a in shown) for a in attached)
        record.observation = observation_text(result, self.agent.max_observation_chars, final=final,
                                              figures=figures)
        if final:
            rec.answer(step, result.output, result.output_repr)
        else:
            note = None if failed else self.format.observation_note()
            self._remember(said, f"{record.observation}\n{note}" if note else record.observation, shown)
        # an execution error is the model's to fix: it reads it in the observation
        error = (ErrorKind.EXECUTION, str(result.error)) if failed else None
        yield from rec.observed(step, error, logs=result.logs, output_repr=result.output_repr)

    # -- helpers -----------------------------------------------------------------------------

    def _messages(self, note: str | None) -> list[dict[str, Any]]:
        assert self.memory is not None
        return self.memory.messages(self.agent.max_context_tokens, note=note,
                                    images=sees_images(self.agent.model))

    def _send(self, messages: list[dict[str, str]]) -> ModelCall:
        constraint = self.format.constraint(last=self._last)
        if constraint is None:
            return self.send(messages, stop=self.agent.stop_sequences)
        return self.send(messages, stop=self.agent.stop_sequences, constraint=constraint)

    def _as_said(self, text: str) -> str:
        """The reply as the history keeps it. The stop sequence ate the closing tag: put it back, so
        the model keeps seeing its past replies in the exact format it is asked for."""
        open_tag, close_tag = self.agent.code_tags
        if text.rfind(open_tag) > text.rfind(close_tag):
            return text.rstrip() + "\n" + close_tag
        return text

    def _remember(self, said: str, observation: str, images: list[AttachmentRecord] | None = None) -> None:
        assert self.memory is not None
        self.memory.add_step(said, "Observation:\n" + observation, [image_part(a) for a in images or ()])

    def _refuse(self, step: Step, kind: ErrorKind, message: str, said: str) -> ErrorEvent:
        """The action did not run: the model is told why, as the step's observation."""
        observation = f"Error: {message}"
        self._remember(said, observation)
        return self.rec.fail_step(step, kind, message, observation=observation)


class AdaptationNotes:
    """The `adaptations` of the model (a constraint probe's verdict, fallbacks, options the endpoint
    rejected) and of the agent, as `Notice` events, each once per agent: an agent's first run also
    reports what the model adapted to before it (auto_agent's probe). Shared by both agents."""

    def __init__(self, *sources: Any) -> None:
        self.sources = sources
        self.seen = [0] * len(sources)

    def new(self, rec: Recorder, step: int | None = None) -> Iterator[Notice]:
        for i, source in enumerate(self.sources):
            notes = list(getattr(source, "adaptations", None) or ())
            for note in notes[self.seen[i]:]:
                yield rec.event(Notice, step, message=str(note))
            self.seen[i] = len(notes)


def _probes(model: Any) -> bool:
    """Whether asking the model for its constraint spelling may send requests (an "auto" probe)."""
    return getattr(model, "constrain", None) == "auto" and not getattr(model, "_resolved", True)


def sees_images(model: Any) -> bool:
    """Whether the model takes images: its `vision` attribute is True (OpenAIModel(vision=...))."""
    return getattr(model, "vision", False) is True


def _has_text(reply: ModelReply) -> bool:
    return bool(reply.text.strip())
