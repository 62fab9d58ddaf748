"""OpenTelemetry traces of agent runs, in the GenAI semantic conventions; nothing without a provider.

    from opentelemetry import trace                      # any provider: Phoenix's register(),
    trace.set_tracer_provider(my_provider)               # opentelemetry-instrument, your own
    CodeAgent(model, tools=[add]).run("...")             # -> invoke_agent / step / chat /
                                                         #    execute_code / execute_tool spans

    codeagent run --trace otlp "..."                     # or from the command line (codeagent[otel])
    run_batch(..., trace="otlp")                         # one trace per task, linked to the batch

The span tree and its attributes: `codeagent.tracing.spans`; tool spans and why they open in the
Tool wrapper: `codeagent.tracing.tools`; the conventions' shape and content capture (off unless
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): `codeagent.tracing.content`; where
spans go: `codeagent.tracing.export`; batches: `codeagent.tracing.batch`; the conventions' token
and duration histograms (to a configured meter provider): `codeagent.tracing.metrics`. codeagent depends on
`opentelemetry-api` only when a provider is configured, and never imports it to find out.
"""

from __future__ import annotations

from .content import configure
from .export import EXPORTERS, TracingUnavailable, flush, session, setup, shutdown
from .otel import TRACER_NAME, enabled

__all__ = ["setup", "session", "flush", "shutdown", "configure", "enabled", "EXPORTERS", "TRACER_NAME",
           "TracingUnavailable"]
