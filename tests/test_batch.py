"""codeagent.batch: many runs on a local process pool and on a real local Ray instance.

The scripted factory (codeagent.batch.testing) carries each task's model replies in the task
record, so the same record gives the same run on any worker and any backend. Ray tests start one
real local instance for the module (required under CI=true, skipped with the reason elsewhere).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai_stub import OpenAIStub
from ray_session import local_ray
from unavailable import unavailable

from codeagent import RunResult
from codeagent.batch import (
    BatchError,
    TaskError,
    answers_match,
    compare,
    load_tasks,
    read_results,
    run_batch,
)
from codeagent.batch.progress import make_progress
from codeagent.batch.testing import scripted_tasks

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = "codeagent.batch.testing:scripted_agent"
VOLATILE_ROW = ("wall_s",)
VOLATILE_RUN = ("run_id", "duration_s")
VOLATILE_STEP = ("duration_s", "model_duration_s", "execution_duration_s")


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


def rows_by_id(out: Path) -> dict[str, dict[str, Any]]:
    rows = read_results(out)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"a task was recorded twice: {ids}"
    return {r["id"]: r for r in rows}


def stable_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in VOLATILE_ROW}


def stable_run(path: Path) -> dict[str, Any]:
    run = json.loads(path.read_text())
    for k in VOLATILE_RUN:
        run.pop(k)
    for step in run["steps"]:
        for k in VOLATILE_STEP:
            step.pop(k)
    return run


def no_files_agent(model_id: str = "x") -> Any:
    """A factory without a `files` parameter (importable by the workers: tests/ is on their path)."""
    from codeagent import CodeAgent, ScriptedModel

    return CodeAgent(ScriptedModel([code("final_answer(1)")], model_id=model_id))


class _OddResult:
    def to_json(self, indent: Any = None) -> str:
        return ('{"status": "success", "output": NaN, "output_repr": 7, "error": null, "steps": [], '
                '"usage": {"total_tokens": Infinity}}')


class _OddAgent:
    def run(self, task: str) -> _OddResult:
        return _OddResult()


def odd_agent() -> _OddAgent:
    """An agent whose result is not strict JSON (what a compromised worker might send)."""
    return _OddAgent()


def kill_when_written(pid_file: Path, killed: list[int], timeout: float = 60) -> threading.Thread:
    """Kill (SIGKILL) the process whose pid appears in `pid_file`, once."""

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                time.sleep(0.02)
                continue
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def victim_task(pid_file: Path) -> dict[str, Any]:
    """Reports its worker's pid, naps so the test can kill that worker, then answers."""
    return {"id": "victim", "task": "survive", "expected": "alive",
            "script": [code(f"write_pid({str(pid_file)!r})\nnap(2)\nfinal_answer('alive')")]}


# ---------------------------------------------------------------------------------- local pool


@pytest.fixture(scope="module")
def local_twenty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("local20")
    events: list[dict[str, Any]] = []
    summary = run_batch(SCRIPTED, scripted_tasks(20), out=out, workers=2, progress=events.append)
    return out, summary, events


def test_twenty_scripted_tasks_on_the_local_pool(local_twenty):
    out, summary, events = local_twenty
    rows = rows_by_id(out)
    assert sorted(rows) == [f"t{i:03d}" for i in range(20)]
    # shape 4 never answers (max_steps); every other shape answers what its record expects
    assert {r["id"] for r in rows.values() if r["status"] == "max_steps"} == {f"t{i:03d}" for i in range(4, 20, 5)}
    assert all(r["correct"] for r in rows.values() if "expected" in r)
    assert rows["t003"]["output"] == [1, "ok"] and rows["t001"]["output"] == "value=3"
    # each run is saved in the RunResult format, and the row agrees with it
    for task_id, row in rows.items():
        run = RunResult.load(out / "runs" / f"{task_id}.json")
        assert (run.status, run.output, len(run.steps), run.usage.total_tokens) == (
            row["status"], row["output"], row["steps"], row["tokens"])
    # model calls: one per reply consumed (shapes use 1, 2, 1, 2 and 2 replies)
    assert summary.totals()["model_calls"] == 4 * (1 + 2 + 1 + 2 + 2)
    assert summary.total == 20 and summary.succeeded == 16 and summary.success_rate == 0.8
    assert summary.correct == summary.checked == 16
    assert "16/20 succeeded (80%)" in summary.table() and "t019" in summary.table()
    kinds = [e["event"] for e in events]
    assert kinds[0] == "batch_start" and kinds[-1] == "batch_end" and kinds.count("task_end") == 20
    assert events[-2]["done"] == 20 and events[-2]["eta_s"] == 0


