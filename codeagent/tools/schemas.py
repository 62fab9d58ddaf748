"""Tools as the JSON function schemas of native tool calling (OpenAI's `tools`): parameters from
a Tool's type hints (pydantic's JSON schema), the description from its docstring, and the schema
of `final_answer`, the call that ends a run."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from executors.base import FINAL_ANSWER_NAME

from .tool import Tool

__all__ = ["tool_schema", "FINAL_ANSWER_SCHEMA"]

FINAL_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FINAL_ANSWER_NAME,
        "description": "Give the final answer to the task and end it. Call it once, when you are done.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"description": "The answer to the task."}},
            "required": ["answer"],
        },
    },
}


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
