"""A new user's first day (issue 46): completion in a REPL, no runpy warning, flags that match the
API and say what they do, a silent model server given up on in time, a batch that will not mix
results of other settings, and a suite that runs the same whatever the shell has set."""

from __future__ import annotations

import ast
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import PRODUCT_SETTINGS
from openai_stub import OpenAIStub

import codeagent
import executors
from codeagent.models.openai_model import DEFAULT_TIMEOUT_S, ModelError, OpenAIModel

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = [{"role": "user", "content": "hi"}]


def cli(*args: str, cwd: Path = ROOT, entry: list[str] | None = None, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = entry or [sys.executable, "-m", "codeagent"]
    return subprocess.run([*command, *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout)


def code(body: str) -> str:
    return f"<code>\n{body}\n</code>"


# ------------------------------------------------------------------------------ completion, runpy


def test_dir_lists_the_public_api_for_completion():
    names = dir(codeagent)
    assert {"CodeAgent", "OpenAIModel", "ScriptedModel", "tool", "auto_agent", "parsing", "mcp"} <= set(names)
    assert set(codeagent.__all__) == set(codeagent._LAZY) and set(codeagent.__all__) <= set(names)
    assert {"LocalExecutor", "SubprocessExecutor", "DockerExecutor", "Access", "Limits", "testing"} <= set(dir(executors))
    assert codeagent.parsing.parse_code("<code>x = 1</code>") == "x = 1"  # a subpackage, as an attribute


def _modules_with_a_main() -> list[str]:
    found = []
    for package in ("codeagent", "executors"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8"):
                found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


# run by path (`python -I packages.py`, in an image's interpreter), never with -m
BY_PATH = {"executors.docker.packages"}


def test_no_module_meant_for_python_m_prints_a_runpy_warning():
    modules = ["codeagent", *[m for m in _modules_with_a_main() if m not in BY_PATH]]
    for module in modules:
        proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        assert "RuntimeWarning" not in proc.stderr, (module, proc.stderr[-500:])


# ------------------------------------------------------------------------------ the shell's settings


def _settings_the_product_reads() -> set[str]:
    names: set[str] = set()
    for package in ("codeagent", "executors"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        re.fullmatch(r"(OPENAI|CODEAGENT|OTEL|RAY)_[A-Z0-9_]*", node.value):
                    names.add(node.value)
    return names


# Read by the product, harmless to the suite: set by the product itself for its children, or a
# place a test chooses explicitly.
HARMLESS = {"CODEAGENT_FUZZ_CANARY": "the fuzzer plants it itself, a fresh value per session",
            "CODEAGENT_DOCKER_SOCK": "where the private engine listens: the engine the suite uses is found "
                                     "the same way with or without it (test_docker.py)",
            "CODEAGENT_PYTHON": "set by `codeagent docker` for the engine script it starts"}


def test_every_setting_the_product_reads_is_cleared_for_the_suite():
    for name in sorted(_settings_the_product_reads()):
        assert name.startswith(PRODUCT_SETTINGS) or name in HARMLESS, (
            f"{name} changes what the product does: add it to tests/conftest.py PRODUCT_SETTINGS")
        if name.startswith(PRODUCT_SETTINGS):
            assert name not in os.environ or name in ("CODEAGENT_CANARY",)


def test_the_suite_ignores_a_shell_that_points_at_a_model(tmp_path):
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-from-the-shell",
           "CODEAGENT_AGENT_MODE": "tool_calling", "CODEAGENT_MODEL": "from-the-shell"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           f"--basetemp={tmp_path / 'bt'}", "tests/test_auto_agent.py"],
                          cwd=ROOT, env={**os.environ, **env, "PYTEST_DEBUG_TEMPROOT": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]


# ------------------------------------------------------------------------------ the command line


def test_run_has_the_api_modes_and_says_what_retries_retry():
    text = " ".join(cli("run", "--help").stdout.split())
    for mode in ("code", "single_call", "tool_calling", "auto"):
        assert mode in text
    assert "--model-retries N, --retries N" in text and "not after a silent server" in text
    assert "current directory" in text  # where --tools MODULE is looked for
    batch = " ".join(cli("batch", "--help").stdout.split())
    assert "--task-retries N, --retries N" in batch and "--keep-results" in batch


def test_run_in_tool_calling_mode_runs_no_code():
    replies = [{"tool_calls": [{"name": "final_answer", "arguments": {"answer": "42"}}]}]
    with OpenAIStub(replies) as stub:
        proc = cli("run", "what is 6 * 7?", "--model", "m", "--base-url", stub.base_url, "--mode", "tool_calling",
                   "--json", "--read", str(ROOT))
        sent = stub.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"output": "42"' in proc.stdout.splitlines()[-1] or "42" in proc.stdout.splitlines()[-1]
    assert sent and sent[0].get("tools")  # native tool calling: the tools went as schemas
    assert "--read ignored: --mode tool_calling runs no code" in proc.stderr


def test_tools_come_from_the_current_directory_with_the_installed_command_too(tmp_path):
    (tmp_path / "my_first_tools.py").write_text(
        "def shout(text: str) -> str:\n    '''Say it louder.'''\n    return text.upper()\n", encoding="utf-8")
    entry = Path(sys.executable).with_name("codeagent")
    if not entry.exists():
        pytest.skip("no installed `codeagent` command beside this Python")
    with OpenAIStub([code("final_answer(shout('hi'))")]) as stub:
        for command in ([str(entry)], [sys.executable, "-m", "codeagent"]):
            stub.add(code("final_answer(shout('hi'))"))
            proc = cli("run", "shout hi", "--tools", "my_first_tools:shout", "--model", "m", "--base-url",
                       stub.base_url, "--executor", "local", cwd=tmp_path, entry=command)
            assert proc.returncode == 0 and "HI" in proc.stdout, (command, proc.stdout, proc.stderr)
    with OpenAIStub([code("final_answer(shout('hi'))")]) as stub:  # and the folder may be granted for writing
        proc = cli("run", "shout hi", "--tools", "my_first_tools:shout", "--model", "m", "--base-url",
                   stub.base_url, "--executor", "local", "--write", ".", cwd=tmp_path, entry=[str(entry)])
    assert proc.returncode == 0 and "HI" in proc.stdout, (proc.stdout, proc.stderr)
    bad = cli("run", "x", "--tools", "not_here_xyz:f", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
              cwd=tmp_path)
    assert bad.returncode == 2 and f"in the current directory, {tmp_path}" in bad.stderr


# ------------------------------------------------------------------------------ a silent model server


class _Silent(http.server.BaseHTTPRequestHandler):
    """Accepts a request and says nothing for `silence` seconds, counting requests."""

    requests = 0
    silence = 30.0

    def do_POST(self) -> None:  # noqa: N802
        type(self).requests += 1
        time.sleep(self.silence)

    def log_message(self, *args: object) -> None:
        pass


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Answers a chat completion a few bytes at a time, `gap` seconds apart, for longer in all than
    the client's read timeout (a slow model whose reply keeps coming)."""

    gap = 0.3

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "slow but here"},
                                        "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = len(body) // 8 + 1
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            self.wfile.flush()
            time.sleep(self.gap)

    def log_message(self, *args: object) -> None:
        pass


def _serve(handler: type) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_a_silent_server_ends_the_request_after_the_read_timeout_not_four_times_it():
    assert DEFAULT_TIMEOUT_S <= 120
    handler = type("Silent", (_Silent,), {"requests": 0, "silence": 30.0})
    server, url = _serve(handler)
    try:
        model = OpenAIModel("m", base_url=url, timeout=1.0, max_retries=3)
        t0 = time.monotonic()
        with pytest.raises(ModelError) as info:
            model.complete(MESSAGES)
        took = time.monotonic() - t0
    finally:
        server.shutdown()
        server.server_close()
    assert handler.requests == 1 and took < 5  # before: 4 requests, 4 × 1 s of silence plus backoff
    assert "sent nothing for 1 s" in str(info.value) and "--model-timeout" in str(info.value)


def test_a_reply_that_keeps_coming_is_not_cut_by_the_read_timeout():
    server, url = _serve(_Trickle)  # 8 pieces 0.3 s apart: ~2.4 s in all, never 1 s of silence
    try:
        t0 = time.monotonic()
        reply = OpenAIModel("m", base_url=url, timeout=1.0, max_retries=0).complete(MESSAGES)
        took = time.monotonic() - t0
    finally:
        server.shutdown()
        server.server_close()
    assert reply.text == "slow but here" and took > 1.0


def test_an_unreachable_server_is_known_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ModelError, match="cannot reach"):
        OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0).complete(MESSAGES)
    assert time.monotonic() - t0 < 10