def test_resume_skips_recorded_tasks_and_drops_a_torn_last_line(tmp_path):
    tasks = scripted_tasks(8)
    run_batch(SCRIPTED, tasks[:3], out=tmp_path, workers=1, progress=None)
    with (tmp_path / "results.jsonl").open("ab") as f:  # a write cut by a kill
        f.write(b'{"id": "t003", "status": "succ')
    events: list[dict[str, Any]] = []
    summary = run_batch(SCRIPTED, tasks, out=tmp_path, workers=2, progress=events.append)
    assert events[0] == {"event": "batch_start", "total": 8, "skipped": 3, "to_run": 5, "backend": "local", "workers": 2}
    assert sorted(e["id"] for e in events if e["event"] == "task_end") == [f"t{i:03d}" for i in range(3, 8)]
    assert sorted(rows_by_id(tmp_path)) == [f"t{i:03d}" for i in range(8)]
    assert summary.ran == 5 and summary.skipped == 3 and summary.total == 8
    # a finished batch started again runs nothing and starts no worker
    again = run_batch(SCRIPTED, tasks, out=tmp_path, workers=2, progress=None)
    assert again.ran == 0 and again.total == 8
    sessions = json.loads((tmp_path / "batch.json").read_text())["sessions"]
    assert [s["ran"] for s in sessions] == [3, 5, 0]


