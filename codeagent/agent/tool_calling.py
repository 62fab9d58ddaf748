"""ToolCallingAgent: the same tools and Model, acting through native (OpenAI `tools`) function calls.

Each turn the model gets the tools as JSON schemas (`final_answer` is one of them) and answers with
`tool_calls`. The calls of one reply run concurrently (on host threads; under `arun`/`astream`
as tasks on the run's loop, async tools awaited there), and their results go back
in the order the model made the calls, one `tool` message each. A model (or endpoint) without
function calling may write the calls in its text instead, in any dialect of the parser's table
(`codeagent.parsing.dialects`: `<tool_call>`, `[TOOL_CALLS]`, `{"name", "arguments"}`, ReAct, ...)
or as literal Python calls; those are accepted too, and anything else comes back as a lesson.
Events and RunResult are CodeAgent's, so runs of both agents compare and replay alike:
`CodeAction.code` shows the calls as Python. A tool that returns a figure (an `executors.Attachment`,
or a list of them) is observed as in CodeAgent: an image for a model that can see, else one line.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping
from typing import Any

from executors.base import FINAL_ANSWER_NAME

from .. import aio
from ..events import CodeAction, Event, ModelReplyEvent, RunEnd
from ..models.constrain.request import Constraint
from ..models.openai_model import Model, ModelError, check_model
from ..models.replies import ModelReply
from ..runs.drive import ModelCall, request
from ..runs.record import (
    ActionRefused,
    ErrorKind,
    Recorder,
    RunResult,
    Step,
    cancellable,
    interruptible,
)
from ..tools.attachments import (
    IMAGE_TOKENS,
    AttachmentRecord,
    content_text,
    image_part,
)
from ..tools.schemas import FINAL_ANSWER_SCHEMA, tool_schema
from ..tools.tool import Tool, tools_by_name
from .code_run import AdaptationNotes
from .memory import (
    IMAGES_DROPPED,
    append_text,
    estimate_tokens,
    keep_newest_images,
    newest_that_fit,
    truncate_middle,
    with_images,
)
from .prompts import load_prompt
from .tool_calls import Call, CallRunner, python_call

__all__ = ["ToolCallingAgent", "tool_schema", "FINAL_ANSWER_SCHEMA"]

NO_CALL_LESSON = (
    "Your reply called no tool. Call one of the tools through function calling (or write "
    '{"name": "tool_name", "arguments": {...}} as JSON). When you know the answer, call the '
    "final_answer tool with it: final_answer(answer=...)."
)
# Sent when the model constrains its output: a reply must be a tool call (OpenAI's spelling).
TOOL_CALL_REQUIRED = Constraint(tool_choice="required", name="tool_call")
LAST_TURN_NOTE = "This is your last turn: call the final_answer tool now with your best answer."
EMPTY_NOTE = "Your previous reply was empty. Call a tool, or call final_answer with the answer."


def _accepts_tools(model: Any) -> bool:
    try:
        return "tools" in inspect.signature(model.complete).parameters
    except (TypeError, ValueError):
        return False


class ToolCallingAgent:
    """An agent that acts through native tool calls (smolagents' ToolCallingAgent, OpenAI style).

    model: any Model; `complete(messages, stop, tools=...)` is used when it takes `tools`
        (OpenAIModel, ScriptedModel). An endpoint that rejects `tools` is switched to calls written
        in text for the rest of the run (recorded in `.adaptations`).
    tools: the same Tool objects / functions a CodeAgent takes; they run on the host.
    max_parallel: how many calls of one reply run at once.
    output_dir: where figures the tools return are saved as the run goes (as CodeAgent's).
    A model with a `constrain` setting (`OpenAIModel(constrain=...)`) is asked for tool_choice="required":
    every reply must be a tool call (final_answer is one). The model drops it if the endpoint
    rejects it; that, and the switch away from `tools`, come out of `stream` as `Notice` events.
    """

    def __init__(
        self,
        model: Model,
        tools: Iterable[Any] | Mapping[str, Any] = (),
        max_steps: int = 10,
        *,
        max_parallel: int = 8,
        max_context_tokens: int | None = 16_000,
        max_observation_chars: int = 6_000,
        instructions: str | None = None,
        system_prompt_template: str | None = None,
        empty_reply_retries: int = 3,
        native: bool | None = None,
        output_dir: Any = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.model = check_model(model)
        self.tools: dict[str, Tool] = tools_by_name(tools)
        self.max_steps = max_steps
        self.max_parallel = max(1, max_parallel)
        self.max_context_tokens = max_context_tokens
        self.max_observation_chars = max_observation_chars
        self.instructions = instructions
        self.empty_reply_retries = empty_reply_retries
        self.native = _accepts_tools(model) if native is None else native
        self.adaptations: list[str] = []
        self.output_dir = output_dir
        self._schemas: list[dict[str, Any]] | None = None
        self._template = system_prompt_template or load_prompt("tool_calling.md")
        self._notes = AdaptationNotes(self.model, self)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The `tools` sent with every request (built once: pydantic schema generation is not free)."""
        if self._schemas is None:
            self._schemas = [tool_schema(t) for t in self.tools.values()] + [FINAL_ANSWER_SCHEMA]
        return self._schemas

    def system_prompt(self) -> str:
        tools_text = "\n".join(
            f"- {t.signature_text()}: {(t.description or '').splitlines()[0] if t.description else ''}"
            for t in self.tools.values()
        )
        tools_text += "\n- final_answer(answer): give the final answer and end the task."
        instructions = f"\n{self.instructions.strip()}\n" if self.instructions else ""
        return self._template.replace("{{tools}}", tools_text).replace("{{instructions}}", instructions)

    # CodeAgent-compatible lifecycle (there is no executor: tools run on the host)
    def close(self) -> None:
        pass

    def __enter__(self) -> ToolCallingAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, task: str) -> RunResult:
        end = None
        for event in self._events(task, streaming=False):
            end = event
        assert isinstance(end, RunEnd) and isinstance(end.result, RunResult)
        return end.result

    def stream(self, task: str) -> Iterator[Event]:
        """The run's events as they happen, the model's text as TextDelta events."""
        return self._events(task, streaming=True)

    async def arun(self, task: str) -> RunResult:
        """`run` awaited on the running loop (see CodeAgent.arun)."""
        end = None
        async for event in self._aevents(task, streaming=False):
            end = event
        assert isinstance(end, RunEnd) and isinstance(end.result, RunResult)
        return end.result

    def astream(self, task: str) -> AsyncIterator[Event]:
        """`stream` as an async iterator (see CodeAgent.astream)."""
        return self._aevents(task, streaming=True)

    def _events(self, task: str, streaming: bool) -> Iterator[Event]:
        run = _ToolRun(self, task, streaming)
        return run.rec.traced(interruptible(aio.events(run.events()), run.rec))

    def _aevents(self, task: str, streaming: bool) -> AsyncIterator[Event]:
        run = _ToolRun(self, task, streaming)
        return run.rec.atraced(cancellable(aio.aevents(run.events()), run.rec))


class _ToolRun(CallRunner):
    """One ToolCallingAgent run: its record, its history, and the moves of a step
    (ask → extract the calls → execute them → observe), as in CodeAgent's loop."""

    def __init__(self, agent: ToolCallingAgent, task: str, streaming: bool) -> None:
        self.agent = agent
        self.rec = Recorder(agent.model, task, agent.output_dir)
        self.send = request(agent.model, streaming)
        self.notes = agent._notes
        self.history: list[list[dict[str, Any]]] = []  # the messages of each step
        self.costs: list[int] = []  # the estimated tokens of each step's messages (text only)
        self.images: list[int] = []  # the image parts in each step's last message

    def events(self) -> Generator[Any, Any, None]:
        agent, rec = self.agent, self.rec
        yield rec.start(max_steps=agent.max_steps, tools=list(agent.tools), executor="host threads (tool calling)",
                        mode="tool_calling", agent=type(agent).__name__)
        for number in range(1, agent.max_steps + 1):
            yield from self.step(number, last=number == agent.max_steps)
            if not rec.running:
                break
        else:
            rec.give_up(agent.max_steps)
        yield rec.end()

    def step(self, number: int, last: bool) -> Generator[Any, Any, None]:
        step = self.rec.begin_step(number)
        reply = yield from self.ask(step, last)
        if reply is None:
            return
        native = [Call(c.id or f"call_{number}_{i}", c.name, c.arguments) for i, c in enumerate(reply.tool_calls)]
        calls = self.extract(step, reply, native)
        if isinstance(calls, tuple):  # no call: the model is told why
            yield self.rec.fail_step(step, *calls)
            return
        yield self.rec.event(CodeAction, step.number, code=step.record.code)
        work = [c for c in calls if c.name != FINAL_ANSWER_NAME]
        t = time.perf_counter()
        with self.rec.trace.current(step.span):  # the tools' spans nest under the step
            results = yield aio.Call(self._run_calls, self._arun_calls, work)  # final_answer after them
        step.exec_time = time.perf_counter() - t
        done, shown = self._attach(step, list(zip(work, results, strict=True)))
        yield from self.observe(step, reply, native, calls, done, shown)

    # -- the moves ---------------------------------------------------------------------------

    def ask(self, step: Step, last: bool) -> Generator[Any, Any, ModelReply | None]:
        agent = self.agent
        reply = yield from self.rec.ask(
            step, self.messages, self._send, note=LAST_TURN_NOTE if last else None, empty_note=EMPTY_NOTE,
            retries=agent.empty_reply_retries, has_content=_has_content,
        )
        yield from self.notes.new(self.rec, step.number)
        if reply is not None:
            shown = reply.text or "\n".join(python_call(c.name, c.arguments) for c in reply.tool_calls)
            step.record.model_output = shown
            yield self.rec.event(
                ModelReplyEvent, step.number, text=shown, reasoning=reply.reasoning, usage=step.usage,
                duration_s=round(step.model_time, 6), finish_reason=reply.finish_reason,
            )
        return reply

    def extract(self, step: Step, reply: ModelReply, native: list[Call]) -> list[Call] | tuple[ErrorKind, str]:
        """The calls to make: the native ones, else those written in the text (their Python in
        `step.record.code`); or (kind, message) to fail the step with, the model told why."""
        calls = native
        if not calls:
            try:
                calls = self._calls_from_text(reply.text, step.number)
            except ActionRefused as exc:
                observation = f"Error: {exc.message}"
                self._remember([
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": "Observation:\n" + observation},
                ])
                return exc.kind, exc.message
        step.record.code = "\n".join(python_call(c.name, c.arguments) for c in calls)
        return calls

    def observe(
        self, step: Step, reply: ModelReply, native: list[Call], calls: list[Call],
        done: list[tuple[Call, tuple[bool, str]]], shown: list[AttachmentRecord],
    ) -> Iterator[Event]:
        """Each call's result (and the final answer) as the observation; the history's next group."""
        errors = [text for _, (ok, text) in done if not ok]
        lines = [f"{python_call(c.name, c.arguments)} -> {text}" for c, (_, text) in done]
        images = [image_part(a) for a in shown]
        group = self._native_group(reply, calls, done) if native else [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": with_images("Observation:\n" + ("\n".join(lines) or "(no tool ran)"), images)},
        ]
        if native and images:  # a tool message holds text only: the images follow in a user message
            group.append({"role": "user", "content": with_images("The images the tools returned:", images)})
        final = next((c for c in calls if c.name == FINAL_ANSWER_NAME), None)
        if final is not None:
            answer_error = self._final_answer_error(final)
            if answer_error is None:
                self._answer(step, final)
                shown = truncate_middle(self.rec.output_repr or "", self.agent.max_observation_chars // 3)
                lines.append(f"Final answer: {shown}")
            else:
                errors.append(answer_error)
                lines.append(f"{python_call(final.name, final.arguments)} -> Error: {answer_error}")
                if native:
                    group[-1] = {**group[-1], "content": f"Error: {answer_error}"}
        step.record.observation = truncate_middle("\n".join(lines), self.agent.max_observation_chars)
        self._remember(group, len(images))
        error = (ErrorKind.TOOL, "; ".join(errors)) if errors else None
        yield from self.rec.observed(step, error, output_repr=step.record.output_repr)

    # -- messages ----------------------------------------------------------------------------

    def messages(self, note: str | None) -> list[dict[str, Any]]:
        agent = self.agent
        head = [{"role": "system", "content": agent.system_prompt()}, {"role": "user", "content": f"Task:\n{self.rec.task}"}]
        start = 0
        counts = list(self.images)
        if agent.max_context_tokens is not None and self.history:
            budget = agent.max_context_tokens - sum(estimate_tokens(m["content"]) for m in head) - 60
            # images go first, oldest first; then whole turns, oldest first
            counts = keep_newest_images(counts, sum(self.costs) + IMAGE_TOKENS * sum(counts) - budget)
            costs = [c + IMAGE_TOKENS * n for c, n in zip(self.costs, counts, strict=True)]
            start = min(newest_that_fit(costs, budget), len(self.history) - 1)  # the newest always stays
            if start:
                head[1]["content"] += f"\n\n[Turns 1-{start} were dropped to fit the context window.]"
        out = head
        for i in range(start, len(self.history)):
            group = self.history[i]
            if counts[i] < self.images[i]:
                group = [*group[:-1], _fewer_images(group[-1], counts[i])]
            out = out + group
        if note:
            if out[-1]["role"] == "user":
                out[-1] = append_text(out[-1], note)
            else:
                out.append({"role": "user", "content": note})
        return out

    def _remember(self, group: list[dict[str, Any]], images: int = 0) -> None:
        self.history.append(group)
        self.costs.append(sum(estimate_tokens(json.dumps({**m, "content": content_text(m.get("content"))}, default=str))
                              for m in group))
        self.images.append(images)

    @staticmethod
    def _native_group(reply: ModelReply, calls: list[Call], done: list[tuple[Call, tuple[bool, str]]]) -> list[dict[str, Any]]:
        """The assistant message with its tool_calls, then one tool message per call, in order."""
        group: list[dict[str, Any]] = [{
            "role": "assistant", "content": reply.text or None,
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, default=str) if isinstance(c.arguments, Mapping)
                    else str(c.arguments),
                }}
                for c in calls
            ],
        }]
        by_id = {c.id: text for c, (_, text) in done}
        group.extend({"role": "tool", "tool_call_id": c.id, "content": by_id.get(c.id, "ok")} for c in calls)
        return group

    def _send(self, messages: list[dict[str, Any]]) -> Any:
        agent = self.agent
        if not agent.native:
            return self.send(messages, stop=None)
        options: dict[str, Any] = {"stop": None, "tools": agent.tool_schemas()}
        if getattr(agent.model, "constrain", None) is not None:
            options["constraint"] = TOOL_CALL_REQUIRED
        return _NativeCall(self, self.send(messages, **options), messages)

    def _answer(self, step: Step, final: Call) -> None:
        arguments = final.arguments
        value = arguments.get("answer") if "answer" in arguments else next(iter(arguments.values()))
        self.rec.answer(step, value, repr(value))
        step.record.output_repr = self.rec.output_repr

    def _calls_from_text(self, text: str, number: int) -> list[Call]:
        """Calls written in the reply's text (any dialect of the parser's table, or literal Python
        calls); else ActionRefused."""
        from ..parsing import CodeParseError, parse_code
        from .single_call import check_single_call

        try:  # an unknown tool's name is taught below, with the closest tool's call
            code = parse_code(text)
        except CodeParseError:
            raise ActionRefused(ErrorKind.PARSE, NO_CALL_LESSON) from None
        try:
            parsed = check_single_call(code, self.agent.tools, bundleable=[*self.agent.tools, FINAL_ANSWER_NAME])
        except ActionRefused as exc:
            raise ActionRefused(ErrorKind.PARSE, f"{exc.message} {NO_CALL_LESSON}") from None
        calls = []
        for i, p in enumerate(parsed):
            arguments: dict[str, Any] = dict(p.kwargs)
            if p.args:
                names = self._positional_names(p.name)
                if len(p.args) > len(names):
                    raise ActionRefused(ErrorKind.PARSE, f"Too many arguments for {p.name}(). {NO_CALL_LESSON}")
                arguments.update(zip(names, p.args, strict=False))
            calls.append(Call(f"text_{number}_{i}", p.name, arguments))
        return calls

    def _positional_names(self, name: str) -> list[str]:
        if name == FINAL_ANSWER_NAME:
            return ["answer"]
        params = self.agent.tools[name].signature.parameters.values()
        return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @staticmethod
    def _final_answer_error(call: Call) -> str | None:
        if not isinstance(call.arguments, Mapping):
            return "final_answer's arguments were not a JSON object. Call final_answer with {\"answer\": ...}."
        if not call.arguments:
            return "final_answer needs the answer: call final_answer with {\"answer\": ...}."
        return None

