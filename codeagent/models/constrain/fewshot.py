"""Short few-shot examples built from the agent's actual tools.

Small models copy the shape of an example far better than they follow a description, so the
example must use a real tool of this run with arguments of the right types. Two turns, kept short:
the model calls a tool, sees its result, then gives the final answer.

    fewshot_messages(tools, style="json")   # [{"role": "user", ...}, {"role": "assistant", ...}, ...]
    fewshot_text(tools, style="call")       # the same as one block of text for a system prompt

Styles: "json" (`{"name": ..., "arguments": {...}}`, the constrained single-call reply), "call"
(one line of Python, the single-call agent's unconstrained reply), "code" (Thought + code block,
the CodeAgent's reply), "code_json" (`{"thought": ..., "code": ...}`, the CodeAgent's reply under a
JSON schema). Argument values are plausible literals for the parameter's type, chosen by
its name where a common name says more than the type (`city` -> "Paris").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...tools.tool import Tool, tools_by_name
from .schemas import ARGUMENTS_KEY, FINAL_ANSWER, NAME_KEY, parameter_schema, python_literal

__all__ = ["STYLES", "Shot", "example_value", "example_arguments", "example_task", "example_shot",
           "fewshot_messages", "fewshot_text"]

STYLES = ("json", "call", "code", "code_json")

# A common parameter name says more than its type; values kept neutral and short.
_STRING_BY_NAME: dict[str, str] = {
    "city": "Lisbon", "country": "Canada", "name": "Ada", "person": "Ada", "query": "solar panels",
    "text": "hello world", "word": "apple", "language": "English", "lang": "en", "url": "https://example.com",
    "path": "notes.txt", "filename": "notes.txt", "file": "notes.txt", "date": "2024-05-01",
    "email": "ada@example.com", "item": "apple", "product": "apple", "color": "blue", "topic": "tides",
    "title": "Notes", "unit": "km", "currency": "EUR", "symbol": "ABC", "animal": "cat", "code": "x = 1",
}
_INTS = (3, 5, 7, 4)
_NUMBERS = (2.5, 1.5, 4.0)


def example_value(schema: Any, name: str = "", index: int = 0, _depth: int = 0) -> Any:
    """A plausible JSON value for `schema` (a parameter named `name`, the `index`-th of its kind)."""
    if not isinstance(schema, Mapping) or _depth > 4:
        return _STRING_BY_NAME.get(name.lower(), "example")
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key) or () if isinstance(b, Mapping) and b.get("type") != "null"]
        if branches:
            return example_value(branches[0], name, index, _depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "integer":
        return _INTS[index % len(_INTS)]
    if kind == "number":
        return _NUMBERS[index % len(_NUMBERS)]
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        item = schema.get("items", {})
        return [example_value(item, name.rstrip("s"), i, _depth + 1) for i in range(2)]
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        return {k: example_value(v, k, i, _depth + 1) for i, (k, v) in enumerate(schema["properties"].items())}
    if kind == "object":
        return {}
    return _STRING_BY_NAME.get(name.lower(), "example")


def example_arguments(tool: Tool) -> dict[str, Any]:
    """Values for the parameters without a default (all of them when none is required)."""
    params = [p for p in tool.signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    wanted = [p for p in params if p.default is p.empty] or params
    counts: dict[str, int] = {}
    out: dict[str, Any] = {}
    for p in wanted:
        schema = parameter_schema(p.annotation)
        kind = str(schema.get("type", "")) if isinstance(schema, Mapping) else ""
        out[p.name] = example_value(_resolve(schema), p.name, counts.get(kind, 0))
        counts[kind] = counts.get(kind, 0) + 1
    return out


def _resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A parameter schema with its top-level `$ref` (a pydantic model) replaced by the definition."""
    ref = schema.get("$ref") if isinstance(schema, Mapping) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return schema.get("$defs", {}).get(ref.rsplit("/", 1)[-1], schema)
    return schema


@dataclass(frozen=True)
class Shot:
    """One worked example: the task, the call, what it returned, and the final answer."""

    task: str
    tool: str
    arguments: dict[str, Any]
    result: Any

    def reply(self, style: str, tags: tuple[str, str] | None = None) -> str:
        return _render(style, self.tool, self.arguments, tags, thought=f"I will call {self.tool}.")

    def final(self, style: str, tags: tuple[str, str] | None = None) -> str:
        return _render(style, FINAL_ANSWER, {"answer": self.result}, tags, thought="I have the answer.")


