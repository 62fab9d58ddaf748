"""The `codeagent` command in a real subprocess, against a real local chat-completions server."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from openai_stub import OpenAIStub
from unavailable import unavailable

from codeagent.cli import demo

ROOT = Path(__file__).resolve().parents[1]


def codeagent(*args: str, env: dict[str, str] | None = None, stdin: str | None = None, timeout: float = 60):
    full_env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "codeagent", *args], cwd=ROOT, env=full_env, input=stdin,
        capture_output=True, text=True, timeout=timeout,
    )


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


@pytest.fixture
def tools_module(tmp_path):
    (tmp_path / "cli_tools.py").write_text(textwrap.dedent('''
        from codeagent import tool

        @tool
        def multiply(a: int, b: int) -> int:
            """Multiply two integers."""
            return a * b

        TOOLS = [multiply]
    '''))
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def test_run_json_streams_ndjson_events(tools_module):
    replies = [code("x = multiply(6, 7)\nprint(x)"), code("final_answer(x)")]
    with OpenAIStub(replies) as stub:
        proc = codeagent("run", "What is 6 times 7?", "--model", "stub-model", "--base-url", stub.base_url,
                         "--tools", "cli_tools:TOOLS", "--json", env=tools_module)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["type"] == "run_start" and events[0]["tools"] == ["multiply"]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "success" and events[-1]["output"] == 42
    assert any(e["type"] == "observation" and e["logs"] == "42\n" for e in events)
    assert "def multiply(a: int, b: int) -> int:" in stub.requests[0]["messages"][0]["content"]


def test_run_human_view_shows_steps_and_saves(tools_module, tmp_path):
    replies = [code("print(multiply(3, 3))"), code("final_answer('nine')")]
    saved = tmp_path / "run.json"
    with OpenAIStub(replies, system_role=False) as stub:
        proc = codeagent("run", "3*3?", "--model", "m", "--base-url", stub.base_url, "--tools", "cli_tools:multiply",
                         "--no-system-role", "--max-steps", "3", "--save", str(saved), env=tools_module)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "── step 1/3 ──" in out and "│ print(multiply(3, 3))" in out and "│ 9" in out
    assert "✓ answer: nine" in out
    assert json.loads(saved.read_text())["output"] == "nine"


def test_run_failure_exit_status_and_usage_errors():
    with OpenAIStub([code("print(1)")]) as stub:
        proc = codeagent("run", "t", "--model", "m", "--base-url", stub.base_url, "--max-steps", "1")
    assert proc.returncode == 1 and "✗ max_steps: no final answer after 1 steps" in proc.stdout
    proc = codeagent("run", "t", "--base-url", "http://127.0.0.1:9/v1")
    assert proc.returncode == 2 and "--model" in proc.stderr
    proc = codeagent("run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tools", "nope_module:x")
    assert proc.returncode == 2 and "cannot import 'nope_module'" in proc.stderr
    proc = codeagent("run", "t", "--model", "m", "--executor", "podman")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_exec_runs_a_file(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import math\nvalues = [math.sqrt(n) for n in (4, 9)]\nprint(values)\nsum(values)\n")
    proc = codeagent("exec", str(script))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[2.0, 3.0]\nout: 5.0\n"
    proc = codeagent("exec", str(script), "--json")
    result = json.loads(proc.stdout)
    assert result["output"] == 5.0 and result["logs"] == "[2.0, 3.0]\n" and result["error"] is None


def test_exec_reports_errors_and_reads_stdin(tmp_path):
    proc = codeagent("exec", "-", stdin="print('before')\n1 / 0\n")
    assert proc.returncode == 1 and proc.stdout == "before\n" and "ZeroDivisionError" in proc.stderr
    proc = codeagent("exec", "-", stdin="final_answer([1, 2])\n")
    assert proc.returncode == 0 and "final answer: [1, 2]" in proc.stdout
    proc = codeagent("exec", str(tmp_path / "missing.py"))
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_demo_without_endpoint_is_scripted_and_correct():
    proc = codeagent("demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "SCRIPTED run" in out and "(scripted)" in out
    assert "1 code action(s) · 33 tool calls" in out and "answer matches the expected" in out
    assert "'top_category': 'outdoor'" in out


def test_demo_json_and_real_endpoint():
    with OpenAIStub([demo.SCRIPTED_REPLY]) as stub:
        proc = codeagent("demo", "--json", env={"OPENAI_BASE_URL": stub.base_url, "CODEAGENT_MODEL": "stub-model"})
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["scripted"] is False and events[0]["model"] == "stub-model"
    assert events[-1]["output"] == demo.expected_answer()
    assert stub.requests and stub.requests[0]["model"] == "stub-model"


def test_fuzz_subcommand_delegates_or_explains():
    proc = codeagent("fuzz", "--help")
    if importlib.util.find_spec("codeagent.cli.fuzz") is None:
        assert proc.returncode == 2 and "fuzzing module is not available" in proc.stderr
    else:
        assert proc.returncode == 0 and "usage: codeagent fuzz" in proc.stdout


def test_help_lists_commands():
    proc = codeagent("--help")
    assert proc.returncode == 0
    for command in ("run", "exec", "demo", "fuzz"):
        assert command in proc.stdout


def test_console_script():
    script = Path(sys.executable).with_name("codeagent")
    if not script.exists():
        unavailable("the project is not installed with its console script in this environment")
    proc = subprocess.run([str(script), "exec", "-"], input="print(6 * 7)\n", capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout == "42\n"


def test_run_and_exec_with_the_subprocess_executor(tools_module, tmp_path):
    replies = [code("print(multiply(6, 7))"), code("final_answer(multiply(6, 7))")]
    with OpenAIStub(replies) as stub:
        proc = codeagent("run", "6*7?", "--model", "m", "--base-url", stub.base_url, "--tools", "cli_tools:TOOLS",
                         "--executor", "subprocess", "--json", env=tools_module)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["output"] == 42 and events[0]["executor"] == "SubprocessExecutor"
    script = tmp_path / "job.py"
    script.write_text("print('in a worker')\n6 * 7\n")
    proc = codeagent("exec", str(script), "--executor", "subprocess")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "in a worker\nout: 42\n" and "subprocess executor" in proc.stderr
