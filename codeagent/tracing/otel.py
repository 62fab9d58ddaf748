"""The one door to OpenTelemetry: a tracer when a tracer provider is configured, else None.

codeagent never imports OpenTelemetry itself to find out: a program that configured a provider has
imported `opentelemetry.trace` already, so when that module is not loaded tracing is off, at the
cost of one dictionary lookup, and `opentelemetry-api` is needed only by those who trace. With the
API loaded but no provider set (the API's proxy, or its no-op provider), tracing is off too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["tracer", "otel_trace", "enabled", "TRACER_NAME", "set_error", "scrub"]

TRACER_NAME = "codeagent"
_cache: list[Any] = [None, None]  # [provider, its tracer]: a provider is set once per process


def otel_trace() -> Any:
    """The `opentelemetry.trace` module when it is loaded, else None (no import here)."""
    return sys.modules.get("opentelemetry.trace")


def from_provider(cache: list[Any], module: str, get: str, off: Callable[[Any], tuple[type, ...]],
                  make: Callable[[Any], Any]) -> Any:
    """`make(provider)` for the provider the API `module` has configured (`module.<get>()`), made
    once per provider (`cache`: [provider, made]); None when the module is not loaded or its
    provider is one of `off(module)` (the API's proxy and no-op providers)."""
    api = sys.modules.get(module)
    if api is None:
        return None
    provider = getattr(api, get)()
    if provider is cache[0]:
        return cache[1]
    if isinstance(provider, off(api)):
        return None
    cache[0], cache[1] = provider, make(provider)
    return cache[1]


def tracer() -> Any:
    """codeagent's tracer from the configured provider, or None when no provider is configured."""
    return from_provider(_cache, "opentelemetry.trace", "get_tracer_provider",
                         lambda api: (api.ProxyTracerProvider, api.NoOpTracerProvider),
                         lambda provider: provider.get_tracer(TRACER_NAME, _version()))


def enabled() -> bool:
    return tracer() is not None


def _version() -> str:
    import codeagent

    return codeagent.__version__


def set_error(span: Any, error_type: str, description: str | None = None) -> None:
    """The span ended in an error: `error.type` (low cardinality) and an ERROR status."""
    api = otel_trace()
    span.set_attribute("error.type", error_type)
    span.set_status(api.Status(api.StatusCode.ERROR, description or error_type))


def scrub(text: str) -> str:
    """`text` without credentials in URLs (`https://user:secret@host` -> `https://***@host`)."""
    if "@" not in text:
        return text
    import re

    return re.sub(r"(\w+://)[^/@\s]+@", r"\1***@", text)