def test_errors_that_pass_are_still_retried():
    with OpenAIStub([{"status": 503}, {"status": 429}, "fine"]) as stub:
        assert OpenAIModel("m", base_url=stub.base_url, max_retries=2).complete(MESSAGES).text == "fine"
        assert stub.responses == [503, 429, 200]


# ------------------------------------------------------------------------------ batch resumes


def _tasks(path: Path, n: int = 2) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "task": "t", "script": [code(f"final_answer({i})")]}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def test_a_batch_resumed_with_other_settings_is_refused_and_says_which(tmp_path):
    tasks, out = _tasks(tmp_path / "t.jsonl"), tmp_path / "out"
    base = ["batch", str(tasks), "--out", str(out), "--factory", "codeagent.batch.testing:scripted_agent",
            "--progress", "none", "--executor", "local"]
    first = cli(*base)
    assert first.returncode == 0, first.stderr
    same = cli(*base)
    assert same.returncode == 0 and "2 skipped" in same.stdout, same.stdout + same.stderr
    changed = cli(*base[:-1], "subprocess", "--timeout", "9", "--task-timeout", "50")
    assert changed.returncode == 2, changed.stdout + changed.stderr
    said = changed.stderr
    assert 'executor: "local" → "subprocess"' in said and "executor_options.timeout_s: null → 9" in said, said
    assert "timeout_s: 600.0 → 50.0" in said and "--keep-results" in said
    kept = cli(*base[:-1], "subprocess", "--timeout", "9", "--task-timeout", "50", "--keep-results")
    assert kept.returncode == 0 and "2 skipped" in kept.stdout, kept.stdout + kept.stderr
    settings = json.loads((out / "batch.json").read_text())["settings"]
    assert settings["executor"] == "subprocess" and settings["timeout_s"] == 50


# ------------------------------------------------------------------------------ Docker from a wheel


def test_docker_setup_without_an_engine_says_how_to_start_one(tmp_path):
    proc = cli("docker", "setup", "--docker-url", f"unix://{tmp_path}/no-engine.sock")
    assert proc.returncode == 1, proc.stderr
    said = " ".join(proc.stderr.split())
    assert "no Docker engine answers" in said and "codeagent docker setup --start-engine" in said
    assert "root or sudo" in said and "DOCKER_HOST" in said


def test_the_engine_script_travels_with_the_package():
    from executors.docker import ENGINE_SCRIPT

    text = ENGINE_SCRIPT.read_text(encoding="utf-8")
    assert ENGINE_SCRIPT.parent.name == "docker" and ENGINE_SCRIPT.parent.parent.name == "executors"
    assert "dockerd" in text and "--iptables=false" in text
    wrapper = (ROOT / "scripts" / "docker-engine.sh").read_text(encoding="utf-8")
    assert "executors/docker/engine.sh" in wrapper and "codeagent docker setup" in wrapper
