"""A user's second hour: interrupts, hung servers, huge numbers, batch set-up and retries, CLI
parity, and nothing left in the temp dir. The command line runs in real subprocesses."""

from __future__ import annotations

import json
import math
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import executor_class
from openai_stub import OpenAIStub

import codeagent
from codeagent.batch.testing import scripted_tasks
from executors import LocalExecutor
from executors.access import owned_tempdir, sweep_dead_owners
from executors.base import MAX_TIMEOUT_S, Limits, timeout_seconds

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = "codeagent.batch.testing:scripted_agent"
SLOW = "print('start', flush=True)\nimport time\nwhile True:\n    try:\n        time.sleep(0.05)\n" \
       "    except BaseException:\n        pass\n"


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    env["PYTHONPATH"] = str(ROOT / "tests")
    return {**env, **(extra or {})}


def codeagent_cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
                  timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=cwd, env=_env(env),
                          capture_output=True, text=True, timeout=timeout)


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


def one_line_usage_error(proc: subprocess.CompletedProcess[str], command: str, says: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"codeagent {command}") and says in lines[0], lines[0]


# ------------------------------------------------------------------------------ Ctrl-C


def _interrupt_when(proc: subprocess.Popen[str], ready: str | None, delay: float = 0.5) -> None:
    """SIGINT the process group once `ready` appeared on stdout (or after `delay` s)."""
    if ready is not None:
        seen = ""
        deadline = time.monotonic() + 60
        while ready not in seen and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)


@pytest.mark.parametrize("place", ["local", "subprocess"])
def test_ctrl_c_in_exec_ends_it_with_130_in_every_executor(place):
    # a workdir the sandbox user can enter (pytest's tmp_path sits in a 0700 folder)
    tmp_path = Path(tempfile.mkdtemp(prefix="codeagent-ctrl-c-", dir="/tmp"))
    try:
        _exec_and_interrupt(tmp_path, place)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _exec_and_interrupt(tmp_path: Path, place: str) -> None:
    script = tmp_path / "slow.py"
    script.write_text("import pathlib\npathlib.Path('started').write_text('yes')\n" + SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "codeagent", "exec", "--executor", place, "--timeout", "60",
                             "--import", "pathlib", "--workdir", str(tmp_path), str(script)], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    _interrupt_when(proc, None, delay=0.3)  # the step is running
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "KeyboardInterrupt" not in err and "interrupted" in err


