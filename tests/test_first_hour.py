"""A user's first hour: a mistake gets one clear line that names the fix, never a traceback.

The command line runs in real subprocesses (usage mistakes: exit status 2, one line on stderr);
constructors refuse what would only fail at run time; a failed run can be made to raise; the
messages say each thing once; a plain test run reports the Docker skips in one line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from openai_stub import OpenAIStub

from codeagent import (
    CodeAgent,
    OpenAIModel,
    RunFailed,
    RunResult,
    ScriptedModel,
    ToolCallingAgent,
    tool,
)
from codeagent.cli.main import build_parser
from codeagent.events import Event, RunEnd
from codeagent.models.openai_model import ModelError
from executors.importable import NotImportable

ROOT = Path(__file__).resolve().parents[1]
ABSENT = "codeagent_not_installed_xyz"


def codeagent(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=ROOT, env=full_env, input=stdin,
                          capture_output=True, timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


def closed_port_url() -> str:
    """A local URL where nothing listens (a port just released by the kernel)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("first-hour")
    (folder / "latin1.py").write_bytes('name = "Jos\xe9"\nprint(name)\n'.encode("latin-1"))
    (folder / "ok.py").write_text("print(6 * 7)\n", encoding="utf-8")
    return {"latin1": str(folder / "latin1.py"), "ok": str(folder / "ok.py")}


