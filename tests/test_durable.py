"""Durable runs (docs/runs.md): the record saved as the run goes, a run killed with SIGKILL resumed
from it in a new process with each recorded tool call made once, divergence named by step,
approval pauses across processes, the record's format versions, and `codeagent resume/approve`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from openai_stub import OpenAIStub

from codeagent import CodeAgent, tool
from codeagent.models.scripted import ScriptedModel
from codeagent.runs.atomic import write_atomic
from codeagent.runs.record_file import load_record
from codeagent.runs.replay import ReplayDiverged
from codeagent.runs.result import RECORD_FORMAT, RecordFormatError, RunResult
from executors import Access, LocalExecutor

ROOT = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).with_name("durable_child.py")


def child(mode: str, tmp: Path, kill_at: str = "none", place: str = "local", approval: bool = False):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_APPROVAL": "1" if approval else "0"}
    return subprocess.run([sys.executable, str(CHILD), mode, str(tmp / "rec"), str(tmp / "counter"), kill_at, place],
                          env=env, capture_output=True, text=True, timeout=120)


def the_record(tmp: Path) -> RunResult:
    [path] = (tmp / "rec").glob("*.json")
    return load_record(path)


def counted(tmp: Path) -> list[str]:
    path = tmp / "counter"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("kill_at, place", [
    ("model", "local"), ("tool", "local"), ("step", "local"), ("write", "local"),
    ("model", "subprocess"), ("tool", "subprocess"),
])
def test_a_killed_run_resumes_to_the_same_answer_with_each_call_made_once(tmp_path, kill_at, place):
    killed = child("run", tmp_path, kill_at, place)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if kill_at == "write":  # the log's last line was cut by the kill: it is dropped when read
        [log] = (tmp_path / "rec").glob("*.log")
        assert not log.read_bytes().endswith(b"\n")
    saved = the_record(tmp_path)
    assert saved.status == "running" and saved.format == RECORD_FORMAT and saved.seed is not None
    before = counted(tmp_path)
    resumed = child("resume", tmp_path, place=place)
    assert resumed.returncode == 0, resumed.stderr
    final = the_record(tmp_path)
    assert final.status == "success"
    r = int(final.steps[0].logs.split()[1])  # the seeded draw of step 1, replayed alike
    assert final.output == [1, 2, 4, r, "sent to report"]
    # every tool call the run made happened exactly once, across both processes
    assert counted(tmp_path) == ["a", "b", "send", "c"]
    calls = [c.name for s in final.steps for c in s.tool_calls if c.name != "mark"]
    assert calls == ["count", "count", "send", "count"] and all(c.done for s in final.steps for c in s.tool_calls)
    assert before == counted(tmp_path)[:len(before)]


def test_the_record_is_on_disk_after_each_reply_and_call(tmp_path):
    seen: list[tuple[str, int, list[bool]]] = []

    @tool
    def peek() -> int:
        """Read the run's record as it is now."""
        [path] = tmp_path.glob("*.json")
        record = load_record(path)  # the record, and the log of the step in progress
        last = record.steps[-1]
        seen.append((record.status, len(record.steps), [c.done for c in last.tool_calls]))
        return len(record.steps)

    replies = ["<code>\nn = peek()\n</code>", "<code>\nm = peek()\nfinal_answer(n + m)\n</code>"]
    with CodeAgent(ScriptedModel(replies), tools=[peek], executor=LocalExecutor(), record_dir=tmp_path) as agent:
        result = agent.run("peek twice")
    assert result.output == 3
    # during the call: the reply saved (the call itself is saved when it returns)
    assert seen == [("running", 1, []), ("running", 2, [])]
    saved = load_record(tmp_path / f"{result.run_id}.json")
    assert [len(s.tool_calls) for s in saved.steps] == [1, 1] and saved.steps[0].tool_calls[0].result == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{result.run_id}.json"]  # (no log, no temporary)
    assert RunResult.load(tmp_path / f"{result.run_id}.json").status == "success"


