"""The `--trace otlp|console` option of the commands, and the session it opens around a command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .export import EXPORTERS, TracingUnavailable, session, setup

__all__ = ["add_trace_option", "trace_session", "TracingUnavailable"]


def add_trace_option(parser: Any, what: str = "of the run") -> None:
    parser.add_argument(
        "--trace", choices=EXPORTERS, default=None,
        help=f"send OpenTelemetry spans {what}: otlp (to $OTEL_EXPORTER_OTLP_ENDPOINT, default "
             "http://localhost:4318) or console (stderr); needs codeagent[otel] (default: no traces)")


@contextmanager
def trace_session(exporter: str | None) -> Iterator[None]:
    """`export.session` for a command: a missing SDK raises TracingUnavailable with the flag in
    its message (the command's usage error)."""
    if exporter is not None:
        try:
            setup(exporter)  # (session's own setup then finds it done)
        except TracingUnavailable as exc:
            raise TracingUnavailable(f"--trace {exporter}: {exc}") from None
    with session(exporter):
        yield