def example_task(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """A task this call answers, phrased from the tool's doc: "What is the capital city of a
    country for country 'Canada'?" for a noun-phrase doc, "Add two integers (a=3, b=5)." else."""
    doc = (tool.description or "").strip().splitlines()
    summary = doc[0].rstrip(".") if doc else tool.name.replace("_", " ")
    if summary.split(" ", 1)[0].lower() in ("the", "a", "an"):
        given = ", ".join(f"{k} {v!r}" for k, v in arguments.items())
        return f"What is {summary[0].lower()}{summary[1:]}" + (f" for {given}?" if given else "?")
    given = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return f"{summary} ({given})." if given else f"{summary}."


def _example_result(schema: Mapping[str, Any]) -> Any:
    """A result that is plainly an example: tools are never called to build a prompt (side effects),
    so a number must not look like the arithmetic of the example arguments."""
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return {"integer": 17, "number": 17.5}.get(kind) if kind in ("integer", "number") \
        else example_value(schema, "result", 1)


def example_shot(tool: Tool) -> Shot:
    """A worked example for `tool`: a task made of its description and the example arguments."""
    arguments = example_arguments(tool)
    ret = tool.signature.return_annotation
    result = _example_result(parameter_schema(ret)) if ret is not tool.signature.empty else "done"
    return Shot(task=example_task(tool, arguments), tool=tool.name, arguments=arguments, result=result)


def _render(style: str, name: str, arguments: Mapping[str, Any], tags: tuple[str, str] | None,
            thought: str) -> str:
    if style == "json":
        return json.dumps({NAME_KEY: name, ARGUMENTS_KEY: dict(arguments)}, ensure_ascii=False)
    if style not in STYLES:
        raise ValueError(f"unknown few-shot style {style!r}; use one of {', '.join(STYLES)}")
    if name == FINAL_ANSWER:
        call = f"{FINAL_ANSWER}({python_literal(arguments['answer'])})"
    else:
        call = f"{name}({', '.join(f'{k}={python_literal(v)}' for k, v in arguments.items())})"
    if style == "code_json":
        return json.dumps({"thought": thought, "code": call}, ensure_ascii=False)
    open_tag, close_tag = tags or (("<code>", "</code>") if style == "code" else ("", ""))
    if style == "call":
        return f"{open_tag}{call}{close_tag}"
    return f"Thought: {thought}\n{open_tag}\n{call}\n{close_tag}"


def _shots(tools: Iterable[Any] | Mapping[str, Any]) -> list[Shot]:
    """One shot from the first tool; with no tools, a shot that answers directly."""
    by_name = tools_by_name(tools)
    if not by_name:
        return []
    return [example_shot(next(iter(by_name.values())))]


def fewshot_messages(
    tools: Iterable[Any] | Mapping[str, Any],
    style: str = "json",
    tags: tuple[str, str] | None = None,
    *,
    task_text: Callable[[str], str] | None = None,
    observation: Callable[[Any], str] | None = None,
) -> list[dict[str, str]]:
    """Chat turns to put between the system prompt and the task: call → result → final answer.

    With no tools the example is a task answered at once with final_answer.
    task_text / observation: how the agent spells a task message and an observation message
        (default "Task: <task>" and "Observation: <repr of the result>"); an example written
        exactly like the real conversation is the one a small model follows.
    """
    task_text = task_text or (lambda task: f"Task: {task}")
    observation = observation or (lambda result: f"Observation: {result!r}")
    shots = _shots(tools)
    if not shots:
        final = _render(style, FINAL_ANSWER, {"answer": "blue"}, tags, thought="I know the answer.")
        return [{"role": "user", "content": task_text("What colour is a clear daytime sky?")},
                {"role": "assistant", "content": final}]
    shot = shots[0]
    return [
        {"role": "user", "content": task_text(shot.task)},
        {"role": "assistant", "content": shot.reply(style, tags)},
        {"role": "user", "content": observation(shot.result)},
        {"role": "assistant", "content": shot.final(style, tags)},
    ]


def fewshot_text(
    tools: Iterable[Any] | Mapping[str, Any],
    style: str = "json",
    tags: tuple[str, str] | None = None,
) -> str:
    """`fewshot_messages` as one block for a system prompt ("Task: / You: / Observation:" lines)."""
    lines = ["Example:"]
    for message in fewshot_messages(tools, style, tags):
        content = message["content"]
        if message["role"] == "assistant":
            lines.append(f"You: {content}")
        else:
            lines.append(content)
    return "\n".join(lines)