def test_a_damaged_line_before_the_last_is_an_error(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"id": "a", "status": "success"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(ValueError, match="damaged"):
        run_batch(SCRIPTED, scripted_tasks(1), out=tmp_path, progress=None)


def test_a_hung_agent_is_cut_at_timeout_and_the_batch_goes_on(tmp_path):
    tasks = [{"id": "hang", "task": "wait forever", "hang": True}, *scripted_tasks(3)]
    t0 = time.perf_counter()
    summary = run_batch(SCRIPTED, tasks, out=tmp_path, workers=2, timeout_s=1.5, retries=1, progress=None)
    rows = rows_by_id(tmp_path)
    assert rows["hang"]["status"] == "timeout" and "time limit of 1.5 s" in rows["hang"]["error"]
    assert rows["hang"]["attempts"] == 1  # a timeout is not retried: it would hang again
    assert 1.4 <= rows["hang"]["wall_s"] < 5
    assert [rows[f"t{i:03d}"]["status"] for i in range(3)] == ["success"] * 3
    assert not (tmp_path / "runs" / "hang.json").exists()
    assert summary.by_status() == {"timeout": 1, "success": 3}
    assert time.perf_counter() - t0 < 30


def test_raising_tools_and_factories_are_recorded(tmp_path):
    tasks = [
        {"id": "tool", "task": "use a broken tool", "max_steps": 1, "script": [code("boom('disk on fire')")]},
        {"id": "factory", "task": "cannot even start", "factory_error": "no such model"},
        *scripted_tasks(2),
    ]
    events: list[dict[str, Any]] = []
    run_batch(SCRIPTED, tasks, out=tmp_path, workers=2, retries=1, progress=events.append)
    rows = rows_by_id(tmp_path)
    assert rows["tool"]["status"] == "max_steps"
    step = RunResult.load(tmp_path / "runs" / "tool.json").steps[0]
    assert step.error_kind == "execution" and "RuntimeError: disk on fire" in step.error
    factory = rows["factory"]
    assert factory["status"] == "error" and "RuntimeError: no such model" in factory["error"]
    assert factory["attempts"] == 2  # retried once: an agent that cannot be built may be a passing hiccup
    assert [e["id"] for e in events if e["event"] == "task_retry"] == ["factory"]
    assert rows["t000"]["status"] == rows["t001"]["status"] == "success"


@pytest.mark.parametrize("retries, status", [(1, "success"), (0, "crashed")])
def test_a_worker_killed_mid_batch_is_retried_or_recorded(tmp_path, retries, status):
    pid_file = tmp_path / "victim.pid"
    killed: list[int] = []
    watcher = kill_when_written(pid_file, killed)
    tasks = [victim_task(pid_file), *scripted_tasks(5)]
    run_batch(SCRIPTED, tasks, out=tmp_path / "out", workers=2, retries=retries, progress=None)
    watcher.join(1)
    rows = rows_by_id(tmp_path / "out")
    assert killed, "the victim never reported its pid"
    assert rows["victim"]["status"] == status
    if status == "crashed":
        assert "killed by SIGKILL" in rows["victim"]["error"] and rows["victim"]["attempts"] == 1
    else:
        assert rows["victim"]["output"] == "alive" and rows["victim"]["attempts"] == 2
    assert len(rows) == 6 and all(rows[f"t{i:03d}"]["status"] in ("success", "max_steps") for i in range(5))


def test_files_reach_a_factory_that_takes_them_and_are_refused_by_one_that_does_not(tmp_path):
    task = {"id": "f", "task": "which files?", "files": ["data/a.csv", "b.txt"],
            "script": [code("final_answer(granted_files())")]}
    run_batch(SCRIPTED, [task], out=tmp_path / "a", workers=1, progress=None)
    assert rows_by_id(tmp_path / "a")["f"]["output"] == ["data/a.csv", "b.txt"]
    run_batch("test_batch:no_files_agent", [task], out=tmp_path / "b", workers=1, retries=0, progress=None)
    row = rows_by_id(tmp_path / "b")["f"]
    assert row["status"] == "error" and "takes no `files` argument" in row["error"]


def test_a_warm_subprocess_executor_serves_every_task_of_its_worker(tmp_path):
    tasks = [{"id": f"p{i}", "task": "which process?", "script": [code("import os\nfinal_answer(os.getpid())")]}
             for i in range(4)]
    run_batch(SCRIPTED, tasks, out=tmp_path, workers=1, executor="subprocess", progress=None,
              executor_options={"authorized_imports": ["os"]})
    rows = rows_by_id(tmp_path)
    assert all(r["status"] == "success" for r in rows.values()), rows
    assert len({r["output"] for r in rows.values()}) == 1  # one worker, one executor process, reused


@pytest.mark.docker
def test_a_warm_docker_executor_per_worker(tmp_path):
    from conftest import docker_engine_problem

    problem = docker_engine_problem()
    if problem:
        unavailable(f"the docker batch test needs a Docker engine: {problem}")
    tasks = [{"id": f"d{i}", "task": "where am I?", "expected": [i, True],
              "script": [code(f"import os\nfinal_answer([add({i}, 0), os.path.exists('/.dockerenv')])")]}
             for i in range(3)]
    run_batch(SCRIPTED, tasks, out=tmp_path, workers=1, executor="docker", timeout_s=120, progress=None,
              executor_options={"authorized_imports": ["os"]})
    rows = rows_by_id(tmp_path)
    assert all(r["status"] == "success" and r["correct"] for r in rows.values()), rows


def test_a_result_that_is_not_strict_json_is_recorded_sanitized(tmp_path):
    run_batch("test_batch:odd_agent", [{"id": "odd", "task": "x"}, *scripted_tasks(1)], out=tmp_path,
              workers=1, progress=None)
    json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0], parse_constant=lambda c: pytest.fail(c))
    row = rows_by_id(tmp_path)["odd"]
    assert (row["status"], row["output"], row["output_repr"], row["tokens"]) == ("success", None, None, 0)
    assert rows_by_id(tmp_path)["t000"]["status"] == "success"


def test_bad_batches_fail_before_any_worker_starts(tmp_path):
    with pytest.raises(BatchError, match="importable"):
        run_batch(lambda: None, scripted_tasks(1), out=tmp_path)
    with pytest.raises(BatchError, match="cannot import"):
        run_batch("codeagent.batch.testing:nope", scripted_tasks(1), out=tmp_path)
    with pytest.raises(BatchError, match="backend"):
        run_batch(SCRIPTED, scripted_tasks(1), out=tmp_path, backend="spark")
    with pytest.raises(BatchError, match="timeout_s"):
        run_batch(SCRIPTED, scripted_tasks(1), out=tmp_path, timeout_s=0)
    with pytest.raises(TaskError, match="used twice"):
        load_tasks([{"id": "a", "task": "x"}, {"id": "a", "task": "y"}])
    with pytest.raises(TaskError, match="'task' must be"):
        load_tasks([{"id": "a"}])
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": 1, "task": "fine"}\n{oops\n')
    with pytest.raises(TaskError, match="tasks.jsonl:2"):
        load_tasks(bad)
    assert not (tmp_path / "results.jsonl").exists()