@pytest.mark.parametrize("place", ["local", "subprocess"])
def test_ctrl_c_in_run_ends_it_interrupted_with_130_and_saves_it(tmp_path, place):
    out = tmp_path / "out"
    with OpenAIStub([code("print('working')\nimport time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                          "    except BaseException:\n        pass")], repeat_last=True) as stub:
        proc = subprocess.Popen(
            [sys.executable, "-m", "codeagent", "run", "spin", "--model", "m", "--base-url", stub.base_url,
             "--executor", place, "--timeout", "60", "--out", str(out)], cwd=ROOT, env=_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        _interrupt_when(proc, "code:", delay=1.0)
        stdout, err = proc.communicate(timeout=30)
        assert len(stub.requests) == 1  # the model was not asked to "fix" the interrupt
    assert proc.returncode == 130, err
    assert "✗ interrupted: interrupted by the user (Ctrl-C) during step 1" in stdout
    (saved,) = out.glob("*.json")
    run = json.loads(saved.read_text())
    assert run["status"] == "interrupted" and len(run["steps"]) == 1


def test_an_in_process_step_hands_sigint_to_the_host_and_stays_usable():
    ex = LocalExecutor()
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        ex.execute("n = 0\nwhile True:\n    try:\n        n += 1\n    except BaseException:\n        pass")
    assert time.monotonic() - t0 < 5
    assert ex.execute("1 + 1").output == 2  # the executor goes on
    raised = ex.execute("raise KeyboardInterrupt('mine')")  # the model's own stays the model's error
    assert raised.error is not None and raised.error.type == "KeyboardInterrupt"
    ex.close()


# ------------------------------------------------------------------------------ hung servers


def test_a_hung_model_server_says_how_long_it_was_silent_and_the_flag():
    with OpenAIStub([{"text": "late", "delay_s": 3}] * 4) as stub:
        t0 = time.monotonic()
        proc = codeagent_cli("run", "t", "--model", "m", "--base-url", stub.base_url,
                             "--model-timeout", "0.5", "--model-retries", "1")
        took = time.monotonic() - t0
        asked = len(stub.requests)
    assert proc.returncode == 1, proc.stderr
    assert "sent nothing for 0.5 s" in proc.stdout and "not tried again" in proc.stdout, proc.stdout
    assert "--model-timeout" in proc.stdout and took < 60 and asked == 1  # a silent server is not asked again


def test_a_slow_model_request_shows_that_it_waits_on_a_terminal():
    with OpenAIStub([{"text": code("final_answer(42)"), "delay_s": 1.5}]) as stub:
        url = stub.base_url
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "codeagent", "run", "t", "--model", "m", "--base-url", stub.base_url,
             "--model-timeout", "30", "--retries", "0"], cwd=ROOT,
            env=_env({"CODEAGENT_WAIT_NOTICE_S": "0.3"}), stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        stdout, _ = proc.communicate(timeout=60)
        shown = b""
        while select.select([leader], [], [], 0.2)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        os.close(leader)
    assert proc.returncode == 0, stdout
    text = shown.decode("utf-8", "replace")
    assert f"waiting for the model at {url}" in text and "gives up after 30 s" in text, text


def test_no_waiting_line_off_a_terminal():
    with OpenAIStub([{"text": code("final_answer(42)"), "delay_s": 1.0}]) as stub:
        proc = codeagent_cli("run", "t", "--model", "m", "--base-url", stub.base_url,
                             env={"CODEAGENT_WAIT_NOTICE_S": "0.2"})
    assert proc.returncode == 0 and "waiting for the model" not in proc.stderr + proc.stdout


def test_http_errors_say_the_status_once():
    with OpenAIStub([{"status": 500, "error": "boom"}] * 3) as stub:
        proc = codeagent_cli("run", "t", "--model", "m", "--base-url", stub.base_url, "--retries", "0")
    assert "returned HTTP 500: " in proc.stdout and "Error code: 500" not in proc.stdout, proc.stdout


# ------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize("value", [1e7, 1e308, 99999999999])
def test_one_rule_for_timeouts_clamps_huge_ones(value):
    assert timeout_seconds(value) == MAX_TIMEOUT_S == Limits(timeout_s=value).timeout_s


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "5"])
def test_one_rule_for_timeouts_refuses_the_rest(value):
    with pytest.raises(ValueError, match="finite number of seconds > 0"):
        Limits(timeout_s=value)


@pytest.mark.parametrize("place", ["local", "subprocess", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_huge_timeout_runs(tmp_path, place):
    if place == "docker":
        executor_class("docker")  # skips (fails under CI) without an engine
    script = tmp_path / "ok.py"
    script.write_text("print(6 * 7)\n")
    for value in ("1e7", "1e308", "99999999999"):
        proc = codeagent_cli("exec", str(script), "--executor", place, "--timeout", value)
        assert proc.returncode == 0 and proc.stdout == "42\n", proc.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["--examples", "0"], "argument --examples: must be >= 1, got 0"),
    (["--examples", "-5"], "argument --examples: must be >= 1, got -5"),
    (["--authorized-imports", "codeagent_not_installed_xyz"], "--authorized-imports codeagent_not_installed_xyz: "
                                                              "not installed"),
    (["--tools", "codeagent_not_installed_xyz:x"], "No module named 'codeagent_not_installed_xyz'"),
    (["--tools", "raising_tools:TOOLS"], "RuntimeError: this tools module is broken"),
])
def test_fuzz_usage_mistakes_are_one_line(tmp_path, args, says):
    (tmp_path / "raising_tools.py").write_text("raise RuntimeError('this tools module is broken')\n")
    proc = codeagent_cli("fuzz", *args, env={"PYTHONPATH": str(tmp_path)})
    one_line_usage_error(proc, "fuzz", says)


