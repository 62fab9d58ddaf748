"""Find out which constraint spelling an endpoint honours, with a few tiny requests.

`probe_constraint(send)` tries the spellings in `PROBE_ORDER`. Each try is one request asking for
something unrelated ("one sentence about the sea") while the constraint demands
`{"animal": "zebra", "legs": <integer>}`: a server that ignores the field answers in prose, one that
honours it can only write the object. So a spelling is chosen only when the reply conforms, and an
error status (HTTP 400 "unknown field", llama-cpp-python's HTTP 500 for `json_schema`) or a reply
that does not conform rejects it, with the reason kept for the run's events.

`send(messages, fields) -> (status, reply_text)` sends one chat request with the extra `fields`
(`request_fields`' output) and returns the HTTP status and the reply's text (the error body when the
status is not 2xx). Exceptions it raises (connection refused, ...) are not about constraints and
propagate. Pure logic otherwise: the caller remembers the result (per model and endpoint).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .grammar import schema_to_gbnf
from .request import SCHEMA_SPELLINGS, SPELLINGS, request_fields

__all__ = ["PROBE_ORDER", "PROBE_SCHEMA", "PROBE_MESSAGES", "ProbeResult", "probe_constraint", "probe_conforms",
           "sdk_sender"]

# The standard spelling first (most servers, OpenAI itself), then llama-cpp-python's, then the
# grammar field of the llama.cpp family, then vLLM's older extra field. `guided_grammar` is not
# probed: a server with guided_grammar also takes guided_json, and grammars are not portable.
PROBE_ORDER: tuple[str, ...] = ("json_schema", "json_object", "grammar", "guided_json")

PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"animal": {"const": "zebra"}, "legs": {"type": "integer"}},
    "required": ["animal", "legs"],
    "additionalProperties": False,
}
PROBE_MESSAGES: tuple[dict[str, str], ...] = (
    {"role": "user", "content": "Write one short sentence about the sea."},
)

Send = Callable[[Sequence[Mapping[str, Any]], Mapping[str, Any]], "tuple[int, str]"]


@dataclass(frozen=True)
class ProbeResult:
    """The spelling to use (None: no constraint works here) and why each other one was passed over."""

    spelling: str | None
    rejected: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        why = "; ".join(f"{s}: {r}" for s, r in self.rejected)
        if self.spelling is None:
            return f"no constraint spelling works on this endpoint ({why or 'none tried'})"
        return f"constrain={self.spelling!r}" + (f" (passed over: {why})" if why else "")


def probe_conforms(text: str) -> bool:
    """True if `text` is exactly a JSON instance of PROBE_SCHEMA."""
    try:
        value = json.loads(text.strip())
    except ValueError:
        return False
    return (isinstance(value, dict) and set(value) == {"animal", "legs"} and value["animal"] == "zebra"
            and isinstance(value["legs"], int) and not isinstance(value["legs"], bool))


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def probe_constraint(send: Send, order: Iterable[str] = PROBE_ORDER) -> ProbeResult:
    """The first spelling in `order` whose constrained reply conforms; reasons for the others."""
    rejected: list[tuple[str, str]] = []
    grammar = schema_to_gbnf(PROBE_SCHEMA, use_llama_cpp=False)
    for spelling in order:
        if spelling not in SPELLINGS:
            raise ValueError(f"unknown constraint spelling {spelling!r} in the probe order")
        if spelling in SCHEMA_SPELLINGS:
            fields = request_fields(spelling, schema=PROBE_SCHEMA, name="probe")
        else:
            fields = request_fields(spelling, grammar=grammar)
        status, text = send([dict(m) for m in PROBE_MESSAGES], fields)
        if not 200 <= status < 300:
            rejected.append((spelling, f"HTTP {status}: {_short(text)}"))
        elif probe_conforms(text):
            return ProbeResult(spelling, tuple(rejected))
        else:
            rejected.append((spelling, f"ignored (the reply does not follow the schema: {_short(text, 80)!r})"))
    return ProbeResult(None, tuple(rejected))


def sdk_sender(client: Any, model_id: str, *, max_tokens: int = 48, **options: Any) -> Send:
    """A `send` over an `openai.OpenAI` client: fields the SDK knows go as arguments, the rest
    (`grammar`, `guided_json`) through `extra_body`; an HTTP error status comes back as
    (status, message) instead of raising. Greedy and short: the probe needs a dozen tokens."""
    import inspect

    import openai

    if hasattr(client, "with_options"):  # a rejected spelling is an answer, not a fault to retry
        client = client.with_options(max_retries=0)
    known = frozenset(inspect.signature(client.chat.completions.create).parameters)

    def send(messages: Sequence[Mapping[str, Any]], fields: Mapping[str, Any]) -> tuple[int, str]:
        request: dict[str, Any] = {"model": model_id, "messages": [dict(m) for m in messages],
                                   "max_tokens": max_tokens, "temperature": 0, **options}
        extra = {k: v for k, v in fields.items() if k not in known}
        request.update({k: v for k, v in fields.items() if k in known})
        if extra:
            request["extra_body"] = extra
        try:
            response = client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            return exc.status_code, server_error_text(exc)
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        return 200, (getattr(message, "content", None) or "") if message is not None else ""

    return send


def server_error_text(exc: Any) -> str:
    """The server's own error message (the SDK's `message` prefixes "Error code: 500 - {...}")."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
        if isinstance(inner.get("message"), str):
            return inner["message"]
    return str(getattr(exc, "message", exc))
