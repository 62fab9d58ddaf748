"""CodeAgent: the loop that asks a model for Python, runs it, and feeds back what happened.

One step: model -> parse the code out of the reply -> run it in the executor -> observation
(printed output + last value, truncated head+tail) -> next step, until the code calls
`final_answer(...)` or `max_steps` is reached. Everything the user sees is in `RunResult` (from
`run`) or in the typed events of `stream`; model and executor failures end the run with a status,
not with an exception.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_serializer

from executors.base import ExecutionResult, Executor, ExecutorError, Limits

from .events import (
    NOT_JSON,
    CodeAction,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    ModelReplyEvent,
    Observation,
    RunEnd,
    RunStart,
    plain_json,
)
from .memory import Memory, truncate_middle
from .models import Model, ModelReply, Usage
from .tools import Tool, tools_by_name

__all__ = ["CodeAgent", "RunResult", "StepRecord", "RunStatus", "DEFAULT_CODE_TAGS", "ActionRefused"]

DEFAULT_CODE_TAGS = ("<code>", "</code>")
PROMPTS_DIR = Path(__file__).parent / "prompts"

RunStatus = Literal["success", "max_steps", "failed"]

LAST_STEP_NOTE = (
    "This is your last step. Call final_answer(...) now with your best answer, in one code block."
)
EMPTY_REPLY_NOTE = (
    "Your previous reply was empty. Reply with a thought and one code block, in the format shown."
)
NOTHING_TO_SHOW = (
    "The code ran; it printed nothing and its last line has no value. "
    "Use print() to see values, or call final_answer(...) when you are done."
)


class ActionRefused(Exception):
    """Raised by `CodeAgent._prepare_action` to refuse an action before it runs.

    `kind` becomes the step's error_kind and the ErrorEvent's kind; `message` is written for the
    model and becomes the observation.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Rendered:
    """Shows a value by the text the sandbox rendered for it."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text if self.text is not None else "<unrepresentable>"


class StepRecord(BaseModel):
    """One step of a run.

    `error_kind`: parse | execution | repeated_action | empty_reply | model | executor, and
    invalid_action (single-call mode: the reply is not one allowed call) | tool (tool-calling mode).
    """

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


class RunResult(BaseModel):
    """What a run produced. Saved as JSON with `save(path)`, re-loaded with `RunResult.load(path)`.

    `output` is the final answer as the executor returned it. In JSON it is kept when it is made of
    plain JSON types; otherwise it is saved as null and `output_repr` (rendered in the sandbox) says
    what it was.
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

    def to_json(self, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunResult:
        return cls.model_validate_json(text)

    def save(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunResult:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


_TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def normalize_code(code: str) -> str:
    """The code without comments, blank lines and optional spaces, to spot a repeated action.

    Text-only on purpose: it runs every step, and `ast.dump` costs about a millisecond for a
    15-line action. Indentation is kept (it is meaning); a space survives only between two word
    characters. Spacing inside string literals is normalized too, which can only merge two actions
    that differ by such spacing alone.
    """
    lines = []
    for line in code.splitlines():
        body = line.strip()
        if not body or body[0] == "#":
            continue
        if "#" in body:
            body = _TRAILING_COMMENT.sub("", body)
        parts = body.split()
        out = parts[0]
        for part in parts[1:]:
            if _wordy(out[-1]) and _wordy(part[0]):
                out += " "
            out += part
        lines.append(f"{len(line) - len(line.lstrip())}:{out}")
    return "\n".join(lines)


def _parsing() -> Any:
    from . import parsing  # imported on first use: keeps `import codeagent.agent` light

    return parsing


class CodeAgent:
    """An agent that acts by writing Python.

    model: any `Model` (`OpenAIModel`, `ScriptedModel`, or your own `complete(messages, stop)`).
    tools: `Tool` objects, typed functions, or {name: callable}; handed to the executor.
    executor: any `executors.Executor`; default a `LocalExecutor` (restricted, in process), which
        the agent owns and closes. `authorized_imports` / `limits` configure that default.
    max_steps: steps before the run ends with status "max_steps".
    max_context_tokens: budget for the messages sent to the model (estimated at ~4 chars/token);
        the oldest steps are dropped first, the system prompt and the task always stay.
    max_observation_chars: observations are cut head+tail to this many characters.
    """

    # Other action modes (codeagent.single_call) override these two hooks.
    refuse_repeated_code = True

    def _prepare_action(self, code: str, run: Any) -> str:
        """Vet or rewrite parsed code before it runs; raise ActionRefused to refuse it."""
        return code

    def _parse_lesson(self, exc: Exception) -> str:
        """What the model is told when no code could be parsed from its reply."""
        return getattr(exc, "message", None) or str(exc)

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
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if executor is not None and (authorized_imports is not None or limits is not None):
            raise ValueError(
                "authorized_imports and limits configure the default executor; when you pass "
                "executor=..., give them to that executor's constructor instead"
            )
        if max_observation_chars < 200:
            raise ValueError(f"max_observation_chars must be >= 200, got {max_observation_chars}")
        self.model = model
        self.tools: dict[str, Tool] = tools_by_name(tools)
        self.max_steps = max_steps
        self.max_context_tokens = max_context_tokens
        self.max_observation_chars = max_observation_chars
        self.code_tags = code_tags
        self.instructions = instructions
        self.empty_reply_retries = empty_reply_retries
        self.stop_sequences = [code_tags[1], "\nObservation:"]
        self._template = system_prompt_template or (PROMPTS_DIR / "system.md").read_text(encoding="utf-8")
        self._authorized_imports = list(authorized_imports) if authorized_imports is not None else None
        self._limits = limits
        self._executor = executor
        self._owns_executor = executor is None
        self._tools_given_to: Executor | None = None  # executors keep tools across reset()

    # -- executor ----------------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            from executors.local import LocalExecutor

            self._executor = LocalExecutor(
                tools=dict(self.tools), authorized_imports=self._authorized_imports, limits=self._limits
            )
            self._tools_given_to = self._executor
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

    def system_prompt(self) -> str:
        imports = tuple(getattr(self.executor, "authorized_imports", ()) or ())
        if "*" in imports:
            imports_text = "any installed module"
        else:
            imports_text = ", ".join(imports) if imports else "none"
        tools_text = "\n\n".join(t.render() for t in self.tools.values()) or "# (no tools besides final_answer)"
        instructions = f"\n{self.instructions.strip()}\n" if self.instructions else ""
        return (
            self._template.replace("{{open}}", self.code_tags[0])
            .replace("{{close}}", self.code_tags[1])
            .replace("{{tools}}", tools_text)
            .replace("{{authorized_imports}}", imports_text)
            .replace("{{instructions}}", instructions)
        )

    # -- running -----------------------------------------------------------------------------

    def run(self, task: str, *, variables: Mapping[str, Any] | None = None, reset: bool = True) -> RunResult:
        """Run the task to its end and return what happened (never raises for model/code failures)."""
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
        return _Run(self, task, variables, reset).events()


class RunBook:
    """What every agent's run keeps (id, clock, steps, usage, outcome) and how it reports them;
    shared by CodeAgent's and ToolCallingAgent's runs so their events and RunResult agree."""

    def __init__(self, agent: Any, task: str) -> None:
        self.agent = agent
        self.task = task
        self.run_id = uuid.uuid4().hex[:12]
        self.t0 = time.perf_counter()
        self.steps: list[StepRecord] = []
        self.usage = Usage()
        self.status: RunStatus = "max_steps"
        self.output: Any = None
        self.output_repr: str | None = None
        self.error: str | None = None

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def _event(self, cls: type[Event], step: int | None = None, **fields: Any) -> Any:
        return cls(run_id=self.run_id, step=step, elapsed_s=round(self.elapsed(), 6), **fields)

    def _finish_record(
        self, record: StepRecord, started: float, model_time: float, exec_time: float, usage: Usage
    ) -> None:
        record.usage = usage
        record.model_duration_s = model_time
        record.execution_duration_s = exec_time
        record.duration_s = time.perf_counter() - started
        self.usage = self.usage + usage

    def _end(self) -> RunEnd:
        duration = self.elapsed()
        model = self.agent.model
        result = RunResult(
            run_id=self.run_id, task=self.task, status=self.status, output=self.output,
            output_repr=self.output_repr, error=self.error, steps=self.steps, usage=self.usage,
            duration_s=duration, model=str(getattr(model, "model_id", type(model).__name__)),
            scripted=bool(getattr(model, "scripted", False)),
        )
        safe = plain_json(self.output)
        return self._event(
            RunEnd, status=self.status, output=None if safe is NOT_JSON else safe, output_repr=self.output_repr,
            error=self.error, steps=len(self.steps), usage=self.usage, duration_s=round(duration, 6), result=result,
        )


class _Run(RunBook):
    """State of one CodeAgent run; `events()` drives it."""

    def __init__(self, agent: CodeAgent, task: str, variables: Mapping[str, Any] | None, reset: bool) -> None:
        super().__init__(agent, task)
        self.variables = variables
        self.reset = reset
        self.seen_code: dict[str, int] = {}

    def events(self) -> Iterator[Event]:
        self.t0 = time.perf_counter()  # the run starts when iteration does
        agent = self.agent
        model = agent.model
        yield self._event(
            RunStart, task=self.task, model=str(getattr(model, "model_id", type(model).__name__)),
            scripted=bool(getattr(model, "scripted", False)), max_steps=agent.max_steps,
            tools=list(agent.tools), executor=type(agent._executor).__name__ if agent._executor else "LocalExecutor",
        )
        try:
            memory = self._prepare()
        except ExecutorError as exc:
            self.status, self.error = "failed", f"executor failed to start: {exc}"
            yield self._event(ErrorEvent, kind="executor", message=self.error)
            yield self._end()
            return
        for number in range(1, agent.max_steps + 1):
            last = number == agent.max_steps
            yield from self._step(number, memory, last)
            if self.status != "max_steps":
                break
        else:
            self.error = f"no final answer after {agent.max_steps} steps"
        yield self._end()

    def _prepare(self) -> Memory:
        agent = self.agent
        executor = agent.executor
        if self.reset:
            executor.reset()
        if agent._tools_given_to is not executor:
            # Once per executor: registering again would, e.g., drop a runtime's compile cache.
            executor.register_tools(dict(agent.tools))
            agent._tools_given_to = executor
        task_text = f"Task:\n{self.task}"
        if self.variables:
            executor.set_variables(dict(self.variables))
            names = ", ".join(f"{k} ({type(v).__name__})" for k, v in self.variables.items())
            task_text += f"\n\nThese Python variables are already defined for you: {names}."
        return Memory(agent.system_prompt(), task_text)

    def _step(self, number: int, memory: Memory, last: bool) -> Iterator[Event]:
        agent = self.agent
        started = time.perf_counter()
        record = StepRecord(step=number)
        self.steps.append(record)

        # 1. ask the model; retry empty replies
        note = LAST_STEP_NOTE if last else None
        reply: ModelReply | None = None
        usage = Usage()
        model_time = 0.0
        for attempt in range(agent.empty_reply_retries + 1):
            messages = memory.messages(
                agent.max_context_tokens, note=_join_notes(note, EMPTY_REPLY_NOTE if attempt else None)
            )
            t = time.perf_counter()
            try:
                reply = agent.model.complete(messages, stop=agent.stop_sequences)
            except Exception as exc:  # any model failure ends the run cleanly
                model_time += time.perf_counter() - t
                self.status, self.error = "failed", f"model error: {exc}"
                record.error, record.error_kind = self.error, "model"
                self._finish_record(record, started, model_time, 0.0, usage)
                yield self._event(ErrorEvent, number, kind="model", message=self.error)
                return
            model_time += time.perf_counter() - t
            usage = usage + reply.usage
            if reply.text.strip():
                break
            record.empty_replies += 1
        assert reply is not None
        record.model_output, record.reasoning = reply.text, reply.reasoning
        if not reply.text.strip():
            self.status = "failed"
            self.error = f"the model returned {record.empty_replies} empty replies in a row at step {number}"
            record.error, record.error_kind = self.error, "empty_reply"
            self._finish_record(record, started, model_time, 0.0, usage)
            yield self._event(ErrorEvent, number, kind="empty_reply", message=self.error)
            return
        yield self._event(
            ModelReplyEvent, number, text=reply.text, reasoning=reply.reasoning, usage=usage,
            duration_s=round(model_time, 6),
        )

        # The stop sequence ate the closing tag: put it back in the history, so the model keeps
        # seeing its past replies in the exact format it is asked for.
        history_text = reply.text
        open_tag, close_tag = agent.code_tags
        if history_text.rfind(open_tag) > history_text.rfind(close_tag):
            history_text = history_text.rstrip() + "\n" + close_tag

        # 2. parse the code out of the reply
        parsing = _parsing()
        try:
            code = parsing.parse_code(reply.text, tags=agent.code_tags)
        except parsing.CodeParseError as exc:
            message = agent._parse_lesson(exc)
            observation = f"Error: {message}"
            record.error, record.error_kind, record.observation = message, "parse", observation
            memory.add_step(history_text, "Observation:\n" + observation)
            self._finish_record(record, started, model_time, 0.0, usage)
            yield self._event(ErrorEvent, number, kind="parse", message=message)
            return
        code = parsing.fix_final_answer(code)
        record.code = code

        # 2b. mode-specific checks (single-call mode accepts only one literal tool call)
        try:
            code = record.code = agent._prepare_action(code, self)
        except ActionRefused as exc:
            record.error, record.error_kind = exc.message, exc.kind
            record.observation = f"Error: {exc.message}"
            memory.add_step(history_text, "Observation:\n" + record.observation)
            self._finish_record(record, started, model_time, 0.0, usage)
            yield self._event(CodeAction, number, code=code)
            yield self._event(ErrorEvent, number, kind=exc.kind, message=exc.message)
            return

        # 3. refuse to re-run an action that already ran
        key = normalize_code(code)
        previous = self.seen_code.get(key) if agent.refuse_repeated_code else None
        if previous is not None:
            message = (
                f"This is the same code as in step {previous}, so it was not run again; its result is "
                "above. Do something different: change the approach, print what you still need, or "
                "call final_answer(...) if you have the answer."
            )
            observation = f"Error: {message}"
            record.error, record.error_kind, record.observation = message, "repeated_action", observation
            memory.add_step(history_text, "Observation:\n" + observation)
            self._finish_record(record, started, model_time, 0.0, usage)
            yield self._event(CodeAction, number, code=code)
            yield self._event(ErrorEvent, number, kind="repeated_action", message=message)
            return
        self.seen_code[key] = number
        yield self._event(CodeAction, number, code=code)

        # 4. run it
        t = time.perf_counter()
        try:
            result = agent.executor.execute(code)
        except ExecutorError as exc:
            exec_time = time.perf_counter() - t
            self.status, self.error = "failed", f"executor failed: {exc}"
            record.error, record.error_kind = self.error, "executor"
            self._finish_record(record, started, model_time, exec_time, usage)
            yield self._event(ErrorEvent, number, kind="executor", message=self.error)
            return
        exec_time = time.perf_counter() - t
        record.logs, record.output_repr = result.logs, result.output_repr

        if result.is_final_answer:
            self.status, self.output, self.output_repr = "success", result.output, result.output_repr
            record.is_final_answer = True
            record.observation = _observation(result, agent.max_observation_chars, final=True)
            self._finish_record(record, started, model_time, exec_time, usage)
            yield self._event(
                Observation, number, observation=record.observation, logs=result.logs,
                output_repr=result.output_repr, duration_s=round(exec_time, 6),
            )
            safe = plain_json(result.output)
            yield self._event(
                FinalAnswerEvent, number, output=None if safe is NOT_JSON else safe, output_repr=result.output_repr
            )
            return

        observation = _observation(result, agent.max_observation_chars)
        record.observation = observation
        if result.error is not None:
            record.error, record.error_kind = str(result.error), "execution"
        memory.add_step(history_text, "Observation:\n" + observation)
        self._finish_record(record, started, model_time, exec_time, usage)
        yield self._event(
            Observation, number, observation=observation, logs=result.logs, output_repr=result.output_repr,
            duration_s=round(exec_time, 6),
        )
        if result.error is not None:
            yield self._event(ErrorEvent, number, kind="execution", message=str(result.error))


def _join_notes(*notes: str | None) -> str | None:
    kept = [n for n in notes if n]
    return "\n\n".join(kept) if kept else None


def _observation(result: ExecutionResult, budget: int, *, final: bool = False) -> str:
    """What the model sees after its code ran: printed output, error or last value, within `budget`."""
    parts: list[str] = []
    if result.state_lost:
        parts.append("Note: the Python process was restarted; variables from earlier steps are gone.")
    tail: list[str] = []
    if result.error is not None:
        if result.error.type in ("SyntaxError", "PolicyError"):
            hint = "None of this code ran. Fix it and try again."
        else:
            hint = "Fix the code and try again. Variables assigned before the error still exist."
        tail.append(truncate_middle(f"Error: {result.error}", 2_000) + "\n" + hint)
    elif result.output_repr is not None:
        label = "Final answer: " if final else "Last value: "
        tail.append(label + truncate_middle(result.output_repr, budget // 3))
    if result.logs:
        room = max(budget - sum(len(p) for p in parts + tail) - 40, 200)
        parts.append("Printed output:\n" + truncate_middle(result.logs.rstrip("\n"), room))
    parts.extend(tail)
    if not parts:
        return NOTHING_TO_SHOW
    return truncate_middle("\n".join(parts), budget)

