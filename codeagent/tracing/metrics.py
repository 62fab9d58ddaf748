"""The GenAI conventions' client histograms, recorded for every traced model request:

- `gen_ai.client.token.usage` ({token}): input and output tokens (`gen_ai.token.type`);
- `gen_ai.client.operation.duration` (s): how long the request took, with `error.type` if it failed.

To whatever meter provider the program configured (as for spans, nothing is imported to find out,
and none configured records nothing); the buckets are the conventions' advice.
"""

from __future__ import annotations

from typing import Any

from .otel import TRACER_NAME, from_provider

__all__ = ["record_chat"]

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_cache: list[Any] = [None, None]  # [meter provider, (token histogram, duration histogram)]


def _histograms() -> Any:
    return from_provider(_cache, "opentelemetry.metrics", "get_meter_provider",
                         lambda api: (api.NoOpMeterProvider, api._internal._ProxyMeterProvider), _make)


def _make(provider: Any) -> tuple[Any, Any]:
    meter = provider.get_meter(TRACER_NAME)
    return (
        meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                               description="Number of input and output tokens used.",
                               explicit_bucket_boundaries_advisory=TOKEN_BUCKETS),
        meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                               description="GenAI operation duration.",
                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS),
    )


def record_chat(attributes: dict[str, Any], duration_s: float, usage: Any, error_type: str | None) -> None:
    """One model request: its duration, and its tokens when it answered."""
    found = _histograms()
    if found is None:
        return
    tokens, duration = found
    if error_type is not None:
        attributes = {**attributes, "error.type": error_type}
    duration.record(duration_s, attributes)
    if usage is not None and error_type is None:
        tokens.record(usage.prompt_tokens, {**attributes, "gen_ai.token.type": "input"})
        tokens.record(usage.completion_tokens, {**attributes, "gen_ai.token.type": "output"})
