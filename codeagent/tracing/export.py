"""Configure where spans go, for the command line and batch workers: `--trace otlp|console`.

A program that configures OpenTelemetry itself (Phoenix's `register()`, `opentelemetry-instrument`,
its own `TracerProvider`) needs none of this: codeagent's spans go to whatever provider is set.
`setup(exporter)` is for those that have none yet: it installs an SDK `TracerProvider` (resource
`service.name` from `OTEL_SERVICE_NAME`, default "codeagent") with

- "otlp": a batching OTLP exporter. Endpoint, headers, timeout and protocol come from the standard
  `OTEL_EXPORTER_OTLP_*` variables (default http://localhost:4318, OTLP/HTTP protobuf;
  `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` needs `opentelemetry-exporter-otlp-proto-grpc`);
- "console": every span as JSON on stderr (stdout stays the command's own, NDJSON included).

The SDK and the exporter are the `codeagent[otel]` extra; without them `setup` raises
`TracingUnavailable` naming it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["EXPORTERS", "TracingUnavailable", "setup", "flush", "shutdown", "session"]

EXPORTERS = ("otlp", "console")
_installed: dict[str, Any] = {}  # exporter name -> its span processor, in the provider we set up


class TracingUnavailable(RuntimeError):
    """The OpenTelemetry SDK or exporter asked for is not installed (the message names the extra)."""


def _sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError as exc:
        raise TracingUnavailable(f"tracing needs the OpenTelemetry SDK ({exc}): pip install 'codeagent[otel]'")
    return sdk_trace


def _exporter(name: str) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        elif protocol == "http/protobuf":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
        else:
            raise TracingUnavailable(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use "
                                     "http/protobuf (the default) or grpc")
    except ImportError as exc:
        extra = "opentelemetry-exporter-otlp-proto-grpc" if protocol == "grpc" else "'codeagent[otel]'"
        raise TracingUnavailable(f"the OTLP {protocol} exporter is not installed ({exc}): pip install {extra}")
    return OTLPSpanExporter()


def setup(exporter: str = "otlp", *, service_name: str | None = None) -> Any:
    """Send spans to `exporter` ("otlp" or "console"); returns the tracer provider in use.

    With no provider configured, an SDK one is installed as the global provider; a provider that
    codeagent installed gets the exporter added once; any other provider is left as it is (its
    owner decides where spans go)."""
    if exporter not in EXPORTERS:
        raise ValueError(f"unknown trace exporter {exporter!r}: choose one of {', '.join(EXPORTERS)}")
    sdk_trace = _sdk()
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "codeagent"
        provider = sdk_trace.TracerProvider(resource=Resource.create({"service.name": name}))
        trace.set_tracer_provider(provider)
        _installed.clear()
        _installed["provider"] = provider
    if _installed.get("provider") is not provider or exporter in _installed:
        return provider
    processor_class = SimpleSpanProcessor if exporter == "console" else BatchSpanProcessor
    _installed[exporter] = processor = processor_class(_exporter(exporter))
    provider.add_span_processor(processor)
    return provider


def flush(timeout_s: float = 10.0) -> bool:
    """Export the spans that are still buffered (True when everything went out in time)."""
    from .otel import otel_trace

    api = otel_trace()
    provider = api.get_tracer_provider() if api is not None else None
    force = getattr(provider, "force_flush", None)
    return bool(force(int(timeout_s * 1000))) if callable(force) else True


def shutdown() -> None:
    """Flush and stop the provider codeagent installed (a process's last word)."""
    provider = _installed.get("provider")
    if provider is not None:
        provider.shutdown()


@contextmanager
def session(exporter: str | None) -> Iterator[None]:
    """`with session(args.trace):` around a command: set up, then flush what is buffered at the end."""
    if exporter is None:
        yield
        return
    setup(exporter)
    try:
        yield
    finally:
        flush()
