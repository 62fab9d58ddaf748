"""Models: anything with `complete(messages, stop) -> ModelReply`.

`OpenAIModel` talks to OpenAI or any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)
through the `openai` SDK, and copes with weak endpoints: no system role, no `stop` support,
reasoning text (`reasoning_content` fields, `<think>` blocks) that must stay out of the code.
`ScriptedModel` replays fixed replies for tests, examples and offline demos (or a saved run).
The reply types live in `codeagent.models.replies`, the `<think>` stripper in `codeagent.parsing.reasoning`
(one for models and parser alike); both are re-exported here.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .. import aio
from ..parsing.reasoning import split_reasoning
from ..tools.attachments import content_text, has_images, strip_images, vision_capable
from .constrain.probe import server_error_text
from .constrain.request import Constraint, check_constrain
from .endpoint import (
    CONNECT_TIMEOUT_S,
    EndpointAnswers,
    ModelError,
    _short,
    create_parameters,
    retried_after,
    sdk_timeout,
    silence_text,
    tries_text,
)
from .light_http import LightResponse, light_client, request_body
from .openai_stream import async_stream, light_stream, sync_stream, thread_stream
from .replies import ModelReply, ToolCall, Usage
from .streaming import AsyncReplyStream, ReplyStream, tool_calls_from, usage_from

# The longest the server may stay silent: before the first byte of its reply or between two (a read
# timeout). A reply that keeps coming is never cut; a server silent this long ends the request.
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3

__all__ = ["Usage", "ModelReply", "ToolCall", "Model", "ModelError", "OpenAIModel", "check_model",
           "split_reasoning", "cut_at_stop", "merge_system_into_user", "tries_text", "silence_text",
           "CONNECT_TIMEOUT_S"]

Message = Mapping[str, Any]


@runtime_checkable
class Model(Protocol):
    model_id: str

    def complete(self, messages: Sequence[Message], stop: Sequence[str] | None = None) -> ModelReply: ...


def check_model(model: Any) -> Any:
    """`model` if it can be asked for replies (has `complete`), else a TypeError that says what to pass.

    Agents call this when they are made, so a model name or a missing model fails there and not
    at the first step with "'str' object has no attribute 'complete'".
    """
    if model is None:
        raise TypeError(
            "model is required: pass model=OpenAIModel('model-name', base_url=...) for a server, "
            "or model=ScriptedModel([...replies...]) to replay fixed replies offline"
        )
    if isinstance(model, str):
        raise TypeError(
            f"model must be a model object, not the string {model!r}: pass "
            f"model=OpenAIModel({model!r}) (add base_url=... for a local OpenAI-compatible server)"
        )
    if not callable(getattr(model, "complete", None)):
        raise TypeError(
            f"model must have a complete(messages, stop) method (OpenAIModel, ScriptedModel or your "
            f"own class), got {type(model).__name__}"
        )
    return model


def cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """What a server honoring `stop` would have returned: the text before the first stop sequence."""
    if not stop:
        return text
    cut = len(text)
    for s in stop:
        if s:
            i = text.find(s, 0, cut + len(s))
            if i != -1 and i < cut:
                cut = i
    return text[:cut]


def merge_system_into_user(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """For endpoints without a system role: prepend the system text to the first user message."""
    system = [content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    preamble = "\n\n".join(system)
    for m in rest:
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):  # text and images: the preamble is one more text part, first
                m["content"] = [{"type": "text", "text": preamble}, *content]
            else:
                m["content"] = f"{preamble}\n\n{content or ''}"
            return rest
    return [{"role": "user", "content": preamble}, *rest]


class OpenAIModel(EndpointAnswers):
    """A chat-completions model over the `openai` SDK.

    model_id: the model name the server knows (`gpt-4o-mini`, `qwen2.5-coder:7b`, ...).
    base_url: the server's `/v1` URL; default `$OPENAI_BASE_URL`, else OpenAI itself.
    api_key: default `$OPENAI_API_KEY`; local servers that need none get a placeholder.
    system_role=False: merge the system prompt into the first user message.
    supports_stop=False: do not send `stop`; the reply is cut client-side instead.
    request_options: extra request fields (`temperature`, `max_tokens`, or server-specific ones,
        which are sent through `extra_body`).
    timeout: the longest the server may stay silent, in seconds: before the first byte of its reply
        or between two (a read timeout; for a streamed reply, between two chunks). A reply that
        keeps coming is never cut; a server silent that long ends the request with a ModelError
        that says so, not tried again.
    max_retries: tries again after a dropped connection, HTTP 408, 409, 429 or 5xx (the SDK's
        backoff), not after a silent server.
    async_client: an `openai.AsyncOpenAI` for `acomplete`/`astream` when you pass `client=`
        (otherwise one is made per event loop; without either, async requests run on a thread).
        Async requests to a plain http:// endpoint (no proxy) skip the SDK for a light HTTP client
        (`codeagent.models.light_http`: a tenth of the CPU); `model.light_http = False` keeps the SDK.
    supports_stream=False: never stream (`stream()` asks for whole replies); a server that rejects
        `stream` (or `stream_options`, which asks a stream for its usage) is switched so with `adapt`.
    adapt: when the server answers HTTP 400 about `stop`, the system role or images, switch that
        option off and retry once (recorded in `.adaptations`), instead of failing the run.
    vision: whether the model takes images (figures the agent's code made are then sent as image
        parts of the observation). "auto" (default): True for model names known to (gpt-4o, gpt-4.1,
        claude-3, gemini, llava, qwen2.5-vl, pixtral, ... see `codeagent.tools.attachments`), else False.
        A model without vision reads a one-line description of each figure instead.
    constrain: constrained decoding, for the requests an agent sends with a `Constraint`: None (no
        constraint), a spelling ("json_schema": OpenAI's response_format, also vLLM's and Ollama's;
        "json_object": llama-cpp-python's {"type": "json_object", "schema": ...}; "grammar": a GBNF
        grammar, the llama.cpp family; "guided_json" / "guided_grammar": vLLM's fields), or "auto":
        at first use a probe of a few tiny requests picks the spelling the endpoint honours
        (remembered per endpoint and model; None when none works). A constrained request the
        endpoint rejects (HTTP 400, 422 or 500) is sent again with the next spelling ("auto") or
        without a constraint; the probe's verdict and every fallback are recorded in `.adaptations`,
        which the agents report as events. With any constrain setting, ToolCallingAgent's requests
        also carry tool_choice="required" (dropped if the endpoint rejects it).
    """

    scripted = False
    provider_name = "openai"  # gen_ai.provider.name in traces: the API it speaks (codeagent.tracing)

    def __init__(
        self,
        model_id: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        system_role: bool = True,
        supports_stop: bool = True,
        request_options: Mapping[str, Any] | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        adapt: bool = True,
        client: Any = None,
        vision: bool | str = "auto",
        constrain: str | None = None,
        async_client: Any = None,
        supports_stream: bool = True,
    ) -> None:
        if not isinstance(model_id, str) or not model_id.strip():
            raise TypeError(f"OpenAIModel needs the model's name as a string, e.g. OpenAIModel('gpt-4o-mini'), "
                            f"got {model_id!r}")
        if vision not in (True, False, "auto"):
            raise ValueError(f"vision must be True, False or 'auto' (known vision model names), got {vision!r}")
        self.model_id = model_id
        self.vision: bool = vision_capable(model_id) if vision == "auto" else bool(vision)
        if isinstance(timeout, (int, float)):  # (an httpx.Timeout passes as it is)
            from executors.base import timeout_seconds

            timeout = timeout_seconds(timeout, "timeout")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ValueError(f"max_retries must be a whole number >= 0, got {max_retries!r}")
        self.timeout = timeout
        self.max_retries = max_retries
        self.adapt = adapt
        self.adaptations: list[str] = []
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.system_role = system_role
        self.supports_stop = supports_stop
        self.request_options = dict(request_options or {})
        self.set_constrain(constrain)
        self.supports_stream = supports_stream
        self.stream_usage = True  # ask a streamed reply for its usage (stream_options.include_usage)
        self._key: str | None = None  # (None: the client was given; async needs async_client=)
        self._given_async = async_client
        self._async_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._light_clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self.light_http = True  # (see async_client above)
        if client is None:
            import openai

            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                if not self.base_url:
                    raise ModelError(
                        "no API key: set OPENAI_API_KEY (or pass api_key=...), or point base_url "
                        "at a local OpenAI-compatible server"
                    )
                key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any key
            self._key = key
            client = openai.OpenAI(base_url=self.base_url, api_key=key, max_retries=max_retries,
                                   timeout=sdk_timeout(timeout))
        self.client = client

    def _request(
        self, messages: Sequence[Message], stop: Sequence[str] | None, tools: Sequence[Mapping[str, Any]] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The `create` arguments; `fields`: the constraint's request fields (`_constraint_fields`)."""
        msgs = merge_system_into_user(messages) if not self.system_role else [dict(m) for m in messages]
        if not self.vision and has_images(msgs):
            msgs = strip_images(msgs)  # their text describes each image
        known = create_parameters(self.client)
        request: dict[str, Any] = {"model": self.model_id, "messages": msgs}
        extra: dict[str, Any] = {}
        for key, value in {**self.request_options, **(fields or {})}.items():
            (request if key in known else extra)[key] = value
        if extra:
            request["extra_body"] = {**request.get("extra_body", {}), **extra}
        if stop and self.supports_stop:
            request["stop"] = list(stop)[:4]  # the API accepts at most 4
        if tools:
            request["tools"] = [dict(t) for t in tools]
        return request

    # -- constrained decoding ----------------------------------------------------------------

    def set_constrain(self, constrain: str | None) -> None:
        """Change the `constrain` setting (see the class doc); "auto" probes again at first use."""
        self.constrain = check_constrain(constrain)
        self._spelling: str | None = None if constrain == "auto" else constrain
        self._resolved = constrain != "auto"
        self._confirmed = False  # a constrained request in this spelling has been answered
        self._tried: list[str] = []  # spellings rejected by the probe or by a real request
        self._tool_choice = constrain is not None

    def constraint_spelling(self) -> str | None:
        """The spelling constrained requests use now (None: none); runs the "auto" probe once."""
        if not self._resolved:
            self._resolved = True
            from .constrain.probe import PROBE_ORDER

            result = _probe(self)
            self._spelling = result.spelling
            if result.spelling is not None:
                self._tried = [s for s in PROBE_ORDER[: PROBE_ORDER.index(result.spelling) + 1]]
            self.adaptations.append(f"constrain='auto': {result.describe()}")
        return self._spelling

    def _constraint_fields(self, constraint: Constraint | None, has_tools: bool) -> dict[str, Any]:
        if constraint is None:
            return {}
        fields: dict[str, Any] = {}
        if constraint.schema is not None or constraint.grammar is not None:  # only then is a probe worth it
            fields = constraint.fields(self.constraint_spelling())
        if constraint.tool_choice and has_tools and self._tool_choice:
            fields["tool_choice"] = constraint.tool_choice
        return fields

    def _constraint_rejected(self, exc: Any, fields: Mapping[str, Any], constraint: Constraint | None) -> bool:
        """A constrained request failed with `exc`: fall back (next spelling, or none); True to retry."""
        status = getattr(exc, "status_code", None)
        message = _short(server_error_text(exc), 160)
        if "tool_choice" in fields and status in (400, 422) and (
                "tool_choice" in message or "required" in message):
            self._tool_choice = False
            self.adaptations.append(f"the endpoint rejected tool_choice='required' (HTTP {status}): not sent again")
            return True
        spelling = self._spelling
        if constraint is None or spelling is None or status not in (400, 422, 500) or fields.keys() <= {"tool_choice"}:
            return False
        self._tried.append(spelling)
        following = None
        if self.constrain == "auto":
            from .constrain.probe import PROBE_ORDER

            following = next((s for s in PROBE_ORDER if s not in self._tried and constraint.expressible(s)), None)
        self._spelling, self._confirmed = following, False
        then = f"trying constrain={following!r}" if following else "continuing without a constraint"
        self.adaptations.append(f"the endpoint rejected the constrained request (constrain={spelling!r}, "
                                f"HTTP {status}: {message}); {then}")
        return True

    def complete(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> ModelReply:
        """One chat completion. `tools`: OpenAI tool schemas; native calls come back in `.tool_calls`.
        `constraint`: what to decode, sent in this model's `constrain` spelling (ignored when None)."""
        response = aio.result(self._call(self._send, messages, stop, tools, constraint, stream=False))
        return self._whole(response, stop)

    def stream(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> ReplyStream:
        """`complete`, streamed: iterate the `Delta`s as they arrive, `close()` to stop reading
        (the connection closes: the server stops), then `reply()` (`codeagent.models.streaming`).
        A server that does not stream answers whole (one delta)."""
        response = aio.result(self._call(self._send, messages, stop, tools, constraint, stream=True))
        return sync_stream(self, response, messages, stop, lambda c: self._whole(c, stop))

    async def acomplete(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> ModelReply:
        """`complete` on the running event loop (the SDK's async client, one per loop)."""
        if self._async_client() is None:
            return await asyncio.to_thread(self.complete, messages, stop, tools, constraint)
        response = await self._call(self._asend, messages, stop, tools, constraint, stream=False)
        return self._whole(response, stop)

    async def astream(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> AsyncReplyStream:
        """`stream` on the running event loop: `async for delta in ...`, `await aclose()`."""
        if self._async_client() is None:
            return thread_stream(await asyncio.to_thread(self.stream, messages, stop, tools, constraint))
        response = await self._call(self._asend, messages, stop, tools, constraint, stream=True)
        if isinstance(response, LightResponse):
            return await light_stream(self, response, messages, stop, lambda c: self._whole(c, stop))
        return await async_stream(self, response, messages, stop, lambda c: self._whole(c, stop))

    async def _call(self, send: Any, messages: Sequence[Message], stop: Sequence[str] | None,
                    tools: Sequence[Mapping[str, Any]] | None, constraint: Constraint | None, *,
                    stream: bool) -> Any:
        """One request, with the adaptations and fallbacks, shared by the four ways to ask:
        `send(request, first)` sends it (it never suspends for the sync ones: `codeagent.aio`)."""
        import openai

        try:
            while True:
                fields = self._constraint_fields(constraint, bool(tools))
                request = self._request(messages, stop, tools, fields)
                if stream and self.supports_stream:
                    request["stream"] = True
                    if self.stream_usage:
                        request["stream_options"] = {"include_usage": True}
                try:
                    # the first request in a spelling: a rejection (llama-cpp-python answers an unknown
                    # response_format with HTTP 500) is an answer to act on, not a fault to retry
                    response = await send(request, bool(fields) and not self._confirmed)
                    self._confirmed = self._confirmed or bool(fields)
                    return response
                except openai.APIStatusError as exc:
                    if not (self._adapted_to(exc, request) or self._constraint_rejected(exc, fields, constraint)):
                        raise
        except openai.APIError as exc:
            raise self._failure(exc) from exc

    async def _send(self, request: dict[str, Any], first: bool) -> Any:
        """The first try without the SDK's retries, then its retries when `retried_after` says so
        (a silent server is not waited on again; a constraint's first rejection is an answer)."""
        client = self.client
        retries = getattr(client, "max_retries", 0)
        if not (isinstance(retries, int) and retries > 0 and hasattr(client, "with_options")):
            return client.chat.completions.create(**_lean(client, request))
        try:
            return client.with_options(max_retries=0).chat.completions.create(**_lean(client, request))
        except Exception as exc:
            if first or not retried_after(exc):
                raise
        time.sleep(0.5)  # the SDK's first backoff
        client = client.with_options(max_retries=retries - 1)
        return client.chat.completions.create(**_lean(client, request))

    async def _asend(self, request: dict[str, Any], first: bool) -> Any:
        """`_send` on the running loop: the light HTTP path when it serves this request
        (`codeagent.models.light_http`), else the SDK's async client; retries go through the SDK."""
        light = light_client(self)
        body = request_body(request) if light is not None else None
        client = self._async_client() if body is None else None
        try:
            if body is not None:
                return await light.send(body, stream=bool(request.get("stream")), where=self.base_url)
            return await client.with_options(max_retries=0).chat.completions.create(**_lean(client, request))
        except Exception as exc:
            retries = self.max_retries if client is None else client.max_retries
            if first or retries <= 0 or not retried_after(exc):
                raise
        await asyncio.sleep(0.5)
        client = client or self._async_client()
        client = client.with_options(max_retries=client.max_retries - 1)
        return await client.chat.completions.create(**_lean(client, request))

    def _async_client(self) -> Any:
        """The SDK's async client for the running loop (its connections belong to one loop);
        None when this model was given a client of its own and no `async_client`."""
        if self._given_async is not None:
            return self._given_async
        if self._key is None:
            return None
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            import openai

            client = self._async_clients[loop] = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._key, max_retries=self.max_retries,
                timeout=sdk_timeout(self.timeout))
        return client

    def _whole(self, response: Any, stop: Sequence[str] | None) -> ModelReply:
        """A completion (not streamed) as a ModelReply."""
        where = self.base_url or "api.openai.com"
        if not getattr(response, "choices", None):
            raise ModelError(f"model endpoint {where} returned no choices")
        choice = response.choices[0]
        message = choice.message
        raw_text = (getattr(message, "content", None) or "") if message is not None else ""
        field_reasoning = None
        if message is not None:
            field_reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
        text, think = split_reasoning(raw_text)
        text = cut_at_stop(text, stop)
        reasoning = "\n\n".join(r for r in (field_reasoning, think) if isinstance(r, str) and r) or None
        return ModelReply(
            text=text, usage=usage_from(getattr(response, "usage", None)), reasoning=reasoning,
            finish_reason=getattr(choice, "finish_reason", None),
            tool_calls=tool_calls_from(getattr(message, "tool_calls", None) if message is not None else None),
        )

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model_id!r}, base_url={self.base_url!r})"


# The "auto" probe's verdict per (base_url, model_id): the probe costs a few requests, once.
_PROBED: dict[tuple[str, str], Any] = {}


def _probe(model: OpenAIModel) -> Any:
    """Which spelling `model`'s endpoint honours (a ProbeResult), probed once per endpoint and model.
    A probe that cannot reach the endpoint is not remembered: it says so, and the run goes on."""
    import openai

    from .constrain.probe import ProbeResult, probe_constraint, sdk_sender

    key = (model.base_url or "api.openai.com", model.model_id)
    if key not in _PROBED:
        try:
            result = probe_constraint(sdk_sender(model.client, model.model_id))
        except openai.APIError as exc:
            return ProbeResult(None, (("probe", f"the probe request failed: {_short(exc, 160)}"),))
        _PROBED[key] = result
    return _PROBED[key]


def _lean(client: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The request with its messages and tools in `extra_body`, for the SDK's own clients: they are
    plain JSON already, and the SDK's walk of them against its type annotations is most of a
    request's CPU (~1.5 ms each: what 100 runs at once on one loop wait for). The SDK documents
    that `extra_body` takes precedence, so the body sent is the same."""
    import openai

    if not isinstance(client, (openai.OpenAI, openai.AsyncOpenAI)):
        return request
    moved = {k: request[k] for k in ("messages", "tools") if k in request}
    return {**request, "messages": [], "tools": openai.omit,
            "extra_body": {**request.get("extra_body", {}), **moved}}
