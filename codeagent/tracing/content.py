"""What spans may say: the conventions' shape in force, and content only when the user opts in.

Two settings of the GenAI semantic conventions, read from the environment at the start of each run
(so a test or a long-lived process can change them), overridable with `configure(...)`:

- `OTEL_SEMCONV_STABILITY_OPT_IN` containing `gen_ai_latest_experimental`: the newest experimental
  shape (`gen_ai.provider.name`; content as the JSON attributes `gen_ai.input.messages`,
  `gen_ai.output.messages`, `gen_ai.system_instructions`). Without it, the shape of conventions
  v1.36 and before, which most backends read today (`gen_ai.system`; content as span events named
  like that version's events, `gen_ai.user.message`, `gen_ai.choice`, ...).
- `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`: `true` (or the newer `SPAN_ONLY` /
  `SPAN_AND_EVENT`) records messages, code, tool arguments and results, logs and the final answer;
  anything else (the default, `false`, `NO_CONTENT`, `EVENT_ONLY`: codeagent emits no log events)
  records none of them, and error descriptions then carry only the error's type.

Every captured text is cut head+tail to `CODEAGENT_TRACE_CONTENT_MAX_CHARS` (default 4000) per
value, keeping JSON structure. Values are rendered without running any of their methods: plain
JSON of exact builtin types as itself, anything else as `<type object>` (model-made objects never
run on the host). Secrets are never attributes: no API key, header or request option outside the
sampling settings is read, and URLs lose their credentials.
"""

from __future__ import annotations

import contextvars
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..agent.memory import truncate_middle
from ..events import NOT_JSON, plain_json

__all__ = ["Settings", "settings", "run_settings", "configure", "render", "input_messages", "output_message",
           "OPT_IN_ENV", "CAPTURE_ENV", "MAX_CHARS_ENV", "LATEST"]

OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
MAX_CHARS_ENV = "CODEAGENT_TRACE_CONTENT_MAX_CHARS"
LATEST = "gen_ai_latest_experimental"
DEFAULT_MAX_CHARS = 4000
_CAPTURE_ON = ("true", "1", "yes", "span_only", "span_and_event")
_overrides: dict[str, Any] = {}


@dataclass(frozen=True)
class Settings:
    latest: bool  # the newest experimental shape of the conventions
    capture: bool  # content on spans
    max_chars: int  # per captured value

    def cut(self, text: str) -> str:
        return truncate_middle(text, self.max_chars)

    def describe(self, error_type: str, message: str | None) -> str:
        """A span status description: the message only when content is captured."""
        if not self.capture or not message:
            return error_type
        from .otel import scrub

        return scrub(truncate_middle(str(message), min(self.max_chars, 1000)))


def configure(*, capture_content: bool | None = None, max_chars: int | None = None,
              latest: bool | None = None) -> None:
    """Override the environment for this process (None: back to the environment's setting)."""
    if max_chars is not None and (isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 100):
        raise ValueError(f"max_chars must be an integer >= 100, got {max_chars!r}")
    for key, value in (("capture", capture_content), ("max_chars", max_chars), ("latest", latest)):
        if value is None:
            _overrides.pop(key, None)
        else:
            _overrides[key] = value


# The settings of the run whose execution (or tool calls) is under way: a tool call reads them from
# here, not from the environment (an environment lookup costs microseconds on the hot path).
run_settings: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("codeagent_trace_settings",
                                                                              default=None)


def settings() -> Settings:
    """The settings in force now: the running run's, else the environment's and `configure`'s."""
    current = run_settings.get()
    if current is not None:
        return current
    env = os.environ
    latest = _overrides.get("latest")
    if latest is None:
        latest = LATEST in [v.strip() for v in env.get(OPT_IN_ENV, "").split(",")]
    capture = _overrides.get("capture")
    if capture is None:
        capture = env.get(CAPTURE_ENV, "").strip().lower() in _CAPTURE_ON
    max_chars = _overrides.get("max_chars")
    if max_chars is None:
        try:
            max_chars = max(100, int(env.get(MAX_CHARS_ENV, DEFAULT_MAX_CHARS)))
        except ValueError:
            max_chars = DEFAULT_MAX_CHARS
    return Settings(bool(latest), bool(capture), max_chars)


def plain(value: Any) -> Any:
    """`value` if it is plain JSON data (exact builtin types), else its type's name in brackets."""
    safe = plain_json(value, max_items=1000)
    return f"<{type(value).__name__} object>" if safe is NOT_JSON else safe


def render(value: Any, s: Settings) -> str:
    """A value as JSON text for an attribute, without running any method of it; cut to the limit.
    A dict's values are rendered one by one (a tool's arguments keep their names)."""
    if type(value) is dict and all(type(k) is str for k in value):
        safe: Any = {k: plain(v) for k, v in value.items()}
    else:
        safe = plain(value)
    if isinstance(safe, str):
        return s.cut(safe)
    return s.cut(json.dumps(safe, ensure_ascii=False, default=str))


def _text_of(content: Any) -> list[dict[str, Any]]:
    """Message content (a string, or OpenAI parts) as convention parts; images are not copied."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts = []
    for part in content or ():
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append({"type": "text", "content": str(part.get("text", ""))})
        elif isinstance(part, Mapping):
            parts.append({"type": "text", "content": f"[{part.get('type', 'part')} omitted]"})
    return parts


def _cut_parts(parts: list[dict[str, Any]], s: Settings) -> list[dict[str, Any]]:
    return [{**p, "content": s.cut(p["content"])} if isinstance(p.get("content"), str) else p for p in parts]


def input_messages(messages: Sequence[Mapping[str, Any]], s: Settings) -> tuple[list[Any], list[Any]]:
    """(system instructions, input messages) in the conventions' JSON shape, each text cut."""
    system: list[Any] = []
    out: list[Any] = []
    for m in messages:
        role = str(m.get("role", "user"))
        parts = _text_of(m.get("content"))
        if role == "system":
            system.extend(_cut_parts(parts, s))
            continue
        for call in m.get("tool_calls") or ():
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": s.cut(str(function.get("arguments", "")))})
        if role == "tool":
            parts = [{"type": "tool_call_response", "id": m.get("tool_call_id"),
                      "result": s.cut(" ".join(p["content"] for p in parts if "content" in p))}]
        out.append({"role": role, "parts": _cut_parts(parts, s)})
    return system, out


def output_message(reply: Any, s: Settings) -> dict[str, Any]:
    """The model's reply as one output message of the conventions."""
    parts: list[dict[str, Any]] = []
    if reply.reasoning:
        parts.append({"type": "reasoning", "content": s.cut(reply.reasoning)})
    if reply.text:
        parts.append({"type": "text", "content": s.cut(reply.text)})
    for call in reply.tool_calls:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": render(call.arguments, s)})
    return {"role": "assistant", "parts": parts, "finish_reason": reply.finish_reason or "stop"}