def test_a_tasks_file_line_ends_at_newline_only(tmp_path):
    """JSON keeps U+2028 (and \x0c, \x85) raw inside a string: they do not end a line; CRLF does."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "task": "x\u2028y\x0cz\x85"}, ensure_ascii=False) + "\r\n"
                     + json.dumps({"id": "b", "task": "t"}) + "\n", encoding="utf-8")
    assert [(t.id, t.task) for t in load_tasks(tasks)] == [("a", "x\u2028y\x0cz\x85"), ("b", "t")]


def test_odd_ids_get_distinct_safe_run_files(tmp_path):
    tasks = [{"id": i, "task": "t", "script": [code("final_answer(1)")]} for i in ("a/b", "a_b", "../x", 7)]
    run_batch(SCRIPTED, tasks, out=tmp_path, workers=1, progress=None)
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(names) == 4 and "7.json" in names and all("/" not in n and not n.startswith(".") for n in names)
    assert sorted(rows_by_id(tmp_path)) == ["../x", "7", "a/b", "a_b"]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=8))
def test_every_answer_matches_itself(value):
    assert answers_match(value, value)


def test_answer_check_is_lenient_on_spelling_only():
    assert answers_match(4.5, 4.5000000001) and answers_match(" Lyon ", "lyon") and answers_match([1, "A"], (1, "a"))
    assert not answers_match(1, True) and not answers_match(4.5, 4.6) and not answers_match(["a"], ["a", "b"])


def test_progress_is_a_bar_on_a_terminal_and_ndjson_otherwise(tmp_path):
    class Tty:
        def __init__(self, tty: bool) -> None:
            self.text, self.tty = "", tty

        def write(self, s: str) -> None:
            self.text += s

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return self.tty

    for tty in (True, False):
        stream = Tty(tty)
        p = make_progress("auto", stream)  # type: ignore[arg-type]
        p.start(4, 0, "local", 2)
        p.task_end({"id": "a", "status": "success"})
        p.task_end({"id": "b", "status": "failed"})
        if tty:
            assert "2/4" in stream.text and "tasks/s" in stream.text and "ETA" in stream.text and "1 not successful" in stream.text
        else:
            events = [json.loads(line) for line in stream.text.splitlines()]
            assert [e["event"] for e in events] == ["batch_start", "task_end", "task_end"]
            assert events[-1]["done"] == 2 and events[-1]["to_run"] == 4 and events[-1]["eta_s"] is not None


# ---------------------------------------------------------------------------------- command line


def codeagent(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codeagent", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "tests")})


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def test_cli_batch_against_a_real_http_endpoint_then_report(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "a", "task": "What is 6 * 7?", "expected": 42},
        {"id": "b", "task": "And 40 + 2?", "expected": 42},
        {"id": "c", "task": "Say 41", "expected": 41},
    ])
    with OpenAIStub([code("final_answer(6 * 7)")], repeat_last=True) as stub:
        done = codeagent("batch", str(tasks), "--model", "stub-model", "--base-url", stub.base_url,
                         "--mode", "code", "--executor", "local", "--workers", "2", "--out", str(tmp_path / "out"))
    assert done.returncode == 1, done.stderr  # every run succeeded, but c's answer is wrong
    assert len(stub.requests) == 3
    rows = rows_by_id(tmp_path / "out")
    assert {r["status"] for r in rows.values()} == {"success"} and rows["c"]["correct"] is False
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [e["event"] for e in events].count("task_end") == 3  # not a terminal: NDJSON progress
    assert "2/3 correct" in done.stdout
    report = codeagent("batch", "--report", str(tmp_path / "out"))
    assert report.returncode == 1 and "3/3 succeeded (100%)" in report.stdout and "✗" in report.stdout
    meta = json.loads((tmp_path / "out" / "batch.json").read_text())["sessions"][0]
    assert meta["options"]["model"] == "stub-model" and meta["executor"] == "local"


def test_cli_compare_names_the_tasks_that_changed(tmp_path):
    base = scripted_tasks(5)
    changed = [dict(t) for t in base]
    changed[0]["script"] = [code("final_answer('different')")]
    changed[2]["script"] = [code("print('no answer')")] * 4
    for name, tasks in (("a", base), ("b", changed)):
        run_batch(SCRIPTED, tasks, out=tmp_path / name, workers=1, progress=None)
    done = codeagent("batch", "--compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert done.returncode == 1
    assert "2 task(s) changed" in done.stdout
    assert "t000" in done.stdout and "now wrong" in done.stdout and "t002" in done.stdout and "broken" in done.stdout
    text, changes = compare(tmp_path / "a", tmp_path / "a")
    assert not changes and "no task changed" in text


def test_cli_usage_errors_exit_2(tmp_path):
    tasks = write_tasks(tmp_path / "t.jsonl", scripted_tasks(1))
    assert codeagent("batch", str(tasks), "--model", "m").returncode == 2  # no --out
    no_model = codeagent("batch", str(tasks), "--out", str(tmp_path / "o"))
    assert no_model.returncode == 2 and "--model" in no_model.stderr
    assert codeagent("batch").returncode == 2
    assert codeagent("batch", "--report", str(tmp_path / "missing")).returncode == 2


def test_sigint_then_resume_records_every_task_exactly_once(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    tasks = [{"id": f"s{i:02d}", "task": "slow", "expected": i,
              "script": [code(f"write_pid({str(pids / f's{i:02d}')!r})\nnap(0.4)\nfinal_answer({i})")]}
             for i in range(12)]
    task_file = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "out"
    args = ["batch", str(task_file), "--factory", SCRIPTED, "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "codeagent", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(read_results(out) if (out / "results.jsonl").exists() else []) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "run the same command again to resume" in stderr
    first = rows_by_id(out)
    assert 3 <= len(first) < 12
    for pid_file in pids.iterdir():  # no worker outlived the interrupted driver
        pid = int(pid_file.read_text())
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower():
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"worker {pid} survived the interrupt")
    resumed = codeagent(*args)
    assert resumed.returncode == 0, resumed.stderr
    rows = rows_by_id(out)  # asserts every id is there once
    assert sorted(rows) == [t["id"] for t in tasks]
    assert all(r["status"] == "success" and r["correct"] for r in rows.values())
    start = next(json.loads(line) for line in resumed.stderr.splitlines() if line.startswith("{"))
    assert start["event"] == "batch_start" and start["skipped"] == len(first)


# ---------------------------------------------------------------------------------- Ray


@pytest.fixture(scope="module")
def ray_instance():
    from codeagent.batch.backends.ray_actors import ray_available

    problem = ray_available()
    if problem:
        unavailable(f"the Ray backend tests need Ray: {problem}")
    with local_ray() as ray:
        session = ray._private.worker._global_node.get_session_dir_path()
        yield ray
        ray.shutdown()
        # Ray must not outlive the tests: no process of this session may be left
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, session)]
            if not left:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"Ray processes survived ray.shutdown(): {[p.name for p in left]}")


def _cmdline_has(proc: Path, text: str) -> bool:
    try:
        return text in (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def test_ray_and_local_give_identical_per_task_results(ray_instance, local_twenty, tmp_path):
    local_out, local_summary, _ = local_twenty
    summary = run_batch(SCRIPTED, scripted_tasks(20), out=tmp_path, backend="ray", workers=2, progress=None)
    assert summary.backend == "ray" and summary.ran == 20
    local_rows, ray_rows = rows_by_id(local_out), rows_by_id(tmp_path)
    assert {k: stable_row(v) for k, v in ray_rows.items()} == {k: stable_row(v) for k, v in local_rows.items()}
    for task_id in local_rows:
        assert stable_run(tmp_path / "runs" / f"{task_id}.json") == stable_run(local_out / "runs" / f"{task_id}.json")
    assert summary.totals()["tokens"] == local_summary.totals()["tokens"]
    assert not list(Path.cwd().glob("ray*")) and not list(ROOT.glob("ray*"))  # nothing dropped in the cwd


def test_ray_worker_killed_mid_batch_is_retried(ray_instance, tmp_path):
    pid_file = tmp_path / "victim.pid"
    killed: list[int] = []
    watcher = kill_when_written(pid_file, killed)
    run_batch(SCRIPTED, [victim_task(pid_file), *scripted_tasks(3)], out=tmp_path / "out", backend="ray",
              workers=2, retries=1, progress=None)
    watcher.join(1)
    rows = rows_by_id(tmp_path / "out")
    assert killed and killed[0] != os.getpid()
    assert rows["victim"]["status"] == "success" and rows["victim"]["attempts"] == 2
    assert all(rows[f"t{i:03d}"]["status"] == "success" for i in range(3))


def test_ray_hung_task_is_cut_at_timeout(ray_instance, tmp_path):
    tasks = [{"id": "hang", "task": "wait forever", "hang": True}, *scripted_tasks(2)]
    run_batch(SCRIPTED, tasks, out=tmp_path, backend="ray", workers=2, timeout_s=6, progress=None)
    rows = rows_by_id(tmp_path)
    assert rows["hang"]["status"] == "timeout" and rows["hang"]["wall_s"] < 20
    assert rows["t000"]["status"] == rows["t001"]["status"] == "success"


# ---------------------------------------------------------------------------------- data-task suite


def test_the_data_task_suite_runs_through_batch(tmp_path):
    """Same agents, same scripted replies as benchmarks/data_tasks/run.py, so the same figures."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "data_tasks" / "batch.py"), "--progress", "none",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    places = ("code/local", "single_call/local", "tool_calling")
    lines = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.split()[:1] and
             line.split()[0] in places}
    # place, success, model calls, tokens, recovered, figures, wall (the shop and data-file suites)
    assert [(m, lines[m][1], lines[m][2], lines[m][4]) for m in places] == [
        ("code/local", "24/24", "28", "0"), ("single_call/local", "24/24", "57", "1"), ("tool_calling", "24/24", "57", "1")]
    assert len(read_results(tmp_path)) == 72  # 24 tasks (shop and data-file suites) x 3 places