def test_a_step_whose_output_depends_on_a_changed_file_stops_the_replay_at_that_step(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.txt").write_text("threshold = 3\n")
    replies = ["<code>\nprint('setup')\n</code>",
               f"<code>\nimport pathlib\nprint(pathlib.Path({str(data / 'config.txt')!r}).read_text())\n</code>",
               "<code>\nfinal_answer('done')\n</code>"]
    records = tmp_path / "records"
    executor = LocalExecutor(access=Access(read=[str(data)]), authorized_imports=["pathlib"])
    with executor, CodeAgent(ScriptedModel(replies), executor=executor, record_dir=records) as agent:
        result = agent.run("read the config")
    assert result.success and result.steps[1].logs == "threshold = 3\n\n"
    cut = result.model_copy(deep=True)
    cut.steps, cut.status = cut.steps[:2], "running"  # as if killed before step 3
    (data / "config.txt").write_text("threshold = 4\n")
    agent2 = CodeAgent(ScriptedModel(replies[2:]), executor=LocalExecutor(access=Access(read=[str(data)]), authorized_imports=["pathlib"]))
    with agent2, pytest.raises(ReplayDiverged) as caught:
        agent2.resume(cut)
    assert caught.value.step == 2
    assert "-threshold = 3" in str(caught.value) and "+threshold = 4" in str(caught.value)
    agent3 = CodeAgent(ScriptedModel(replies[2:]), executor=LocalExecutor(access=Access(read=[str(data)]), authorized_imports=["pathlib"]))
    with agent3:
        assert agent3.resume(cut, on_divergence="continue").output == "done"


def test_approval_pauses_and_an_approval_from_a_new_process_finishes_the_run(tmp_path):
    paused = child("run", tmp_path, approval=True)
    assert paused.returncode == 0, paused.stderr
    record = the_record(tmp_path)
    assert record.status == "paused" and record.pending is not None
    assert record.pending.name == "send" and record.pending.arguments == "send('report')"
    assert counted(tmp_path) == ["a", "b"]  # the call was not made
    again = child("resume", tmp_path, approval=True)  # no decision: still paused, nothing made
    assert again.stdout.startswith("paused") and counted(tmp_path) == ["a", "b"]
    approved = child("approve", tmp_path, approval=True)
    assert approved.returncode == 0, approved.stderr
    assert the_record(tmp_path).status == "success"
    assert counted(tmp_path) == ["a", "b", "send", "c"]


def test_a_rejected_call_tells_the_model_why(tmp_path):
    assert child("run", tmp_path, approval=True).returncode == 0
    rejected = child("reject", tmp_path, approval=True)
    assert rejected.returncode == 0, rejected.stderr
    record = the_record(tmp_path)
    step = record.steps[2]
    assert "rejected this call to send()" in step.observation and "not to that address" in step.observation
    assert [c.rejected for c in step.tool_calls] == [True]
    assert "send" not in counted(tmp_path)


def test_approval_policy_on_the_agent_and_resume_in_process(tmp_path):
    sent: list[str] = []

    @tool
    def email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return "ok"

    replies = ["<code>\nr = email('boss')\n</code>", "<code>\nfinal_answer(r)\n</code>"]
    agent = CodeAgent(ScriptedModel(replies), tools=[email], executor=LocalExecutor(),
                      approval=lambda name, args, kwargs: args == ("boss",))
    with agent:
        paused = agent.run("mail the boss")
        assert paused.status == "paused" and sent == []
        agent.model = ScriptedModel(replies[1:])
        done = agent.resume(paused, approve=True)
    assert done.output == "ok" and sent == ["boss"]
    with pytest.raises(ValueError, match="not paused"):
        agent.resume(done, approve=True)


def test_record_formats_are_checked(tmp_path):
    record = RunResult(run_id="r1", task="t", status="running")
    newer = json.loads(record.to_json())
    newer["format"] = RECORD_FORMAT + 1
    with pytest.raises(RecordFormatError, match="newer than this codeagent reads"):
        RunResult.from_json(json.dumps(newer))
    older = json.loads(record.to_json())
    del older["format"]
    (tmp_path / "old.json").write_text(json.dumps(older))
    loaded = RunResult.load(tmp_path / "old.json")
    assert loaded.format == 1  # read, never taken for the current format
    with CodeAgent(ScriptedModel([]), executor=LocalExecutor()) as agent, \
            pytest.raises(RecordFormatError, match="format-1 record: it can be read and viewed"):
        agent.resume(tmp_path / "old.json")


def test_an_atomic_write_that_fails_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    write_atomic(path, "old")

    def broken(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr("codeagent.runs.atomic.os.replace", broken)
    with pytest.raises(OSError):
        write_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _codeagent(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=ROOT, env={**full, **env},
                          capture_output=True, text=True, timeout=120)


def test_cli_approve_and_resume(tmp_path):
    (tmp_path / "gated.py").write_text(textwrap.dedent('''
        from pathlib import Path
        from codeagent import tool

        @tool(approval=True)
        def deploy(version: str) -> str:
            """Deploy a version."""
            with open(Path(__file__).with_name("deployed"), "a") as f:
                f.write(version + "\\n")
            return "deployed " + version
    '''))
    env = {"PYTHONPATH": str(tmp_path)}
    out = tmp_path / "out"
    replies = ["<code>\nr = deploy('1.2')\nprint(r)\n</code>", "<code>\nfinal_answer(r)\n</code>"]
    with OpenAIStub(replies) as stub:
        run = _codeagent("run", "deploy 1.2", "--model", "m", "--base-url", stub.base_url, "--tools",
                         "gated:deploy", "--executor", "local", "--out", str(out), env=env)
        assert run.returncode == 3, run.stderr
        assert "codeagent approve" in run.stderr
        [record] = out.glob("*.json")
        assert not (tmp_path / "deployed").exists()
        resumed = _codeagent("resume", str(record), env=env)
        assert resumed.returncode == 3 and "is paused" in resumed.stderr
        approved = _codeagent("approve", str(record), env=env)
        assert approved.returncode == 0, approved.stderr
    assert (tmp_path / "deployed").read_text() == "1.2\n"
    assert RunResult.load(record).output == "deployed 1.2"
    assert len(stub.requests) == 2  # the replayed step asked the model nothing
    again = _codeagent("resume", str(record), env=env)
    assert again.returncode == 0 and "already ended" in again.stderr


def test_a_batch_killed_mid_run_resumes_the_run_from_its_last_step(tmp_path, monkeypatch):
    from codeagent.batch import run_batch

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(CHILD.parent), str(ROOT)]))
    summary = run_batch("durable_child:batch_agent", [{"id": "t1", "task": "count", "dir": str(tmp_path)}],
                        out=tmp_path / "batch", workers=1, retries=1, progress=None)
    [row] = summary.rows
    assert row.status == "success", row.error
    assert (tmp_path / "killed").exists()  # the first attempt's process died at step 3
    assert counted(tmp_path) == ["a", "b", "send", "c"]  # steps 1-2's calls were not made again
    run = json.loads((tmp_path / "batch" / "runs" / "t1.json").read_text())
    assert run["output"][:3] == [1, 2, 4]
    assert not list((tmp_path / "batch" / "partial").glob("*"))  # committed: the partial record is gone


