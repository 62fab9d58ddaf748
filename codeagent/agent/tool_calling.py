"""ToolCallingAgent: the same tools and Model, acting through native (OpenAI `tools`) function calls.

Each turn the model gets the tools as JSON schemas (`final_answer` is one of them) and answers with
`tool_calls`. The calls of one reply run concurrently, on host threads, and their results go back
in the order the model made the calls, one `tool` message each. A model (or endpoint) without
function calling may write the calls in its text instead, in any dialect of the parser's table
(`codeagent.parsing.dialects`: `<tool_call>`, `[TOOL_CALLS]`, `{"name", "arguments"}`, ReAct, ...)
or as literal Python calls; those are accepted too, and anything else comes back as a lesson.
Events and RunResult are CodeAgent's, so runs of both agents compare and replay alike:
`CodeAction.code` shows the calls as Python. A tool that returns a figure (an `executors.Attachment`,
or a list of them) is observed as in CodeAgent: an image for a model that can see, else one line.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import time
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from executors.base import FINAL_ANSWER_NAME, Attachment

from ..events import CodeAction, Event, ModelReplyEvent, RunEnd
from ..models.constrain.request import Constraint
from ..models.openai_model import Model, ModelError, check_model
from ..models.replies import ModelReply
from ..runs.record import ActionRefused, ErrorKind, Recorder, RunResult, Step, interruptible
from ..tools.attachments import (
    IMAGE_TOKENS,
    AttachmentRecord,
    content_text,
    describe_line,
    image_part,
    is_sendable_image,
)
from ..tools.schemas import FINAL_ANSWER_SCHEMA, tool_schema
from ..tools.tool import Tool, collecting_attachments, tools_by_name
from ..tracing.tools import tool_call_id
from .code_agent import AdaptationNotes
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


def _python_call(name: str, arguments: Any) -> str:
    if isinstance(arguments, Mapping):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return f"{name}(<arguments not JSON: {truncate_middle(str(arguments), 200)!r}>)"


@dataclass
class _Call:
    id: str
    name: str
    arguments: Any  # dict, or the raw text when it was not a JSON object


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
        for event in self.stream(task):
            end = event
        assert isinstance(end, RunEnd) and isinstance(end.result, RunResult)
        return end.result

    def stream(self, task: str) -> Iterator[Event]:
        run = _ToolRun(self, task)
        return run.rec.traced(interruptible(run.events(), run.rec))


class _ToolRun:
    """One ToolCallingAgent run: its record, its history, and the moves of a step
    (ask → extract the calls → execute them → observe), as in CodeAgent's loop."""

    def __init__(self, agent: ToolCallingAgent, task: str) -> None:
        self.agent = agent
        self.rec = Recorder(agent.model, task, agent.output_dir)
        self.notes = agent._notes
        self.history: list[list[dict[str, Any]]] = []  # the messages of each step
        self.costs: list[int] = []  # the estimated tokens of each step's messages (text only)
        self.images: list[int] = []  # the image parts in each step's last message

    def events(self) -> Iterator[Event]:
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

    def step(self, number: int, last: bool) -> Iterator[Event]:
        step = self.rec.begin_step(number)
        reply = yield from self.ask(step, last)
        if reply is None:
            return
        native = [_Call(c.id or f"call_{number}_{i}", c.name, c.arguments) for i, c in enumerate(reply.tool_calls)]
        calls = yield from self.extract(step, reply, native)
        if calls is None:
            return
        work = [c for c in calls if c.name != FINAL_ANSWER_NAME]
        t = time.perf_counter()
        with self.rec.trace.current(step.span):  # the tools' spans nest under the step
            results = self._run_calls(work)  # tools concurrently; final_answer after them
        step.exec_time = time.perf_counter() - t
        done, shown = self._attach(step, list(zip(work, results, strict=True)))
        yield from self.observe(step, reply, native, calls, done, shown)

    # -- the moves ---------------------------------------------------------------------------

    def ask(self, step: Step, last: bool) -> Generator[Event, None, ModelReply | None]:
        agent = self.agent
        reply = yield from self.rec.ask(
            step, self.messages, self._send, note=LAST_TURN_NOTE if last else None, empty_note=EMPTY_NOTE,
            retries=agent.empty_reply_retries, has_content=_has_content,
        )
        yield from self.notes.new(self.rec, step.number)
        if reply is not None:
            shown = reply.text or "\n".join(_python_call(c.name, c.arguments) for c in reply.tool_calls)
            step.record.model_output = shown
            yield self.rec.event(
                ModelReplyEvent, step.number, text=shown, reasoning=reply.reasoning, usage=step.usage,
                duration_s=round(step.model_time, 6),
            )
        return reply

    def extract(
        self, step: Step, reply: ModelReply, native: list[_Call]
    ) -> Generator[Event, None, list[_Call] | None]:
        """The calls to make: the native ones, else those written in the text; None once the model
        has been told there were none."""
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
                yield self.rec.fail_step(step, exc.kind, exc.message, observation=observation)
                return None
        step.record.code = "\n".join(_python_call(c.name, c.arguments) for c in calls)
        yield self.rec.event(CodeAction, step.number, code=step.record.code)
        return calls

    def observe(
        self, step: Step, reply: ModelReply, native: list[_Call], calls: list[_Call],
        done: list[tuple[_Call, tuple[bool, str]]], shown: list[AttachmentRecord],
    ) -> Iterator[Event]:
        """Each call's result (and the final answer) as the observation; the history's next group."""
        errors = [text for _, (ok, text) in done if not ok]
        lines = [f"{_python_call(c.name, c.arguments)} -> {text}" for c, (_, text) in done]
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
                lines.append(f"{_python_call(final.name, final.arguments)} -> Error: {answer_error}")
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

    def _attach(
        self, step: Step, done: list[tuple[_Call, tuple[bool, Any]]]
    ) -> tuple[list[tuple[_Call, tuple[bool, str]]], list[AttachmentRecord]]:
        """Record the figures the tools returned; each such result reads as its figures' lines.
        Returns the (call, (ok, text)) pairs and the figures to show the model as images."""
        out: list[tuple[_Call, tuple[bool, str]]] = []
        shown: list[AttachmentRecord] = []
        sees = getattr(self.agent.model, "vision", False) is True
        for call, (ok, result) in done:
            if isinstance(result, tuple):
                records = self.rec.attach(step, tuple(a for a in result if isinstance(a, Attachment)))
                visible = [r for r in records if sees and is_sendable_image(r.media_type)]
                shown.extend(visible)
                result = "\n".join([*(t for t in result if isinstance(t, str)),
                                    *(describe_line(r, shown=r in visible) for r in records)])
            out.append((call, (ok, result)))
        return out, shown

    @staticmethod
    def _native_group(reply: ModelReply, calls: list[_Call], done: list[tuple[_Call, tuple[bool, str]]]) -> list[dict[str, Any]]:
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

    def _send(self, messages: list[dict[str, Any]]) -> ModelReply:
        agent = self.agent
        if agent.native:
            options: dict[str, Any] = {}
            if getattr(agent.model, "constrain", None) is not None:
                options["constraint"] = TOOL_CALL_REQUIRED
            try:
                return agent.model.complete(  # type: ignore[call-arg]
                    messages, stop=None, tools=agent.tool_schemas(), **options)
            except ModelError as exc:
                if exc.status != 400 or "tool" not in str(exc).lower():
                    raise
                agent.native = False
                agent.adaptations.append("the endpoint rejected `tools`: calls are written in text instead")
        return agent.model.complete(messages, stop=None)

    def _answer(self, step: Step, final: _Call) -> None:
        arguments = final.arguments
        value = arguments.get("answer") if "answer" in arguments else next(iter(arguments.values()))
        self.rec.answer(step, value, repr(value))
        step.record.output_repr = self.rec.output_repr

    def _calls_from_text(self, text: str, number: int) -> list[_Call]:
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
            calls.append(_Call(f"text_{number}_{i}", p.name, arguments))
        return calls

    def _positional_names(self, name: str) -> list[str]:
        if name == FINAL_ANSWER_NAME:
            return ["answer"]
        params = self.agent.tools[name].signature.parameters.values()
        return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @staticmethod
    def _final_answer_error(call: _Call) -> str | None:
        if not isinstance(call.arguments, Mapping):
            return "final_answer's arguments were not a JSON object. Call final_answer with {\"answer\": ...}."
        if not call.arguments:
            return "final_answer needs the answer: call final_answer with {\"answer\": ...}."
        return None

    def _run_calls(self, calls: Sequence[_Call]) -> list[tuple[bool, Any]]:
        """(ok, text) for each call, in the order given (a tuple of Attachments, after the text if
        any, for a call that returned or attach()ed figures); the calls run concurrently."""
        if not calls:
            return []
        if len(calls) == 1:
            return [self._run_one(calls[0])]
        # each call runs in a copy of this context: the step's span stays its parent on any thread
        contexts = [contextvars.copy_context() for _ in calls]
        with ThreadPoolExecutor(max_workers=min(len(calls), self.agent.max_parallel), thread_name_prefix="tool-call") as pool:
            return list(pool.map(lambda call, context: context.run(self._run_one, call), calls, contexts))

    def _run_one(self, call: _Call) -> tuple[bool, Any]:
        agent = self.agent
        budget = agent.max_observation_chars // 2
        tool = agent.tools.get(call.name)
        if tool is None:
            return False, f"Error: there is no tool named {call.name!r}. The tools are: {', '.join([*agent.tools, FINAL_ANSWER_NAME])}."
        if not isinstance(call.arguments, Mapping):
            return False, f"Error: the arguments of {call.name} were not a JSON object: {truncate_middle(str(call.arguments), 200)}"
        try:
            with tool_call_id(call.id), collecting_attachments() as attached:  # (MCP image blocks)
                value = tool(**call.arguments)
        except Exception as exc:  # ToolError and friends: written for the model already
            return False, truncate_middle(f"Error: {exc}", budget)
        figures = _attachments_in(value)
        if figures:
            return True, (*figures, *attached)
        if attached:  # the value reads as text, the images follow it
            return True, (truncate_middle(repr(value), budget), *attached)
        return True, truncate_middle(repr(value), budget)



def _attachments_in(value: Any) -> tuple[Attachment, ...]:
    """The figures a tool returned: an Attachment, or a non-empty list or tuple of them; else ()."""
    if isinstance(value, Attachment):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Attachment) for v in value):
        return tuple(value)
    return ()


def _fewer_images(message: dict[str, Any], keep: int) -> dict[str, Any]:
    """`message` with only its last `keep` images (the dropped ones are still described in text)."""
    parts = message["content"]
    images = [p for p in parts if p.get("type") == "image_url"]
    text = f"{content_text(parts)}\n{IMAGES_DROPPED}"
    return {**message, "content": with_images(text, images[len(images) - keep:] if keep else [])}


def _has_content(reply: ModelReply) -> bool:
    return bool(reply.text.strip() or reply.tool_calls)
