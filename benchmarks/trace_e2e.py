"""Traces end to end against a real backend: Arize Phoenix (`phoenix serve`), queried over its API.

Starts Phoenix on 127.0.0.1 (free ports, a temporary working directory), runs a batch of 5
scripted tasks on the local process pool with `trace="otlp"` pointed at it, then asks Phoenix's
REST API for the project's traces and spans and checks that the batch arrived as 5 task traces
(one `batch_task` root each, with its task id, its `invoke_agent` run under it, linked to the
batch) plus the batch's own trace. Prints how long Phoenix took to start and the spans to arrive.
Run by `scripts/trace-e2e`, which installs Phoenix into its own venv (.phoenix/venv) first.

    .venv/bin/python benchmarks/trace_e2e.py --phoenix .phoenix/venv/bin/phoenix [--tasks 5]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from weak_model_e2e import stop_server  # noqa: E402  (one way to stop a server we started)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"phoenix serve exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - t0
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"Phoenix did not answer {url} within {timeout_s:g} s")


def phoenix_spans(base: str, name: str) -> list[dict[str, Any]]:
    out, cursor = [], None
    while True:
        query = "?" + urllib.parse.urlencode({"name": name, "limit": 1000, **({"cursor": cursor} if cursor else {})})
        page = get(f"{base}/v1/projects/default/spans/otlpv1{query}")
        out += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def attribute(span: dict[str, Any], key: str) -> Any:
    for item in span.get("attributes", []):
        if item["key"] == key:
            return next((v for v in item["value"].values() if v is not None), None)
    return None


def run(phoenix: str, tasks: int, start_timeout: float) -> dict[str, Any]:
    from codeagent.batch import run_batch
    from codeagent.batch.testing import scripted_tasks

    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="phoenix-") as work:
        env = {**os.environ, "PHOENIX_WORKING_DIR": work, "PHOENIX_PORT": str(port), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}
        log = open(Path(work) / "phoenix.log", "wb")
        proc = subprocess.Popen([phoenix, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            started = wait_up(f"{base}/healthz", proc, start_timeout)
            os.environ.update({"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_SERVICE_NAME": "codeagent-e2e"})
            records = scripted_tasks(tasks)
            t0 = time.perf_counter()
            summary = run_batch("codeagent.batch.testing:scripted_agent", records, out=Path(work) / "batch",
                                workers=2, progress=None, trace="otlp")
            from codeagent.tracing import flush

            flush()
            batch_s = time.perf_counter() - t0
            deadline = time.perf_counter() + 60
            while True:  # Phoenix ingests asynchronously: wait for every task's root span
                roots = phoenix_spans(base, "batch_task")
                if len(roots) >= tasks or time.perf_counter() > deadline:
                    break
                time.sleep(0.5)
            arrived_s = time.perf_counter() - t0
            runs = phoenix_spans(base, "invoke_agent CodeAgent")
            batches = phoenix_spans(base, "batch")
            traces = get(f"{base}/v1/projects/default/traces?limit=1000")["data"]
        finally:
            stop_server(proc)
            log.close()
    ids = sorted(str(attribute(s, "codeagent.batch.task_id")) for s in roots)
    task_traces = {s["trace_id"] for s in roots}
    nested = sum(1 for r in runs if any(r.get("parent_span_id") == s["span_id"] for s in roots))
    # Phoenix keeps no span links: the task spans name their batch's trace in an attribute too
    linked = sum(1 for s in roots if batches and attribute(s, "codeagent.batch.trace_id") == batches[0]["trace_id"])
    checks = {
        "5 task traces": len(task_traces) == tasks and ids == sorted(t["id"] for t in records),
        "each run under its task": nested == tasks,
        "each task names the batch's trace": linked == tasks,
        "traces in Phoenix = tasks + the batch": len(traces) == tasks + 1,
        "batch succeeded as scripted": summary.ran == tasks,
    }
    return {"phoenix_start_s": round(started, 2), "batch_s": round(batch_s, 2), "spans_arrived_s": round(arrived_s, 2),
            "traces": len(traces), "task_traces": len(task_traces), "task_ids": ids, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phoenix", required=True, help="the phoenix executable (scripts/trace-e2e installs it)")
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--start-timeout", type=float, default=180.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args.phoenix, args.tasks, args.start_timeout)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"Phoenix started in {figures['phoenix_start_s']} s; the batch of {args.tasks} tasks ran in "
              f"{figures['batch_s']} s; its spans were queryable {figures['spans_arrived_s']} s after it started")
        print(f"Phoenix holds {figures['traces']} traces: {figures['task_traces']} task traces "
              f"({', '.join(figures['task_ids'])}) + the batch")
        for check, ok in figures["checks"].items():
            print(f"  {'ok  ' if ok else 'FAIL'} {check}")
    return 0 if all(figures["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
