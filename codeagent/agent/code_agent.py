"""CodeAgent: the loop that asks a model for Python, runs it, and feeds back what happened.

One step is four moves, each a method of `_CodeRun`:
  ask      the model, with the conversation so far (empty replies are retried);
  extract  the action from the reply and vet it (the agent's action format: a code block, or one
           literal call for weak models);
  execute  it in the executor;
  observe  what it printed and returned (truncated head+tail): the next message, or the answer.
Steps repeat until the code calls `final_answer(...)` or `max_steps` is reached. Everything the user
sees is in `RunResult` (from `run`) or in the typed events of `stream`; model and executor failures
end the run with a status, not with an exception.

Figures a step produced (`ExecutionResult.attachments`) are recorded in the step, saved in the
agent's `output_dir` when it has one, and shown to the model: as images when it can see them
(`model.vision`), else as one line each ("[figure 1: 640×480 PNG, 23 kB, saved as …]").
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Generator, Iterable, Iterator, Mapping
from typing import Any, Literal, overload

from executors.base import ExecutionResult, Executor, ExecutorError, Limits

from ..events import CodeAction, ErrorEvent, Event, ModelReplyEvent, Notice, RunEnd
from ..models.constrain.request import model_spelling, spelling_kind
from ..models.openai_model import Model
from ..models.replies import ModelReply
from ..parsing import CodeParseError
from ..runs.record import (
    ActionRefused,
    ErrorKind,
    Recorder,
    RunResult,
    RunStatus,
    Step,
    StepRecord,
    interruptible,
)
from ..tools.attachments import AttachmentRecord, describe_line, image_part, is_sendable_image
from ..tools.grants import access_rule, files_section
from ..tools.tool import Tool, collecting_attachments, tools_by_name
from .checks import check_access, check_agent_arguments, check_int, default_executor_imports
from .formats import DEFAULT_CODE_TAGS, ActionFormat, CodeBlock, normalize_code
from .memory import Memory
from .observation import observation_text
from .prompts import PROMPTS_DIR, load_prompt

__all__ = [
    "CodeAgent", "RunResult", "StepRecord", "RunStatus", "DEFAULT_CODE_TAGS", "ActionRefused",
    "LAST_STEP_NOTE", "PROMPTS_DIR", "normalize_code", "observation_text",
]

LAST_STEP_NOTE = (
    "This is your last step. Call final_answer(...) now with your best answer, in one code block."
)
EMPTY_REPLY_NOTE = (
    "Your previous reply was empty. Reply with a thought and one code block, in the format shown."
)


class CodeAgent:
    """An agent that acts by writing Python.

    model: any `Model` (`OpenAIModel`, `ScriptedModel`, or your own `complete(messages, stop)`).
    tools: `Tool` objects, typed functions, or {name: callable}; handed to the executor.
    executor: any `executors.Executor`; default a warm `SubprocessExecutor` (the restricted policy
        in a child process, confined by the kernel where the OS allows: its `isolation` says how),
        which the agent owns, starts while the model thinks, and closes. `LocalExecutor()` is the
        explicit choice for speed (same policy, in this process). `authorized_imports` / `limits`
        configure that default; a module named in `authorized_imports` must be installed (checked
        here, not at the first import).
        `additional_authorized_imports` is smolagents' name for `authorized_imports`.
    max_steps: steps before the run ends with status "max_steps".
    max_context_tokens: budget for the messages sent to the model (estimated at ~4 chars/token);
        the oldest steps are dropped first, the system prompt and the task always stay.
    max_observation_chars: observations are cut head+tail to this many characters.
    action_format: how the model writes its action (`codeagent.agent.formats`): `CodeBlock()` (default)
        or `SingleCall(bundleable=...)` for very weak models; it brings its own prompt template.
    access: the files and network the default executor grants (`executors.Access`); with
        executor=..., give it to that executor instead. Either way the agent reads the executor's
        grants and lists what the code can see in the system prompt.
    output_dir: where figures the code produces are saved as the run goes
        (`<run_id>.figure-1.png`, ...), so the model and the events can name the file; None: they
        stay in the RunResult (whose `save(path)` writes them beside the JSON).

    Constrained decoding: when the model constrains its output (`OpenAIModel(constrain=...)`), each
    run asks it which spelling it uses (an "auto" model probes its endpoint at first use) and the
    action format sends the matching constraint with every request; what the model adapted to (the
    probe's verdict, a fallback) comes out of `stream` as `Notice` events.
    """

    last_step_note = LAST_STEP_NOTE  # what the model is told on its last step

    def __init__(
        self,
        model: Model,
        tools: Iterable[Any] | Mapping[str, Any] = (),
        executor: Executor | None = None,
        max_steps: int = 10,
        *,
        authorized_imports: Iterable[str] | None = None,
        limits: Limits | None = None,
        max_context_tokens: int | None = 16_000,
        max_observation_chars: int = 6_000,
        code_tags: tuple[str, str] = DEFAULT_CODE_TAGS,
        instructions: str | None = None,
        system_prompt_template: str | None = None,
        empty_reply_retries: int = 3,
        action_format: ActionFormat | None = None,
        additional_authorized_imports: Iterable[str] | None = None,
        access: Any = None,
        output_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        check_agent_arguments(model, tools, executor)
        check_access(access, executor)
        check_int("max_steps", max_steps, 1)
        check_int("max_observation_chars", max_observation_chars, 200)
        check_int("empty_reply_retries", empty_reply_retries, 0)
        if max_context_tokens is not None:
            check_int("max_context_tokens", max_context_tokens, 1, none="None for no budget")
        authorized_imports = default_executor_imports(
            authorized_imports, additional_authorized_imports, executor, limits)
        self.model = model
        self.tools: dict[str, Tool] = tools_by_name(tools)
        self.max_steps = max_steps
        self.max_context_tokens = max_context_tokens
        self.max_observation_chars = max_observation_chars
        self.code_tags = code_tags
        self.instructions = instructions
        self.empty_reply_retries = empty_reply_retries
        self.stop_sequences = [code_tags[1], "\nObservation:"]
        self.action_format = (action_format or CodeBlock()).bind(self.tools, code_tags)
        self._template_override = system_prompt_template
        self._authorized_imports = list(authorized_imports) if authorized_imports is not None else None
        self._limits = limits
        self._access = access
        self.output_dir = output_dir
        self._executor = executor
        self._owns_executor = executor is None
        self._tools_given_to: Executor | None = None  # executors keep tools across reset()
        self._notes = AdaptationNotes(model)

    # -- executor ----------------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            from executors.process import SubprocessExecutor

            self._executor = executor = SubprocessExecutor(
                tools=dict(self.tools), authorized_imports=self._authorized_imports, limits=self._limits,
                access=self._access,
            )
            executor.prewarm()  # the worker starts while the model writes its first reply
            self._tools_given_to = executor
        return self._executor

    def close(self) -> None:
        if self._owns_executor and self._executor is not None:
            self._executor.close()
            self._executor = None

    def __enter__(self) -> CodeAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- prompt ------------------------------------------------------------------------------

    def constraint_kind(self) -> str | None:
        """"grammar", "schema" or None: what the model can constrain its replies with (a model with
        constrain="auto" runs its probe on the first call)."""
        return spelling_kind(model_spelling(self.model))

    def system_prompt(self) -> str:
        """The system prompt of the next run (of the last run's constraint kind, once it ran)."""
        imports = tuple(getattr(self.executor, "authorized_imports", ()) or ())
        if "*" in imports:
            imports_text = "any installed module"
        else:
            imports_text = ", ".join(imports) if imports else "none"
        text = self._template_override or load_prompt(self.action_format.template_file)
        fields = {
            "open": self.code_tags[0],
            "close": self.code_tags[1],
            "tools": self.action_format.render_tools(),
            "authorized_imports": imports_text,
            "access": access_rule(self.executor),
            "files": files_section(self.executor),
            "instructions": f"\n{self.instructions.strip()}\n" if self.instructions else "",
            **self.action_format.prompt_fields(),
        }
        for name, value in fields.items():
            text = text.replace("{{" + name + "}}", value)
        return text

    # -- running -----------------------------------------------------------------------------

    @overload
    def run(self, task: str, *, variables: Mapping[str, Any] | None = ..., reset: bool = ...,
            stream: Literal[False] = ...) -> RunResult: ...

    @overload
    def run(self, task: str, *, variables: Mapping[str, Any] | None = ..., reset: bool = ...,
            stream: Literal[True]) -> Iterator[Event]: ...

    def run(self, task: str, *, variables: Mapping[str, Any] | None = None, reset: bool = True,
            stream: bool = False) -> RunResult | Iterator[Event]:
        """Run the task to its end and return what happened: a `RunResult`.

        It never raises for a model, endpoint or code failure: the result's `status` and `error`
        say what happened, and `result.raise_for_status()` turns a failed run into an exception.
        stream=True: return `self.stream(task, ...)` instead, the run's events as they happen.
        """
        if stream:
            return self.stream(task, variables=variables, reset=reset)
        end: RunEnd | None = None
        for event in self.stream(task, variables=variables, reset=reset):
            if isinstance(event, RunEnd):
                end = event
        assert end is not None and isinstance(end.result, RunResult)
        return end.result

    def stream(
        self, task: str, *, variables: Mapping[str, Any] | None = None, reset: bool = True
    ) -> Iterator[Event]:
        """Run the task, yielding typed events as they happen; the last one is `RunEnd`."""
        run = _CodeRun(self, task, variables, reset)
        return run.rec.traced(interruptible(run.events(), run.rec))


class _CodeRun:
    """One CodeAgent run: its record, its conversation, and the four moves of a step."""

    def __init__(self, agent: CodeAgent, task: str, variables: Mapping[str, Any] | None, reset: bool) -> None:
        self.agent = agent
        self.rec = Recorder(agent.model, task, agent.output_dir)
        self.variables = variables
        self.reset = reset
        self.format = agent.action_format
        self.memory: Memory | None = None
        self.notes = agent._notes
        self._last = False  # whether the step being asked is the run's last

    def events(self) -> Iterator[Event]:
        agent, rec = self.agent, self.rec
        executor_name = type(agent._executor).__name__ if agent._executor else "SubprocessExecutor"
        yield rec.start(max_steps=agent.max_steps, tools=list(agent.tools), executor=executor_name,
                        mode=self.format.mode, agent=type(agent).__name__, action_format=self.format)
        self.format.use_constraint(agent.constraint_kind())
        yield from self.notes.new(rec)
        try:
            self.memory = self._prepare()
            rec.isolated_by(agent.executor)
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
        return Memory(agent.system_prompt(), task_text, examples=examples)

    def step(self, number: int, last: bool) -> Iterator[Event]:
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

    def ask(self, step: Step, last: bool) -> Generator[Event, None, ModelReply | None]:
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
                duration_s=round(step.model_time, 6),
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

    def execute(self, step: Step, code: str) -> Generator[Event, None, ExecutionResult | None]:
        t = time.perf_counter()
        executor = self.agent.executor
        try:
            with self.rec.trace.execution(step.span, executor, code) as span, \
                    collecting_attachments() as attached:  # images the tools handed over (MCP image blocks)
                result = executor.execute(code)
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

    def _send(self, messages: list[dict[str, str]]) -> ModelReply:
        constraint = self.format.constraint(last=self._last)
        if constraint is None:
            return self.agent.model.complete(messages, stop=self.agent.stop_sequences)
        return self.agent.model.complete(  # type: ignore[call-arg]
            messages, stop=self.agent.stop_sequences, constraint=constraint)

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


def sees_images(model: Any) -> bool:
    """Whether the model takes images: its `vision` attribute is True (OpenAIModel(vision=...))."""
    return getattr(model, "vision", False) is True


def _has_text(reply: ModelReply) -> bool:
    return bool(reply.text.strip())
