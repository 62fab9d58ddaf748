"""What an OpenAI-compatible endpoint's answers mean for a model client: `ModelError`s that say
which setting to check, and the adaptations to a weak endpoint (no `stop`, no system role, no
images, no streaming) that switch an option off and retry instead of failing the run. A mixin of
`OpenAIModel` (it reads the model's settings: base_url, timeout, retries, adapt, ...)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from ..tools.attachments import has_images

__all__ = ["ModelError", "EndpointAnswers", "tries_text", "silence_text", "sdk_timeout", "retried_after",
           "CONNECT_TIMEOUT_S", "create_parameters"]


class ModelError(RuntimeError):
    """The model endpoint failed for good (after the SDK's retries); says which setting to check.

    `status` is the HTTP status the endpoint answered with, None when the failure was not an HTTP
    answer (unreachable, timed out, no choices, a scripted model out of replies).
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _sentence(text: Any) -> str:
    """`text` without its final period, to be followed by one (the SDK's messages end in one)."""
    return str(text).rstrip().rstrip(".")


def _short(text: Any, limit: int = 300) -> str:
    text = re.sub(r"^Error code: \d+ - ", "", str(text))  # the SDK's prefix repeats the status
    return text if len(text) <= limit else text[:limit] + "..."



# A server that does not even accept the connection is known at once; the read timeout is the
# user's (OpenAIModel(timeout=...)): the longest the server may stay silent.
CONNECT_TIMEOUT_S = 10.0


_CREATE_PARAMS: dict[type, frozenset[str]] = {}


def create_parameters(client: Any) -> frozenset[str]:
    """Keyword names `chat.completions.create` accepts natively (the rest go in extra_body)."""
    completions = client.chat.completions
    key = type(completions)
    if key not in _CREATE_PARAMS:
        try:
            _CREATE_PARAMS[key] = frozenset(inspect.signature(completions.create).parameters)
        except (TypeError, ValueError):
            _CREATE_PARAMS[key] = frozenset({"temperature", "max_tokens", "top_p", "seed"})
    return _CREATE_PARAMS[key]


def tries_text(timeout: float, retries: int) -> str:
    """What a model request may take in all, in words: "3 tries of 60 s" (or "60 s")."""
    tries = retries + 1
    return f"{tries} tries of {timeout:g} s" if tries > 1 else f"{timeout:g} s"


def silence_text(timeout: float) -> str:
    return f"{timeout:g} s without a byte from it"  # when a silent server is given up on, in words


def sdk_timeout(timeout: Any) -> Any:
    """The SDK's timeout: `timeout` seconds of silence on a read (and for a write, or a free
    connection), a short wait for the connection itself. An `openai.Timeout` passes as it is."""
    if not isinstance(timeout, (int, float)):
        return timeout
    import openai

    return openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))


def retried_after(exc: BaseException) -> bool:
    """Whether a first try that failed so is tried again with the SDK's retries: a dropped
    connection, HTTP 408, 409, 429 or 5xx. Never a silent server (its read timeout): tried again,
    a hung server was waited on for 4 x 120 s."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return False
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError)


class EndpointAnswers:
    """ModelErrors and adaptations for OpenAIModel (see the module docstring)."""

    base_url: str | None
    timeout: Any
    max_retries: int
    adapt: bool
    adaptations: list[str]
    supports_stop: bool
    system_role: bool
    vision: bool
    supports_stream: bool
    stream_usage: bool

    def _failure(self, exc: Exception) -> ModelError:
        """A request that failed for good, as a ModelError that names the setting to check."""
        import openai

        where = self.base_url or "api.openai.com"
        if isinstance(exc, openai.APIStatusError):
            hint = {
                401: " Check the API key (--api-key-env / OPENAI_API_KEY).",
                403: " Check the API key's permissions.",
                404: " Check the model name (--model) and the base URL (--base-url, it usually ends in /v1).",
            }.get(exc.status_code, "")
            if exc.status_code == 400 and "system" in str(exc).lower() and self.system_role:
                hint = " If this server has no system role, use system_role=False (--no-system-role)."
            return ModelError(
                f"model endpoint {where} returned HTTP {exc.status_code}: {_sentence(_short(exc.message))}.{hint}",
                status=exc.status_code,
            )
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(f"the model endpoint {where} sent nothing for {self.waited()} (before the first "
                              "byte of its reply, or between two), so the request was ended and not tried again: "
                              "check the server, or give a slow model more time: OpenAIModel(timeout=...), "
                              "--model-timeout SECONDS (a reply that keeps coming is never cut)")
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(
                f"cannot reach the model endpoint {where}: {_sentence(exc)}. "
                "Check base_url (--base-url) or OPENAI_BASE_URL, and that the server is running."
            )
        return ModelError(f"model endpoint {where} failed: {_short(exc)}")

    def stream_failure(self, exc: Exception, read: str) -> ModelError:
        """A streamed reply that failed after `read` came: stalled, broke off, or an error event."""
        import openai

        where = self.base_url or "api.openai.com"
        after = f"after {len(read):,} characters"
        if isinstance(exc, openai.APITimeoutError):
            timeout = self.timeout
            waited = f"{timeout:g} s" if isinstance(timeout, (int, float)) else "its read timeout"
            return ModelError(f"model endpoint {where} stalled: its streamed reply sent nothing for "
                              f"{waited} {after}; raise OpenAIModel(timeout=...) (--model-timeout) "
                              "or check the server")
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(f"the streamed reply from model endpoint {where} broke off {after} "
                              f"({exc.__cause__ or exc}); check the server, or use whole replies "
                              "(the agent's stream_outputs=False)")
        return ModelError(f"model endpoint {where} sent an error in its streamed reply {after}: {exc}")

    def waited(self) -> str:
        """How long a request that timed out waited for a byte."""
        if not isinstance(self.timeout, (int, float)):
            return f"the read timeout ({self.timeout})"
        return f"{self.timeout:g} s"

    def _adapted_to(self, exc: Any, request: Mapping[str, Any]) -> bool:
        """Switch off what a weak endpoint rejected (`stop`, the system role); True to retry."""
        if not self.adapt or getattr(exc, "status_code", None) != 400:
            return False
        message = str(getattr(exc, "message", exc)).lower()
        if "stop" in request and "stop" in message:
            self.supports_stop = False
            self.adaptations.append("the endpoint rejected `stop`: replies are cut client-side")
            return True
        if self.system_role and "system" in message and any(m.get("role") == "system" for m in request["messages"]):
            self.system_role = False
            self.adaptations.append("the endpoint rejected the system role: it is merged into the first user message")
            return True
        if request.get("stream_options") and "stream_options" in message:
            self.stream_usage = False
            self.adaptations.append("the endpoint rejected stream_options: streamed replies report no usage "
                                    "(it is estimated)")
            return True
        if request.get("stream") and "stream" in message:
            self.supports_stream = False
            self.adaptations.append("the endpoint rejected `stream`: replies come whole")
            return True
        if self.vision and "image" in message and has_images(request["messages"]):
            self.vision = False
            self.adaptations.append("the endpoint rejected images: figures are described in text")
            return True
        return False