def test_run_batch_retry_takes_the_command_lines_choices(tmp_path):
    """run_batch(retry="failed") reruns every failed outcome, as `--retry failed` does; a status
    name that is not a choice is refused with the choices."""
    tasks = [{"id": "ok", "task": "t", "script": [code("final_answer(1)")]},
             {"id": "bad", "task": "t", "script": [code("1 / 0")]}]
    first = run_batch(SCRIPTED, tasks, out=tmp_path, options={"max_steps": 1})
    assert sorted(r.status for r in first.rows) == ["max_steps", "success"]
    again = run_batch(SCRIPTED, tasks, out=tmp_path, options={"max_steps": 1}, retry="failed")
    assert again.ran == 1 and again.skipped == 1 and dict(again.skipped_by) == {"success": 1}
    with pytest.raises(BatchError, match="failed, timeout, all"):
        run_batch(SCRIPTED, tasks, out=tmp_path, retry=["max_steps"])


# ---------------------------------------------------------------------- runs at once per worker


def test_runs_at_once_in_one_worker_give_the_per_task_results_of_one_at_a_time(local_twenty, tmp_path):
    out, _, _ = local_twenty
    summary = run_batch(SCRIPTED, scripted_tasks(20), out=tmp_path, workers=1, runs_per_worker=5,
                        executor="subprocess", options={"model_delay_s": 0.05}, progress=None)
    fields = ("status", "output", "steps", "model_calls")
    assert {i: [r[f] for f in fields] for i, r in rows_by_id(tmp_path).items()} == \
        {i: [r[f] for f in fields] for i, r in rows_by_id(out).items()}
    assert summary.total == 20 and summary.succeeded == 16
    assert json.loads((tmp_path / "batch.json").read_text())["sessions"][0]["runs_per_worker"] == 5


def test_a_hung_task_among_others_is_cut_by_its_worker_and_the_others_finish(tmp_path):
    tasks = [{"id": "hang", "task": "wait forever", "hang": True}, *scripted_tasks(4)]
    summary = run_batch(SCRIPTED, tasks, out=tmp_path, workers=1, runs_per_worker=3, timeout_s=1.5,
                        retries=1, progress=None)
    rows = rows_by_id(tmp_path)
    assert rows["hang"]["status"] == "timeout" and "its run cancelled" in rows["hang"]["error"]
    assert rows["hang"]["attempts"] == 1 and 1.4 <= rows["hang"]["wall_s"] < 10
    assert all(rows[f"t{i:03d}"]["attempts"] == 1 for i in range(4))  # no neighbour was killed with it
    assert summary.by_status() == {"timeout": 1, "success": 4}


def test_runs_per_worker_is_for_the_local_backend(tmp_path):
    with pytest.raises(BatchError, match="runs_per_worker .* local backend"):
        run_batch(SCRIPTED, scripted_tasks(1), out=tmp_path, backend="ray", runs_per_worker=2, progress=None)