def test_fuzz_without_hypothesis_names_the_extra():
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.modules['hypothesis'] = None\n"
                           "from codeagent.cli.main import main; sys.exit(main(['fuzz', '--examples', '2']))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    one_line_usage_error(proc, "fuzz", "pip install 'codeagent[fuzz]'")


# ------------------------------------------------------------------------------ batch


def write_tasks(path: Path, tasks: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


@pytest.mark.parametrize(("args", "says"), [
    (["--max-steps", "0"], "argument --max-steps: must be >= 1, got 0"),
    (["--timeout", "-1"], "must be a number of seconds > 0, got '-1'"),
    (["--action-timeout", "0"], "must be a number of seconds > 0, got '0'"),
    (["--workers", "0"], "argument --workers: must be between 1 and 1024, got 0"),
    (["--tools", "codeagent_not_installed_xyz:x"], "--tools codeagent_not_installed_xyz:x: cannot import"),
    (["--import", "codeagent_not_installed_xyz"], "--import codeagent_not_installed_xyz: not installed"),
    (["--packages", "pandas"], "--packages builds a Docker image: it needs --executor docker"),
    (["--read", "/nonexistent/data"], "--read /nonexistent/data: /nonexistent/data does not exist"),
])
def test_batch_checks_its_setup_before_the_first_task(tmp_path, args, says):
    tasks = write_tasks(tmp_path / "t.jsonl", scripted_tasks(3))
    out = tmp_path / "out"
    proc = codeagent_cli("batch", str(tasks), "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                         "--out", str(out), *args)
    one_line_usage_error(proc, "batch", says)
    assert not (out / "results.jsonl").exists() or not (out / "results.jsonl").read_text()


@pytest.mark.parametrize(("content", "says"), [(b"", "no tasks in"), (b"\x89PNG\r\n\x1a\n\xff\xfe", "not UTF-8 text")])
def test_batch_names_an_empty_or_binary_tasks_file(tmp_path, content, says):
    tasks = tmp_path / "t.jsonl"
    tasks.write_bytes(content)
    proc = codeagent_cli("batch", str(tasks), "--factory", SCRIPTED, "--out", str(tmp_path / "out"))
    one_line_usage_error(proc, "batch", says)
    assert str(tasks) in proc.stderr


def test_batch_retry_reruns_what_failed_and_the_summary_says_what_was_skipped(tmp_path):
    broken = [{"id": "a", "task": "t", "script": [code("final_answer(1)")], "expected": 1},
              {"id": "b", "task": "t", "factory_error": "no model yet"},
              {"id": "c", "task": "t", "hang": True}]
    fixed = [broken[0], {"id": "b", "task": "t", "script": [code("final_answer(2)")], "expected": 2},
             {"id": "c", "task": "t", "script": [code("final_answer(3)")], "expected": 3}]
    out = tmp_path / "out"
    base = ["--factory", SCRIPTED, "--out", str(out), "--retries", "0", "--task-timeout", "3", "--progress", "none"]
    first = codeagent_cli("batch", str(write_tasks(tmp_path / "broken.jsonl", broken)), *base)
    assert first.returncode == 1
    rerun = codeagent_cli("batch", str(write_tasks(tmp_path / "fixed.jsonl", fixed)), *base)
    assert rerun.returncode == 1
    assert "3 skipped: already recorded in" in rerun.stdout and "1 error, 1 success, 1 timeout" in rerun.stdout
    assert "--retry failed|timeout|all" in rerun.stdout
    failed = codeagent_cli("batch", str(tmp_path / "fixed.jsonl"), *base, "--retry", "failed", "--json")
    summary = json.loads(failed.stdout)
    assert summary["totals"]["ran"] == 1 and summary["totals"]["skipped_by_status"] == {"success": 1, "timeout": 1}
    timeout = codeagent_cli("batch", str(tmp_path / "fixed.jsonl"), *base, "--retry", "timeout", "--json")
    assert timeout.returncode == 0, timeout.stdout + timeout.stderr
    assert {r["id"]: r["status"] for r in json.loads(timeout.stdout)["rows"]} == {"a": "success", "b": "success",
                                                                                   "c": "success"}


def test_batch_task_cut_at_its_deadline_leaves_no_workdir(tmp_path):
    private = tmp_path / "tmp"
    private.mkdir()
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": f"h{i}", "task": "t", "hang": True} for i in range(3)])
    proc = codeagent_cli("batch", str(tasks), "--factory", SCRIPTED, "--out", str(tmp_path / "out"),
                         "--executor", "subprocess", "--task-timeout", "2", "--retries", "0", "--workers", "2",
                         "--json", env={"TMPDIR": str(private)})
    rows = json.loads(proc.stdout)["rows"]
    assert proc.returncode == 1 and [r["status"] for r in rows] == ["timeout"] * 3
    assert all("did not finish within its time limit of 2 s (--task-timeout" in r["error"] for r in rows)
    assert sorted(os.listdir(private)) == []


def test_the_sweeper_removes_folders_of_dead_owners_only(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f"codeagent-work-{int(dead.stdout)}-abc"
    orphan.mkdir()
    (orphan / "file").write_text("left behind")
    mine = Path(owned_tempdir("codeagent-work-", str(tmp_path)))
    assert mine.name.startswith(f"codeagent-work-{os.getpid()}-")
    assert not orphan.exists() and mine.exists()  # making one swept the dead owner's
    assert sweep_dead_owners("codeagent-work-", str(tmp_path)) == [] and mine.exists()


def test_an_executor_never_closed_leaves_no_folder_when_its_process_exits(tmp_path):
    """A process that made an executor and exits without close() removes its workdir (atexit); a
    forked child that exits first leaves its parent's folder alone."""
    code = ("import os, sys\nfrom executors import LocalExecutor\n"
            "ex = LocalExecutor()\nprint(ex.workdir, flush=True)\n"
            "pid = os.fork()\nif pid == 0:\n    sys.exit(0)\nos.waitpid(pid, 0)\n"
            "print(os.path.isdir(ex.workdir), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)})
    workdir, kept_after_child = done.stdout.split()
    assert done.returncode == 0, done.stderr
    assert kept_after_child == "True" and not os.path.exists(workdir)


# ------------------------------------------------------------------------------ CLI parity and polish


def test_run_exec_and_batch_share_the_executor_flags():
    from codeagent.batch.cli import build_parser as batch_parser
    from codeagent.cli.main import build_parser

    wanted = {"--executor", "--import", "--packages", "--timeout", "--read", "--write", "--workdir", "--network"}
    sub = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them here
    for parser in (sub["run"], sub["exec"], batch_parser()):
        flags = {s for a in parser._actions for s in a.option_strings}
        assert wanted <= flags, wanted - flags


def test_scripts_codeagent_grants_folders_under_the_current_directory(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "job.py").write_text("import pathlib\npathlib.Path('out/r.txt').write_text('ok')\nprint('done')\n")
    proc = subprocess.run([str(ROOT / "scripts" / "codeagent"), "exec", "job.py", "--workdir", ".",
                           "--import", "pathlib", "--executor", "local"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "r.txt").read_text() == "ok"


def test_out_that_cannot_be_made_fails_before_the_run():
    with OpenAIStub([code("final_answer(1)")]) as stub:
        proc = codeagent_cli("run", "t", "--model", "m", "--base-url", stub.base_url, "--out", "/proc/nope")
        assert stub.requests == []
    one_line_usage_error(proc, "run", "argument --out: cannot create /proc/nope")


def test_version():
    from importlib.metadata import version

    assert codeagent.__version__ == version("codeagent")
    proc = codeagent_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"codeagent {codeagent.__version__}"


def test_the_project_tracks_no_venv_symlink_and_has_a_fuzz_extra():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not [p for p in tracked if p.startswith(".venv")]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "\nfuzz = [" in pyproject


def test_run_shows_fenced_code_once_and_absolute_saved_paths(tmp_path):
    reply = "I will add.\n```python\nprint(40 + 2)\nfinal_answer(42)\n```"
    with OpenAIStub([reply]) as stub:
        proc = codeagent_cli("run", "t", "--model", "m", "--base-url", stub.base_url, "--save", "run.json",
                             cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("print(40 + 2)") == 1, proc.stdout
    assert f"saved: {tmp_path / 'run.json'}" in proc.stdout


def test_tools_do_not_swallow_the_task_and_an_empty_task_is_refused():
    with OpenAIStub([code("final_answer(add(1, 2))")]) as stub:
        proc = codeagent_cli("run", "--model", "m", "--base-url", stub.base_url, "--tools",
                             "codeagent.batch.testing:TOOLS", "add one and two")
    assert proc.returncode == 0 and "answer: 3" in proc.stdout, proc.stdout + proc.stderr
    empty = codeagent_cli("run", "  ", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    one_line_usage_error(empty, "run", "TASK is required and cannot be empty")


def test_exec_refusal_names_the_flag_and_out_never_overwrites(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import pandas\n")
    proc = codeagent_cli("exec", str(script))
    assert proc.returncode == 1 and "hint: to allow it, pass --import pandas" in proc.stderr
    script.write_text("import matplotlib.pyplot as plt\nplt.plot([1, 2])\n")
    for _ in range(2):
        done = codeagent_cli("exec", str(script), "--import", "matplotlib.*", "--out", str(tmp_path / "figs"))
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["exec.figure-1.png", "exec.figure-2.png"]


def test_authorizing_pathlib_warns_without_doubled_brackets(tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("print(1)\n")
    proc = codeagent_cli("exec", str(script), "--import", "pathlib", "--executor", "local")
    assert "'pathlib': file operations (judged against the grants); its" in proc.stderr, proc.stderr
    assert "))" not in proc.stderr


@pytest.mark.docker
def test_packages_reach_the_docker_image_from_the_command_line(tmp_path):
    executor_class("docker")
    script = tmp_path / "job.py"
    script.write_text("import pandas\nprint(pandas.DataFrame({'a': [1, 2]})['a'].sum())\n")
    proc = codeagent_cli("exec", str(script), "--executor", "docker", "--import", "pandas",
                         env={"DOCKER_HOST": ""}, timeout=600)
    assert proc.returncode == 0 and proc.stdout == "3\n", proc.stderr
    assert "--packages pandas" in proc.stderr


def test_compare_lists_changes_in_id_order(tmp_path):
    from codeagent.batch import run_batch
    from codeagent.batch.summary import compare

    base = [{"id": f"q{i}", "task": "t", "script": [code(f"final_answer({i})")]} for i in (10, 2, 1)]
    changed = [dict(t, script=[code("final_answer(-1)")]) for t in base]
    run_batch(SCRIPTED, base, out=tmp_path / "a", workers=1, progress=None)
    run_batch(SCRIPTED, changed, out=tmp_path / "b", workers=1, progress=None)
    _, changes = compare(tmp_path / "a", tmp_path / "b")
    assert [c["id"] for c in changes] == ["q1", "q2", "q10"]


def test_a_callers_own_executor_settings_reach_the_executor():
    """executor_options from Python (run_batch(executor_options=...)): a Limits given whole is kept,
    a timeout from the flags goes on top of it, and tools reach the constructor."""
    from codeagent.cli.flags.executor_options import make_executor
    from executors import Limits

    def ping() -> str:
        return "pong"

    given = Limits(timeout_s=7, max_memory_mb=64)
    with make_executor("local", {"limits": given}, tools=[ping]) as ex:
        assert (ex.limits.timeout_s, ex.limits.max_memory_mb) == (7, 64)
        assert ex.execute("ping()").output == "pong"
    with make_executor("local", {"limits": given, "timeout_s": 3}) as ex:
        assert (ex.limits.timeout_s, ex.limits.max_memory_mb) == (3, 64)
