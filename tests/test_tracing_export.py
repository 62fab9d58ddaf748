"""Spans leaving the process: `codeagent run --trace otlp|console`, and batches whose workers (pool
processes, Ray actors) export one trace per task, linked to the batch. The receiver is an OTLP/HTTP
endpoint on 127.0.0.1 (tests/tracing_support.OTLPSink); the run against a real backend, Arize
Phoenix, is `scripts/trace-e2e` (too slow to install and start for the default suite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openai_stub import OpenAIStub
from ray_session import local_ray
from tracing_support import OTLPSink
from unavailable import unavailable

from codeagent.batch import run_batch
from codeagent.batch.testing import scripted_tasks

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = "codeagent.batch.testing:scripted_agent"


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120)


def otlp_env(sink: OTLPSink) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint, "OTEL_SERVICE_NAME": "codeagent-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100"}


def test_run_with_trace_otlp_exports_the_run(tmp_path):
    with OpenAIStub([code("final_answer(6 * 7)")]) as stub, OTLPSink() as sink:
        out = cli("run", "What is 6 * 7?", "--model", "m", "--base-url", stub.base_url, "--trace", "otlp",
                  env=otlp_env(sink))
        assert out.returncode == 0, out.stderr
        names = sorted(s["name"] for s in sink.spans)
    assert names == ["chat m", "execute_code", "invoke_agent CodeAgent", "step 1"]
    assert {s["service"] for s in sink.spans} == {"codeagent-test"}
    assert len({s["trace_id"] for s in sink.spans}) == 1


def test_run_with_trace_console_writes_spans_to_stderr_and_keeps_stdout(tmp_path):
    with OpenAIStub([code("final_answer(6 * 7)")]) as stub:
        out = cli("run", "What is 6 * 7?", "--model", "m", "--base-url", stub.base_url, "--trace", "console",
                  "--json", env={})
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]  # stdout is NDJSON only
    assert events[-1]["type"] == "run_end"
    assert '"name": "invoke_agent CodeAgent"' in out.stderr and '"name": "execute_code"' in out.stderr


def test_an_unsupported_otlp_protocol_is_a_usage_error():
    out = cli("run", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--trace", "otlp",
              env={"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"})
    assert out.returncode == 2
    assert "--trace otlp" in out.stderr and "OTEL_EXPORTER_OTLP_PROTOCOL" in out.stderr


def check_batch_traces(sink: OTLPSink, ids: list[str]) -> None:
    (batch,) = sink.named("batch")
    tasks = sink.named("batch_task")
    assert sorted(t["attributes"]["codeagent.batch.task_id"] for t in tasks) == sorted(ids)
    assert len({t["trace_id"] for t in tasks}) == len(ids)  # one trace per task
    assert batch["trace_id"] not in {t["trace_id"] for t in tasks}
    for t in tasks:
        assert t["parent"] is None
        assert t["links"] == [{"trace_id": batch["trace_id"], "span_id": batch["span_id"]}]
        assert t["attributes"]["codeagent.batch.trace_id"] == batch["trace_id"]
        runs = [s for s in sink.named("invoke_agent CodeAgent") if s["parent"] == t["span_id"]]
        assert len(runs) == 1 and runs[0]["trace_id"] == t["trace_id"]
    assert batch["attributes"]["codeagent.batch.tasks"] == len(ids)


@pytest.fixture
def traced_driver(monkeypatch):
    """The driver's global provider for run_batch(trace=...), taken away after the test."""
    from opentelemetry import trace
    from opentelemetry.util._once import Once

    from codeagent.tracing import export as setup_module

    assert trace._TRACER_PROVIDER is None
    yield monkeypatch
    provider = trace._TRACER_PROVIDER
    if provider is not None:
        provider.shutdown()
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    setup_module._installed.clear()


def test_a_local_batch_of_five_tasks_arrives_as_five_traces(traced_driver, tmp_path):
    tasks = scripted_tasks(5)
    with OTLPSink() as sink:
        for key, value in otlp_env(sink).items():
            traced_driver.setenv(key, value)
        summary = run_batch(SCRIPTED, tasks, out=tmp_path, workers=2, progress=None, trace="otlp")
        from codeagent.tracing import flush

        flush()
        assert summary.ran == 5
        check_batch_traces(sink, [t["id"] for t in tasks])
        statuses = {t["attributes"]["codeagent.batch.task_id"]: t["attributes"]["codeagent.batch.status"]
                    for t in sink.named("batch_task")}
    assert statuses == {r.id: r.status for r in summary.rows}


def test_a_ray_batch_of_five_tasks_arrives_as_five_traces(traced_driver, tmp_path):
    from codeagent.batch.backends.ray_actors import ray_available

    problem = ray_available()
    if problem:
        unavailable(f"the Ray backend tests need Ray: {problem}")
    tasks = scripted_tasks(5)
    with OTLPSink() as sink:
        for key, value in otlp_env(sink).items():
            traced_driver.setenv(key, value)
        with local_ray():
            run_batch(SCRIPTED, tasks, out=tmp_path, backend="ray", workers=2, progress=None, trace="otlp")
        from codeagent.tracing import flush

        flush()
        check_batch_traces(sink, [t["id"] for t in tasks])
