"""The `--trace otlp|console` option of the commands, and the session it opens around a command."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from .export import EXPORTERS, TracingUnavailable, setup

__all__ = ["add_trace_option", "trace_session", "TracingUnavailable"]


def add_trace_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace", choices=EXPORTERS, default=None,
        help="send OpenTelemetry spans of the run: otlp (to $OTEL_EXPORTER_OTLP_ENDPOINT, default "
             "http://localhost:4318) or console (stderr); needs codeagent[otel] (default: no traces)")


@contextmanager
def trace_session(exporter: str | None) -> Iterator[None]:
    """Tracing around one command, flushed at its end; a missing SDK raises TracingUnavailable
    with the flag in its message (the command's usage error)."""
    if exporter is None:
        yield
        return
    try:
        setup(exporter)
    except TracingUnavailable as exc:
        raise TracingUnavailable(f"--trace {exporter}: {exc}")
    from .export import flush

    try:
        yield
    finally:
        flush()
