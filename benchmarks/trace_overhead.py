"""What tracing costs the agent loop, per step, excluding the model (codeagent.tracing).

The CodeAgent loop of benchmarks/agent_overhead.py (ScriptedModel + LocalExecutor; workloads
"tiny": one tool call per step, "demo": 33 tool calls per step) in four modes, each in a fresh
process (a tracer provider is set once per process), interleaved over several rounds:

  off          OpenTelemetry not even imported (a program that traces nothing)
  api-only     opentelemetry-api imported, no provider set (the API's proxy): still off
  provider     an SDK TracerProvider with no exporter: every span is made, none goes anywhere
  otlp         SDK provider + batching OTLP/HTTP exporter to a local receiver (this process)

Figures: per-step medians (ms) of step minus model time, and each mode's ratio to `off`, from
the median of the rounds' medians.

    .venv/bin/python benchmarks/trace_overhead.py [--runs 30] [--steps 10] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

MODES = ("off", "api-only", "provider", "otlp")


def child(mode: str, runs: int, steps: int) -> dict[str, float]:
    """Run in a fresh process: set the mode up, then measure each workload."""
    if mode != "off":
        import opentelemetry.trace as trace
    if mode in ("provider", "otlp"):
        from opentelemetry.sdk.trace import TracerProvider

        provider = TracerProvider()
        if mode == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    from agent_overhead import WORKLOADS, measure

    for workload in WORKLOADS:
        measure(workload, 2, steps)  # warm up
    figures = {w: measure(w, runs, steps) for w in WORKLOADS}
    if mode in ("provider", "otlp"):
        provider.shutdown()
    loaded = any(m.startswith("opentelemetry") for m in sys.modules)
    return {"opentelemetry_loaded": loaded, **{f"{w}_step_ms": f["step_excluding_model_ms"] for w, f in figures.items()},
            **{f"{w}_loop_ms": f["loop_only_ms"] for w, f in figures.items()}}


class _Sink(BaseHTTPRequestHandler):
    received = 0

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        _Sink.received += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def run_child(mode: str, args: argparse.Namespace, endpoint: str) -> dict[str, float]:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--runs", str(args.runs),
                          "--steps", str(args.steps)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.steps)))
        return 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    rounds: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    try:
        for r in range(args.rounds):
            order = MODES if r % 2 == 0 else tuple(reversed(MODES))  # no mode always runs first
            for mode in order:
                rounds[mode].append(run_child(mode, args, endpoint))
    finally:
        server.shutdown()
    keys = [k for k in rounds["off"][0] if k.endswith("_ms")]
    figures = {m: {k: statistics.median(r[k] for r in rounds[m]) for k in keys} for m in MODES}
    for m in MODES:
        figures[m]["opentelemetry_loaded"] = any(r["opentelemetry_loaded"] for r in rounds[m])
    figures["otlp"]["export_requests"] = _Sink.received
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"Agent loop per step, excluding the model (ScriptedModel + LocalExecutor), medians of "
          f"{args.rounds} rounds x {args.runs} runs x {args.steps} steps, in ms (ratio to off)")
    print(f"{'mode':<10}" + "".join(f"{k.replace('_ms', ''):>20}" for k in keys))
    for m in MODES:
        cells = "".join(f"{figures[m][k]:>12.3f} ({figures[m][k] / figures['off'][k]:.2f}x)" for k in keys)
        print(f"{m:<10}{cells}")
    print(f"tiny: 1 tool call per step; demo: 33 tool calls per step. step = loop + executor; loop = step "
          f"minus executor. otlp: {_Sink.received} export requests received; off loaded OpenTelemetry: "
          f"{figures['off']['opentelemetry_loaded']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
