"""ToolCallingAgent: the same tools and Model, acting through native (OpenAI `tools`) function calls.

Each turn the model gets the tools as JSON schemas (`final_answer` is one of them) and answers with
`tool_calls`. The calls of one reply run concurrently, on host threads, and their results go back
in the order the model made the calls, one `tool` message each. A model (or endpoint) without
function calling may write the calls in its text instead: JSON objects `{"name", "arguments"}` or
one literal Python call a line; those are accepted too, and anything else comes back as a lesson.
Events and RunResult are CodeAgent's, so runs of both agents compare and replay alike:
`CodeAction.code` shows the calls as Python.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from .agent import PROMPTS_DIR, ActionRefused, RunBook, RunResult, StepRecord
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
from .memory import estimate_tokens, truncate_middle
from .models import Model, ModelError, ModelReply, Usage
from .tools import Tool, tools_by_name

__all__ = ["ToolCallingAgent", "tool_schema", "FINAL_ANSWER_SCHEMA"]

FINAL_ANSWER = "final_answer"
FINAL_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FINAL_ANSWER,
        "description": "Give the final answer to the task and end it. Call it once, when you are done.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"description": "The answer to the task."}},
            "required": ["answer"],
        },
    },
}
NO_CALL_LESSON = (
    "Your reply called no tool. Call one of the tools through function calling (or write "
    '{"name": "tool_name", "arguments": {...}} as JSON). When you know the answer, call the '
    "final_answer tool with it: final_answer(answer=...)."
)
LAST_TURN_NOTE = "This is your last turn: call the final_answer tool now with your best answer."
EMPTY_NOTE = "Your previous reply was empty. Call a tool, or call final_answer with the answer."


def tool_schema(t: Tool) -> dict[str, Any]:
    """The OpenAI function schema of a Tool: parameters from its type hints, description from its doc."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p in t.signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        schema: dict[str, Any] = {}
        if p.annotation is not p.empty and not isinstance(p.annotation, str):
            try:
                schema = TypeAdapter(p.annotation).json_schema()
            except Exception:  # an annotation pydantic cannot describe: leave it open
                schema = {}
        schema.pop("title", None)
        properties[p.name] = schema
        if p.default is p.empty:
            required.append(p.name)
    return {
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description or t.name,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


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
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.model = model
        self.tools: dict[str, Tool] = tools_by_name(tools)
        self.max_steps = max_steps
        self.max_parallel = max(1, max_parallel)
        self.max_context_tokens = max_context_tokens
        self.max_observation_chars = max_observation_chars
        self.instructions = instructions
        self.empty_reply_retries = empty_reply_retries
        self.native = _accepts_tools(model) if native is None else native
        self.adaptations: list[str] = []
        self._schemas: list[dict[str, Any]] | None = None
        self._template = system_prompt_template or (PROMPTS_DIR / "tool_calling.md").read_text(encoding="utf-8")

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
        return _ToolRun(self, task).events()


class _ToolRun(RunBook):
    def __init__(self, agent: ToolCallingAgent, task: str) -> None:
        super().__init__(agent, task)
        self.history: list[list[dict[str, Any]]] = []  # the messages of each step

    def events(self) -> Iterator[Event]:
        self.t0 = time.perf_counter()
        agent = self.agent
        yield self._event(
            RunStart, task=self.task, model=str(getattr(agent.model, "model_id", type(agent.model).__name__)),
            scripted=bool(getattr(agent.model, "scripted", False)), max_steps=agent.max_steps,
            tools=list(agent.tools), executor="host threads (tool calling)",
        )
        for number in range(1, agent.max_steps + 1):
            yield from self._step(number, last=number == agent.max_steps)
            if self.status != "max_steps":
                break
        else:
            self.error = f"no final answer after {agent.max_steps} steps"
        yield self._end()

    # -- messages ----------------------------------------------------------------------------

    def messages(self, note: str | None) -> list[dict[str, Any]]:
        agent = self.agent
        head = [{"role": "system", "content": agent.system_prompt()}, {"role": "user", "content": f"Task:\n{self.task}"}]
        kept = self.history
        if agent.max_context_tokens is not None:
            budget = agent.max_context_tokens - sum(estimate_tokens(m["content"]) for m in head) - 60
            used, start = 0, len(kept)
            for i in range(len(kept) - 1, -1, -1):
                cost = sum(estimate_tokens(json.dumps(m, default=str)) for m in kept[i])
                if used + cost > budget and start < len(kept):
                    break
                used += cost
                start = i
            if start:
                head[1]["content"] += f"\n\n[Turns 1-{start} were dropped to fit the context window.]"
            kept = kept[start:]
        out = head + [m for group in kept for m in group]
        if note:
            if out[-1]["role"] == "user":
                out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{note}"}
            else:
                out.append({"role": "user", "content": note})
        return out

    # -- one step ----------------------------------------------------------------------------

    def _complete(self, note: str | None) -> ModelReply:
        agent = self.agent
        messages = self.messages(note)
        if agent.native:
            try:
                return agent.model.complete(messages, stop=None, tools=agent.tool_schemas())  # type: ignore[call-arg]
            except ModelError as exc:
                if "tool" not in str(exc).lower() or "HTTP 400" not in str(exc):
                    raise
                agent.native = False
                agent.adaptations.append("the endpoint rejected `tools`: calls are written in text instead")
        return agent.model.complete(messages, stop=None)

    def _step(self, number: int, last: bool) -> Iterator[Event]:
        agent = self.agent
        started = time.perf_counter()
        record = StepRecord(step=number)
        self.steps.append(record)
        note = LAST_TURN_NOTE if last else None
        usage = Usage()
        model_time = 0.0
        reply: ModelReply | None = None
        for attempt in range(agent.empty_reply_retries + 1):
            t = time.perf_counter()
            try:
                reply = self._complete("\n\n".join(n for n in (note, EMPTY_NOTE if attempt else None) if n) or None)
            except Exception as exc:  # any model failure ends the run cleanly
                model_time += time.perf_counter() - t
                self.status, self.error = "failed", f"model error: {exc}"
                record.error, record.error_kind = self.error, "model"
                self._finish_record(record, started, model_time, 0.0, usage)
                yield self._event(ErrorEvent, number, kind="model", message=self.error)
                return
            model_time += time.perf_counter() - t
            usage = usage + reply.usage
            if reply.text.strip() or reply.tool_calls:
                break
            record.empty_replies += 1
        assert reply is not None
        native_calls = [_Call(c.id or f"call_{number}_{i}", c.name, c.arguments) for i, c in enumerate(reply.tool_calls)]
        shown = reply.text or "\n".join(_python_call(c.name, c.arguments) for c in native_calls)
        record.model_output, record.reasoning = shown, reply.reasoning
        if not native_calls and not reply.text.strip():
            self.status = "failed"
            self.error = f"the model returned {record.empty_replies} empty replies in a row at step {number}"
            record.error, record.error_kind = self.error, "empty_reply"
            self._finish_record(record, started, model_time, 0.0, usage)
            yield self._event(ErrorEvent, number, kind="empty_reply", message=self.error)
            return
        yield self._event(
            ModelReplyEvent, number, text=shown, reasoning=reply.reasoning, usage=usage, duration_s=round(model_time, 6)
        )

        calls = native_calls
        if not calls:
            try:
                calls = self._calls_from_text(reply.text, number)
            except ActionRefused as exc:
                record.error, record.error_kind = exc.message, exc.kind
                record.observation = f"Error: {exc.message}"
                self.history.append([
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": "Observation:\n" + record.observation},
                ])
                self._finish_record(record, started, model_time, 0.0, usage)
                yield self._event(ErrorEvent, number, kind=exc.kind, message=exc.message)
                return
        record.code = "\n".join(_python_call(c.name, c.arguments) for c in calls)
        yield self._event(CodeAction, number, code=record.code)

        # run the calls: tools concurrently, final_answer after them
        t = time.perf_counter()
        work = [c for c in calls if c.name != FINAL_ANSWER]
        results = self._run_calls(work)
        exec_time = time.perf_counter() - t
        final = next((c for c in calls if c.name == FINAL_ANSWER), None)
        errors = [text for ok, text in results if not ok]
        lines = [f"{_python_call(c.name, c.arguments)} -> {text}" for c, (_, text) in zip(work, results, strict=True)]

        if native_calls:
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
            by_id = {c.id: text for c, (_, text) in zip(work, results, strict=True)}
            for c in calls:
                group.append({"role": "tool", "tool_call_id": c.id, "content": by_id.get(c.id, "ok")})
        else:
            group = [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": "Observation:\n" + ("\n".join(lines) or "(no tool ran)")},
            ]

        answer_error = None
        if final is not None:
            answer_error = self._final_answer_error(final)
        if final is not None and answer_error is None:
            value = final.arguments.get("answer") if "answer" in final.arguments else next(iter(final.arguments.values()))
            self.status, self.output = "success", value
            self.output_repr = repr(value)
            record.is_final_answer = True
            record.output_repr = self.output_repr
            lines.append(f"Final answer: {truncate_middle(self.output_repr, agent.max_observation_chars // 3)}")
        elif answer_error is not None:
            errors.append(answer_error)
            lines.append(f"{_python_call(final.name, final.arguments)} -> Error: {answer_error}")  # type: ignore[union-attr]
            if native_calls:
                group[-1] = {**group[-1], "content": f"Error: {answer_error}"}
        record.observation = truncate_middle("\n".join(lines), agent.max_observation_chars)
        if errors:
            record.error, record.error_kind = "; ".join(errors), "tool"
        self.history.append(group)
        self._finish_record(record, started, model_time, exec_time, usage)
        yield self._event(Observation, number, observation=record.observation, duration_s=round(exec_time, 6),
                          output_repr=record.output_repr)
        if errors:
            yield self._event(ErrorEvent, number, kind="tool", message=record.error)
        if record.is_final_answer:
            safe = plain_json(self.output)
            yield self._event(FinalAnswerEvent, number, output=None if safe is NOT_JSON else safe,
                              output_repr=self.output_repr)

    def _calls_from_text(self, text: str, number: int) -> list[_Call]:
        """Calls written in the reply's text (JSON objects, or literal Python calls); else ActionRefused."""
        from .parsing import CodeParseError, parse_code
        from .single_call import check_single_call

        try:
            code = parse_code(text)
        except CodeParseError:
            raise ActionRefused("parse", NO_CALL_LESSON) from None
        try:
            parsed = check_single_call(code, self.agent.tools, bundleable=[*self.agent.tools, FINAL_ANSWER])
        except ActionRefused as exc:
            raise ActionRefused("parse", f"{exc.message} {NO_CALL_LESSON}") from None
        calls = []
        for i, p in enumerate(parsed):
            arguments: dict[str, Any] = dict(p.kwargs)
            if p.args:
                names = self._positional_names(p.name)
                if len(p.args) > len(names):
                    raise ActionRefused("parse", f"Too many arguments for {p.name}(). {NO_CALL_LESSON}")
                arguments.update(zip(names, p.args, strict=False))
            calls.append(_Call(f"text_{number}_{i}", p.name, arguments))
        return calls

    def _positional_names(self, name: str) -> list[str]:
        if name == FINAL_ANSWER:
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

    def _run_calls(self, calls: Sequence[_Call]) -> list[tuple[bool, str]]:
        """(ok, text) for each call, in the order given; the calls run concurrently."""
        if not calls:
            return []
        if len(calls) == 1:
            return [self._run_one(calls[0])]
        with ThreadPoolExecutor(max_workers=min(len(calls), self.agent.max_parallel), thread_name_prefix="tool-call") as pool:
            return list(pool.map(self._run_one, calls))

    def _run_one(self, call: _Call) -> tuple[bool, str]:
        agent = self.agent
        budget = agent.max_observation_chars // 2
        tool = agent.tools.get(call.name)
        if tool is None:
            return False, f"Error: there is no tool named {call.name!r}. The tools are: {', '.join([*agent.tools, FINAL_ANSWER])}."
        if not isinstance(call.arguments, Mapping):
            return False, f"Error: the arguments of {call.name} were not a JSON object: {truncate_middle(str(call.arguments), 200)}"
        try:
            value = tool(**call.arguments)
        except Exception as exc:  # ToolError and friends: written for the model already
            return False, truncate_middle(f"Error: {exc}", budget)
        return True, truncate_middle(repr(value), budget)

