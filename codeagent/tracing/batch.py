"""Traces of a batch: one trace per task, each linked to the batch that ran it.

The driver opens a `batch` span (its own trace) when tracing is on and hands its context to every
task as a W3C `traceparent` in the task record (`TRACE_KEY`, taken out again before the task is
read); the worker, a pool process or a Ray actor, makes each task the root of a new trace,
`batch_task` with `codeagent.batch.task_id`, linked to the batch span, and the run's
`invoke_agent` nests under it. A worker has no tracer provider of its own: `run_batch(trace=...)`
gives it the exporter to set up and the driver's `OTEL_*` variables (a Ray node may not share the
driver's environment). Each task's spans are flushed when it ends, so a worker killed at the next
task's deadline loses nothing already finished.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .otel import otel_trace, set_error, tracer

__all__ = ["TRACE_KEY", "batch_span", "task_span", "end_task", "worker_config", "start_worker"]

TRACE_KEY = "_codeagent_trace"


def worker_config(exporter: str | None) -> dict[str, Any] | None:
    """What a worker needs to trace like the driver: the exporter and the OTEL_* variables."""
    if exporter is None:
        return None  # (an unknown exporter is refused by export.setup, which the driver calls)
    return {"exporter": exporter, "env": {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}}


def start_worker(config: Mapping[str, Any] | None) -> None:
    """In a worker: take the driver's OTEL_* settings and set up its exporter."""
    if not config:
        return
    for key, value in dict(config.get("env") or {}).items():
        if isinstance(key, str) and key.startswith("OTEL_") and isinstance(value, str):
            os.environ.setdefault(key, value)
    from .export import setup

    setup(str(config.get("exporter", "otlp")))


@contextmanager
def batch_span(backend: str, workers: int, tasks: int) -> Iterator[dict[str, str] | None]:
    """The driver's span around a batch; yields the carrier for the task records (None: off)."""
    found = tracer()
    if found is None:
        yield None
        return
    api = otel_trace()
    attributes = {"codeagent.batch.backend": backend, "codeagent.batch.workers": workers,
                  "codeagent.batch.tasks": tasks}
    with found.start_as_current_span("batch", kind=api.SpanKind.INTERNAL, attributes=attributes) as span:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, context=api.set_span_in_context(span))
        yield carrier


@contextmanager
def task_span(carrier: Any, task_id: str) -> Iterator[Any]:
    """A worker's span around one task: the root of the task's trace, linked to its batch."""
    found = tracer()
    if found is None:
        yield None
        return
    api = otel_trace()
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    links = []
    attributes = {"codeagent.batch.task_id": task_id}
    if isinstance(carrier, Mapping) and all(isinstance(v, str) for v in carrier.values()):
        batch = api.get_current_span(TraceContextTextMapPropagator().extract(dict(carrier))).get_span_context()
        if batch.is_valid:
            links.append(api.Link(batch, {"codeagent.link": "batch"}))
            # also as an attribute: some backends (Phoenix) keep no links
            attributes["codeagent.batch.trace_id"] = api.format_trace_id(batch.trace_id)
    try:
        with found.start_as_current_span("batch_task", context=Context(), kind=api.SpanKind.INTERNAL, links=links,
                                         attributes=attributes,
                                         record_exception=False, set_status_on_exception=False) as span:
            yield span
    finally:
        from .export import flush

        flush()


def end_task(span: Any, row: Mapping[str, Any]) -> None:
    """The task's outcome on its span: status as the batch records it."""
    if span is None:
        return
    status = str(row.get("status"))
    span.set_attribute("codeagent.batch.status", status)
    if status != "success":
        set_error(span, status)
