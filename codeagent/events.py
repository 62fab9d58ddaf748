"""Typed events that `CodeAgent.stream()` yields; each serializes to one NDJSON line.

Values made by model code (final answers, outputs) are never rendered on the host with their own
`__repr__`: `plain_json` keeps only exact builtin JSON types, and anything else travels as the
`output_repr` the executor computed inside its sandbox.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticSerializationError

from .models.replies import Usage

__all__ = [
    "Event",
    "RunStart",
    "TextDelta",
    "ModelReplyEvent",
    "CodeAction",
    "Observation",
    "ErrorEvent",
    "Notice",
    "FinalAnswerEvent",
    "RunEnd",
    "plain_json",
    "NOT_JSON",
]

NOT_JSON = object()


def model_json(model: BaseModel, indent: int | None = None) -> str:
    """`model.model_dump_json(indent=...)`, or where pydantic-core refuses the text (a lone
    surrogate, which model code can print or a tool return, has no UTF-8) the json module's,
    which writes it as an escape: an event, a record or a run's file is never lost to one."""
    try:
        return model.model_dump_json(indent=indent)
    except PydanticSerializationError:
        separators = (",", ":") if indent is None else None
        return json.dumps(model.model_dump(mode="json"), indent=indent, separators=separators)


def _int_bits() -> int:
    """The largest bit length whose ints this process turns into text (4,300 digits, the
    boundary's bound, where the host sets no lower limit)."""
    digits = sys.get_int_max_str_digits() or 4300
    return min(digits, 4300) * 33219280 // 10_000_000


def plain_json(value: Any, *, max_items: int = 10_000, _depth: int = 0) -> Any:
    """`value` if it is made only of exact builtin JSON types (no subclasses), else NOT_JSON.

    Checks `type(x) is ...` so no method defined by model code ever runs here. An int counts
    when this process can print it (`sys.get_int_max_str_digits()`, which a host may lower: the
    boundary lets ints of up to 4,300 digits cross); otherwise its output_repr says what it was.
    """
    kind = type(value)
    if value is None or kind is str or kind is bool:
        return value
    if kind is int:  # (one Python's json can print: within the host's int->str digit limit)
        return value if value.bit_length() < 2000 or value.bit_length() <= _int_bits() else NOT_JSON
    if kind is float:
        return value if math.isfinite(value) else NOT_JSON
    if _depth > 20:
        return NOT_JSON
    if kind in (list, tuple):
        if len(value) > max_items:
            return NOT_JSON
        out = [plain_json(v, max_items=max_items, _depth=_depth + 1) for v in value]
        return NOT_JSON if any(v is NOT_JSON for v in out) else out
    if kind is dict:
        if len(value) > max_items:
            return NOT_JSON
        result = {}
        for k, v in value.items():
            if type(k) is not str:
                return NOT_JSON
            item = plain_json(v, max_items=max_items, _depth=_depth + 1)
            if item is NOT_JSON:
                return NOT_JSON
            result[k] = item
        return result
    return NOT_JSON


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str
    run_id: str
    step: int | None = None
    elapsed_s: float = 0.0

    def to_json(self) -> str:
        """One NDJSON line (no trailing newline)."""
        return model_json(self)


class RunStart(Event):
    type: Literal["run_start"] = "run_start"
    task: str
    model: str
    scripted: bool = False
    max_steps: int
    tools: list[str] = []
    executor: str = ""


class TextDelta(Event):
    """A piece of the model's reply as it streams in (`agent.stream()` / `astream()`), before the
    step's `ModelReplyEvent`; reasoning=True: a piece of its reasoning (reasoning_content). The
    pieces of one request, joined, are what the model sent; its code runs only once the reply is
    complete. A retried request (an empty reply) starts again: `attempt` counts from 1."""

    type: Literal["text_delta"] = "text_delta"
    text: str
    reasoning: bool = False
    attempt: int = 1


class ModelReplyEvent(Event):
    """finish_reason: the endpoint's ("stop", "length", "tool_calls", ...), or "cut" when the
    agent stopped reading a streamed reply because its code block had closed."""

    type: Literal["model_reply"] = "model_reply"
    text: str
    reasoning: str | None = None
    usage: Usage = Usage()
    duration_s: float = 0.0
    finish_reason: str | None = None


class CodeAction(Event):
    type: Literal["code_action"] = "code_action"
    code: str


class Observation(Event):
    """attachments: the step's figures as metadata (`AttachmentRecord` fields: name, media_type,
    width, height, size, file); the bytes are not in the event: they are in the file when the
    run has an output_dir, and in the RunResult."""

    type: Literal["observation"] = "observation"
    observation: str
    logs: str = ""
    output_repr: str | None = None
    duration_s: float = 0.0
    attachments: list[dict[str, Any]] = []


class ErrorEvent(Event):
    """kind: a `codeagent.runs.record.ErrorKind` value (parse, execution, repeated_action, ...)."""

    type: Literal["error"] = "error"
    kind: str
    message: str


class Notice(Event):
    """Something the run adapted to, not an error of a step: the model's constraint probe and its
    fallbacks, an option the endpoint rejected (`OpenAIModel.adaptations`, in the order they happened)."""

    type: Literal["notice"] = "notice"
    message: str


class FinalAnswerEvent(Event):
    type: Literal["final_answer"] = "final_answer"
    output: Any = None
    output_repr: str | None = None


class RunEnd(Event):
    type: Literal["run_end"] = "run_end"
    status: str
    output: Any = None
    output_repr: str | None = None
    error: str | None = None
    steps: int = 0
    usage: Usage = Usage()
    duration_s: float = 0.0
    # The full RunResult, for `run()`; not part of the NDJSON line.
    result: Any = Field(default=None, exclude=True, repr=False)
