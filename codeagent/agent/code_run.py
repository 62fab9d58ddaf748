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
import secrets
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from executors.base import ExecutionResult, ExecutorError

from ..events import CodeAction, ErrorEvent, Event, ModelReplyEvent, Notice
from ..models.replies import ModelReply
from ..parsing import CodeParseError
from ..runs.drive import ModelCall, blocking, execute, request
from ..runs.journal import Journal
from ..runs.record import ActionRefused, ErrorKind, Recorder, Step, StepRecord
from ..runs.replay import ReplayDiverged, Resumption, difference
from ..tools.attachments import AttachmentRecord, describe_line, image_part, is_sendable_image
from ..tools.tool import collecting_attachments, journaling
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
                 streaming: bool, resume: Resumption | None = None, record_path: Path | None = None) -> None:
        self.agent = agent
        record = resume.record if resume is not None else None
        self.rec = rec = Recorder(agent.model, task, agent.output_dir or agent.record_dir,
                                  run_id=record.run_id if record is not None else None)
        if record_path is None and getattr(agent, "record_file", None) is not None:
            record_path = Path(agent.record_file)
        elif record_path is None and agent.record_dir is not None:
            record_path = Path(agent.record_dir) / f"{rec.run_id}.json"
        rec.save_to(record_path, saving=resume is None)
        self.resume = resume
        # a durable run journals its tool calls and seeds the sandbox's random generators
        self.durable = record_path is not None or resume is not None
        if record is not None:
            rec.earlier_s, rec.attached = record.duration_s, len(record.attachments)
            rec.setup.update(seed=record.seed, invocation=record.invocation)
        else:
            rec.setup.update(seed=secrets.randbits(31) if self.durable else None, invocation=agent.invocation)
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
        rec.checkpoint()  # a durable run's record exists from its start (its task, seed, command line)
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
        if self.rec.setup.get("seed") is not None:
            seed_sandbox(executor, self.rec.setup["seed"])
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
        old = self.resume.recorded(number) if self.resume is not None else None
        if self.resume is not None and number == self.resume.live_from():
            self.rec.saving = self.rec.file is not None  # the replay is done: save again
        step = self.rec.begin_step(number)
        reply = yield from (self.replayed(step, old) if old is not None else self.ask(step, last))
        if reply is None:
            return
        said = self._as_said(reply.text)
        code = yield from self.extract(step, reply.text, said)
        if code is not None:
            journal = self._journal(step, old)
            with journaling(journal) if journal is not None else nullcontext():
                result = yield from self.execute(step, code)
            if journal is not None and journal.pending is not None:
                self.rec.pause(journal.pending)  # the step stays cut off at the call: see journal.py
                return
            if journal is not None and journal.diverged is not None:
                yield from self._diverged(number, f"the step's tool calls differ: {journal.diverged}")
            if result is None:
                return
            yield from self.observe(step, result, said)
            if old is not None and old.complete and journal is not None and not journal.replayed_all():
                yield from self._diverged(number, f"the replay made {journal.index} tool calls, the record "
                                                  f"{len(journal.recorded)}")
        if old is not None and old.complete:
            why = difference(old, step.record)
            if why is not None:
                yield from self._diverged(number, why)
            self.rec.steps[number - 1] = old  # (its original clocks and files)

    def replayed(self, step: Step, old: StepRecord) -> Iterator[Event]:
        """The recorded reply of a replayed step, as if the model had given it again."""
        record = step.record
        record.model_output, record.reasoning = old.model_output, old.reasoning
        record.finish_reason, record.empty_replies, step.usage = old.finish_reason, old.empty_replies, old.usage
        reply = ModelReply(text=old.model_output, reasoning=old.reasoning, usage=old.usage,
                           finish_reason=old.finish_reason)
        yield self.rec.event(ModelReplyEvent, step.number, text=reply.text, reasoning=reply.reasoning,
                             usage=step.usage, duration_s=0.0, finish_reason=reply.finish_reason)
        self.rec.log_reply(step)
        return reply

    def _journal(self, step: Step, old: StepRecord | None) -> Journal | None:
        needs = self.agent.needs_approval
        if not self.durable and needs is None:
            return None  # an ordinary run: its tool calls go straight through
        resume = self.resume
        return Journal(step.record, old.tool_calls if old is not None else None,
                       strict=old is not None and old.complete, save=self.rec.log, needs_approval=needs,
                       decisions=resume.decisions if resume is not None else None)

    def _diverged(self, number: int, why: str) -> Iterator[Event]:
        assert self.resume is not None
        if self.resume.on_divergence != "continue":
            raise ReplayDiverged(number, why)
        yield self.rec.event(Notice, number, message=f"the replay diverged at step {number} (going on): {why}")

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
            self.rec.log_reply(step)
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


def seed_sandbox(executor: Any, seed: int) -> None:
    """Seed the random generators the sandbox provides, so a replay draws what the run drew: the
    `random` module and numpy's legacy global generator (`np.random.rand`, ...), each the
    namespace's own (executors' library patches), when authorized. A step of its own, leaving no
    name behind. Not covered: `np.random.default_rng()` without a seed, `os.urandom`, the time."""
    imports = set(getattr(executor, "authorized_imports", ()) or ())
    lines = []
    for module, call in (("random", "random.seed"), ("numpy", "numpy.random.seed")):
        if module in imports or "*" in imports:
            lines += [f"import {module}", f"{call}({int(seed)})", f"del {module}"]
    if lines:
        executor.execute("\n".join(lines))  # (a module missing here: its error is no one's business)


def _probes(model: Any) -> bool:
    """Whether asking the model for its constraint spelling may send requests (an "auto" probe)."""
    return getattr(model, "constrain", None) == "auto" and not getattr(model, "_resolved", True)


def sees_images(model: Any) -> bool:
    """Whether the model takes images: its `vision` attribute is True (OpenAIModel(vision=...))."""
    return getattr(model, "vision", False) is True


def _has_text(reply: ModelReply) -> bool:
    return bool(reply.text.strip())
