"""What a model returns: one `ModelReply` (text, usage, reasoning, native tool calls).

Plain data with no behaviour, imported by models, events and the run record alike, so none of
those has to import another to name a reply or its usage.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Usage", "ToolCall", "ModelReply"]


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ToolCall(BaseModel):
    """A native (OpenAI `tool_calls`) call. `arguments` is a dict, or the raw text if it was not JSON."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    name: str
    arguments: dict[str, Any] | str = {}


class ModelReply(BaseModel):
    """One completion: `text` is what the agent parses; `reasoning` never reaches the parser.

    `tool_calls` is filled only when the request carried `tools=` and the model answered natively.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    usage: Usage = Usage()
    reasoning: str | None = None
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