def test_a_call_logged_inside_a_step_reads_back_as_it_was_made(tmp_path):
    """The log's lines (record_file.py: pydantic-core's JSON, the json module's for a lone
    surrogate) and the journal's short trees (codec/small.py) read back as the calls were made."""
    made = [("surrogate", ("x\ud800y", 2.0, True)), ("text", {"k": ["é\u2028", None, -0.0, 10**30]}),
            ("tag-like key", {"$t": "not a tag"})]
    seen: list[RunResult] = []

    @tool
    def echo(i: int) -> object:
        """Return made[i]."""
        return made[i][1]

    @tool
    def peek() -> int:
        """Read the run's record (and its log) as it is now."""
        [path] = tmp_path.glob("*.json")
        seen.append(load_record(path))
        return 0

    code = "\n".join(f"r{i} = echo({i})" for i in range(len(made))) + "\npeek()\nfinal_answer(1)"
    with CodeAgent(ScriptedModel([f"<code>\n{code}\n</code>"]), tools=[echo, peek], executor=LocalExecutor(),
                   record_dir=tmp_path) as agent:
        assert agent.run("echo").output == 1
    from executors.worker.codec import decode_value, encode_value
    calls = seen[0].steps[0].tool_calls
    assert [c.name for c in calls] == ["echo"] * len(made)
    for call, (_, value) in zip(calls, made, strict=True):
        assert call.done and call.result == encode_value(value) and decode_value(call.result) == value


def test_a_lone_surrogate_in_a_steps_output_loses_no_event_and_no_record(tmp_path):
    """print("\\ud800") is valid Python: pydantic-core has no UTF-8 for it, and the NDJSON event,
    the record and the run's file take the json module's escape instead of failing the run."""
    replies = ['<code>\nprint("a\\ud800b")\nfinal_answer("c\\udfffd")\n</code>']
    with CodeAgent(ScriptedModel(replies), executor=LocalExecutor(), record_dir=tmp_path) as agent:
        events = list(agent.stream("print it"))
    lines = [json.loads(event.to_json()) for event in events]
    assert any("a\ud800b" in json.dumps(line, ensure_ascii=False) for line in lines)
    [path] = tmp_path.glob("*.json")
    result = load_record(path)
    assert result.output == "c\udfffd" and "a\ud800b" in result.steps[0].logs
    assert RunResult.from_json(result.to_json()).output == "c\udfffd"
