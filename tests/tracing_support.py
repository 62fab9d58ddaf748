"""Span capture for the tracing tests.

- `spans` fixture: the SDK's TracerProvider with an InMemorySpanExporter installed as the global
  provider for one test, then taken away again (the way opentelemetry's own test utilities reset
  the global: a provider set by one test must not trace the tests after it).
- `Tree`: the finished spans as a tree (by name, parent, children) for assertions.
- `OTLPSink`: an OTLP/HTTP endpoint on 127.0.0.1 that decodes what exporters send (protobuf, with
  opentelemetry-proto) into plain dicts, for tests of the exporter path and of batch workers in
  other processes. (The end-to-end run against a real backend, Phoenix, is scripts/trace-e2e.)
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@contextmanager
def global_provider(module: Any, name: str, install: Any, provider: Any) -> Iterator[Any]:
    """`provider` as OpenTelemetry's global (`module.<name>`, set with `install`) for a block, then
    none again, as opentelemetry's test utilities reset it."""
    from opentelemetry.util._once import Once

    assert getattr(module, name) is None, f"another test left a global {name} behind"
    setattr(module, f"{name}_SET_ONCE", Once())
    install(provider)
    try:
        yield provider
    finally:
        provider.shutdown()
        setattr(module, name, None)
        setattr(module, f"{name}_SET_ONCE", Once())


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with global_provider(trace, "_TRACER_PROVIDER", trace.set_tracer_provider, provider):
        yield exporter


class Tree:
    """Finished spans, navigable by name and parent."""

    def __init__(self, finished: Any) -> None:
        self.all = list(finished)
        self.by_id = {s.context.span_id: s for s in self.all}

    def named(self, name: str) -> list[Any]:
        return sorted((s for s in self.all if s.name == name), key=lambda s: s.start_time)

    def one(self, name: str) -> Any:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.outline()}"
        return found[0]

    def children(self, span: Any, name: str | None = None) -> list[Any]:
        kids = [s for s in self.all if s.parent is not None and s.parent.span_id == span.context.span_id]
        return sorted((s for s in kids if name is None or s.name == name), key=lambda s: s.start_time)

    def parent(self, span: Any) -> Any:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def roots(self) -> list[Any]:
        return [s for s in self.all if s.parent is None]

    def outline(self) -> str:
        lines: list[str] = []

        def walk(span: Any, depth: int) -> None:
            lines.append("  " * depth + f"{span.name} [{span.status.status_code.name}]")
            for child in self.children(span):
                walk(child, depth + 1)

        for root in self.roots():
            walk(root, 0)
        return "\n".join(lines)

    def values(self, skip: tuple[str, ...] = ()) -> list[str]:
        """Every attribute (but `skip`) and event value of every span, as text (for leak checks)."""
        out = []
        for s in self.all:
            out += [str(v) for k, v in s.attributes.items() if k not in skip]
            out += [str(v) for e in s.events for v in e.attributes.values()]
            out.append(str(s.status.description or ""))
        return out


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


class OTLPSink:
    """POST /v1/traces on 127.0.0.1: every span received, as {trace_id, span_id, parent, name,
    attributes, links}."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                sink.receive(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def receive(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource in request.resource_spans:
            service = {a.key: _value(a.value) for a in resource.resource.attributes}.get("service.name")
            for scope in resource.scope_spans:
                for span in scope.spans:
                    found.append({
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex() or None, "name": span.name, "service": service,
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                        "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                                  for link in span.links],
                        "status": span.status.code,
                    })
        with self._lock:
            self.spans.extend(found)

    def named(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [s for s in self.spans if s["name"] == name]

    def __enter__(self) -> OTLPSink:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