# ------------------------------------------------------------------------------ command line
USAGE_MISTAKES = {
    # name: (arguments, what the one line must say)
    "exec a non-UTF-8 file": (["exec", "{latin1}"], "{latin1} is not UTF-8 text (byte 0xe9 on line 1): save it as UTF-8"),
    "exec --timeout -1": (["exec", "{ok}", "--timeout", "-1"], "argument --timeout: must be a number of seconds > 0, got '-1'"),
    "exec --timeout 0": (["exec", "{ok}", "--timeout", "0"], "argument --timeout: must be a number of seconds > 0, got '0'"),
    "exec --import missing": (["exec", "{ok}", "--import", f"{ABSENT}.*"], f"--import {ABSENT}: not installed for"),
    "exec --import missing, subprocess": (["exec", "{ok}", "--executor", "subprocess", "--import", ABSENT],
                                          f"--import {ABSENT}: not installed for"),
    "run --max-steps 0": (["run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-steps", "0"],
                          "argument --max-steps: must be >= 1, got 0"),
    "run --timeout -1": (["run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "-1"],
                         "argument --timeout: must be a number of seconds > 0, got '-1'"),
    "run --context-tokens -5": (["run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                                 "--context-tokens", "-5"], "argument --context-tokens: must be >= 1, got -5"),
    "run without an API key": (["run", "t", "--model", "gpt-4o"],
                               "no API key for OpenAI: set OPENAI_API_KEY (or name another variable with "
                               "--api-key-env VAR), or pass --base-url URL"),
    "exec --out over a file": (["exec", "{ok}", "--out", "{ok}"], "argument --out: {ok} exists and is not a directory"),
    "run --out under a file": (["run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                                "--out", "{ok}/runs"], "argument --out: cannot create {ok}/runs"),
    "run --tools of a broken module": (["run", "t", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                                        "--tools", "codeagent.cli.main:no_such_attr"], "has no attribute 'no_such_attr'"),
}


@pytest.mark.parametrize("name", list(USAGE_MISTAKES))
def test_a_usage_mistake_is_one_line_and_exit_status_2(name: str, files: dict[str, str]) -> None:
    args, expected = USAGE_MISTAKES[name]
    proc = codeagent(*(a.format(**files) for a in args))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"codeagent {args[0]}: ") and expected.format(**files) in lines[0], lines[0]
    assert "api_key=" not in lines[0]  # the command line names its flags, not Python arguments


def test_exec_reads_a_non_utf8_stdin_as_a_usage_error() -> None:
    proc = codeagent("exec", "-", stdin=b"print('\xff')\n")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "codeagent exec: stdin is not UTF-8 text (byte 0xff on line 1): save it as UTF-8"


def test_a_positive_timeout_is_used_not_ignored(files: dict[str, str]) -> None:
    # sleeping, not spinning: a fast machine would exhaust the operation budget first
    proc = codeagent("exec", "-", "--timeout", "0.5", stdin=b"import time\ntime.sleep(30)\n")
    assert proc.returncode == 1 and "TimeoutError" in proc.stderr
    assert codeagent("exec", files["ok"], "--timeout", "2").stdout == "42\n"


def test_every_option_has_help_and_exec_help_shows_the_defaults() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("run", "exec", "demo"):
        for action in commands[name]._actions:
            assert action.help, f"codeagent {name} {action.option_strings or action.dest} has no help text"
    text = codeagent("exec", "--help").stdout
    assert "(default: subprocess)" in text and "(default: 5)" in text and "'-' to read the code from" in text


def test_demo_with_an_unreachable_endpoint_says_why_once() -> None:
    proc = codeagent("demo", "--base-url", closed_port_url(), "--model", "m")
    assert proc.returncode == 1
    out = proc.stdout
    assert "Connection error. Check base_url (--base-url) or OPENAI_BASE_URL" in out and ".." not in out
    assert "DOES NOT match" not in out and "matches the expected" not in out


# ------------------------------------------------------------------------------ constructors
@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_model_name_instead_of_a_model_fails_when_the_agent_is_made() -> None:
    with pytest.raises(TypeError, match=r"not the string 'gpt-4o': pass model=OpenAIModel\('gpt-4o'\)"):
        CodeAgent(model="gpt-4o")
    with pytest.raises(TypeError, match=r"model is required: pass model=OpenAIModel\(.*ScriptedModel"):
        CodeAgent(model=None)
    with pytest.raises(TypeError, match="must have a complete"):
        CodeAgent(model=object())
    with pytest.raises(TypeError, match=r"model=OpenAIModel\('gpt-4o'\)"):
        ToolCallingAgent(model="gpt-4o")
    with pytest.raises(TypeError, match="the model comes first"):
        CodeAgent([add], ScriptedModel([]))  # smolagents' argument order
    with pytest.raises(TypeError, match="model's name as a string"):
        OpenAIModel(None, base_url="http://localhost:1/v1")  # type: ignore[arg-type]


def test_scripted_model_wants_a_list_of_replies() -> None:
    with pytest.raises(TypeError, match=r"got str 'one reply': wrap it in a list, ScriptedModel\(\['one reply'\]\)"):
        ScriptedModel("one reply")  # type: ignore[arg-type]
    assert ScriptedModel(("a", "b")).remaining == 2


def test_a_single_tool_instead_of_a_list_names_the_fix() -> None:
    with pytest.raises(TypeError, match=r"got a single Tool 'add': pass tools=\[add\]"):
        CodeAgent(ScriptedModel([]), tools=add)
    with pytest.raises(TypeError, match="tools must be a list"):
        CodeAgent(ScriptedModel([]), tools="add")
    with pytest.raises(TypeError, match=r"tools=\[add\]"):
        ToolCallingAgent(ScriptedModel([]), tools=add)


def test_the_executor_and_numbers_are_checked() -> None:
    with pytest.raises(TypeError, match=r"not the string 'docker': pass e.g. executor=SubprocessExecutor\(\)"):
        CodeAgent(ScriptedModel([]), executor="docker")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"max_context_tokens must be an integer >= 1 \(or None for no budget\), got -5"):
        CodeAgent(ScriptedModel([]), max_context_tokens=-5)
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1, got 0"):
        CodeAgent(ScriptedModel([]), max_steps=0)


def test_an_authorized_module_that_is_not_installed_fails_when_the_agent_is_made() -> None:
    with pytest.raises(NotImportable, match=f"authorized_imports names a module not installed .*: {ABSENT}. "
                                            "Install it there, or remove it from authorized_imports"):
        CodeAgent(ScriptedModel([]), authorized_imports=[f"{ABSENT}.*", "statistics"])
    with pytest.raises(TypeError, match="not a string"):
        CodeAgent(ScriptedModel([]), authorized_imports="statistics")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ from smolagents
def test_additional_authorized_imports_is_accepted_as_smolagents_spells_it() -> None:
    reply = "<code>\nimport statistics\nfinal_answer(statistics.mean([1, 2, 3]))\n</code>"
    with CodeAgent(ScriptedModel([reply]), additional_authorized_imports=["statistics"]) as agent:
        assert agent.run("mean?").raise_for_status().output == 2
    with pytest.raises(NotImportable, match=ABSENT):
        CodeAgent(ScriptedModel([]), additional_authorized_imports=[ABSENT])
    with pytest.raises(ValueError, match="not both"):
        CodeAgent(ScriptedModel([]), authorized_imports=["math"], additional_authorized_imports=["math"])


def test_run_with_stream_true_yields_the_events() -> None:
    with CodeAgent(ScriptedModel(["<code>\nfinal_answer(7)\n</code>"] * 2)) as agent:
        events = list(agent.run("seven", stream=True))
        assert all(isinstance(e, Event) for e in events) and isinstance(events[-1], RunEnd)
        assert events[-1].output == 7
        result = agent.run("seven")
        assert isinstance(result, RunResult) and result.output == 7


def test_raise_for_status_turns_a_failed_run_into_an_exception_that_says_why() -> None:
    with CodeAgent(OpenAIModel("m", base_url=closed_port_url(), max_retries=0)) as agent:
        result = agent.run("anything")
    assert result.status == "failed" and result.output is None
    with pytest.raises(RunFailed, match=r"status 'failed': model error: cannot reach the model endpoint") as info:
        result.raise_for_status()
    assert info.value.result is result and info.value.status == "failed"
    with CodeAgent(ScriptedModel(["<code>\nprint(1)\n</code>"]), max_steps=1) as agent:
        with pytest.raises(RunFailed, match=r"no final answer after 1 steps: raise max_steps"):
            agent.run("never answers").raise_for_status()


# ------------------------------------------------------------------------------ messages
def test_an_unreachable_endpoint_is_described_in_one_sentence_each() -> None:
    model = OpenAIModel("m", base_url=closed_port_url(), max_retries=0)
    with pytest.raises(ModelError) as info:
        model.complete([{"role": "user", "content": "hi"}])
    text = str(info.value)
    assert ".." not in text and "Connection error. Check base_url (--base-url) or OPENAI_BASE_URL" in text


def test_an_endpoint_error_ends_in_one_period() -> None:
    with OpenAIStub([{"status": 404, "error": "model 'nope' not found."}]) as stub:
        model = OpenAIModel("nope", base_url=stub.base_url, max_retries=0)
        with pytest.raises(ModelError) as info:
            model.complete([{"role": "user", "content": "hi"}])
    assert "not found. Check the model name (--model)" in str(info.value) and ".." not in str(info.value)


# ------------------------------------------------------------------------------ the test command
def test_a_plain_run_reports_the_docker_skips_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CODEAGENT_DOCKER")}
    env["DOCKER_HOST"] = f"unix://{tmp_path}/no-engine.sock"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-m", "docker", "-p", "no:randomly", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'bt'}", "tests/test_docker.py", "tests/test_contract.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, proc.stdout[-3000:]
    line = skipped[0]
    assert "Docker tests: no Docker engine answers at unix://" in line
    assert "`CODEAGENT_DOCKER=1 scripts/test` starts the project's own engine and runs them" in line
    assert "Error while fetching" not in proc.stdout and int(line.split("[")[1].split("]")[0]) > 10