class _NativeCall:
    """A request carrying `tools`; an endpoint that rejects them (HTTP 400 about tools) is asked
    again without, and calls are written in text for the rest of the run."""

    def __init__(self, run: _ToolRun, call: ModelCall, messages: list[dict[str, Any]]) -> None:
        self.run, self.call, self.messages = run, call, messages

    def events(self, delta_event: Any, aside: Any) -> Generator[Any, Any, ModelReply]:
        try:
            return (yield from self.call.events(delta_event, aside))
        except ModelError as exc:
            if exc.status != 400 or "tool" not in str(exc).lower():
                raise
        agent = self.run.agent
        agent.native = False
        agent.adaptations.append("the endpoint rejected `tools`: calls are written in text instead")
        return (yield from self.run.send(self.messages, stop=None).events(delta_event, aside))


def _fewer_images(message: dict[str, Any], keep: int) -> dict[str, Any]:
    """`message` with only its last `keep` images (the dropped ones are still described in text)."""
    parts = message["content"]
    images = [p for p in parts if p.get("type") == "image_url"]
    text = f"{content_text(parts)}\n{IMAGES_DROPPED}"
    return {**message, "content": with_images(text, images[len(images) - keep:] if keep else [])}


def _has_content(reply: ModelReply) -> bool:
    return bool(reply.text.strip() or reply.tool_calls)
