"""`codeagent run/exec --read/--write/--workdir/--network`, the prompt's file listing, and `--out`.

The command runs in a real subprocess (exec) or against a real local chat-completions server (run).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from openai_stub import OpenAIStub
from test_attachments_agent import PNG, FigureExecutor

from codeagent import CodeAgent, ScriptedModel
from codeagent.cli import main as cli
from executors import Access, LocalExecutor, SubprocessExecutor

ROOT = Path(__file__).resolve().parents[1]
READ_CSV = "import pandas as pd\ndf = pd.read_csv({path!r})\nprint(int(df['n'].sum()))\n"


def codeagent(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def shared(tmp_path_factory):
    """A directory under /tmp the subprocess sandbox user (nobody) can enter: pytest's own tmp
    directories are root's only."""
    base = Path(tempfile.mkdtemp(prefix="codeagent-grants-cli-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def data(shared):
    d = shared / "data"
    d.mkdir()
    d.chmod(0o755)
    (d / "numbers.csv").write_text("n\n1\n2\n39\n")
    return d


def code_file(tmp_path, text: str) -> str:
    path = tmp_path / "step.py"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("place", ["local", "subprocess"])
def test_exec_reads_a_granted_directory_and_nothing_else(place, data, tmp_path):
    step = code_file(tmp_path, READ_CSV.format(path=str(data / "numbers.csv")))
    granted = codeagent("exec", step, "--executor", place, "--import", "pandas", "--read", str(data))
    assert granted.returncode == 0, granted.stderr
    assert granted.stdout.strip() == "42"
    refused = codeagent("exec", step, "--executor", place, "--import", "pandas")
    assert refused.returncode == 1 and "42" not in refused.stdout


def test_relative_paths_resolve_in_the_workdir(data, shared, tmp_path):
    work = shared / "work"
    work.mkdir()
    work.chmod(0o777)  # lent to the sandbox user
    step = code_file(tmp_path, "import pandas as pd\npd.DataFrame({'a': [1]}).to_csv('out.csv', index=False)\n"
                               "print(pd.read_csv('out.csv')['a'].sum())\n")
    proc = codeagent("exec", step, "--executor", "subprocess", "--import", "pandas", "--workdir", str(work))
    assert proc.returncode == 0, proc.stderr
    assert (work / "out.csv").read_text().split() == ["a", "1"]


@pytest.mark.parametrize("flags, expected", [
    (["--read", "/no/such/dir"], "codeagent exec: --read /no/such/dir: /no/such/dir does not exist"),
    (["--workdir", "{file}"], "is not a directory"),
    (["--write", str(ROOT)], "--write would let model code write"),
    (["--read", "{data}", "--write", "{data}"], "grants overlap"),
])
def test_a_bad_grant_is_one_line_and_exit_status_2(flags, expected, data, tmp_path):
    step = code_file(tmp_path, "print(1)\n")
    flags = [f.format(data=data, file=step) for f in flags]
    proc = codeagent("exec", step, *flags)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Access(" not in lines[0] and "Traceback" not in proc.stderr


def test_the_grant_flags_build_one_access_for_every_executor(data, tmp_path):
    args = cli.build_parser().parse_args(["exec", "f.py", "--read", str(data), "--write", str(tmp_path / "w"),
                                          "--workdir", str(tmp_path), "--network"])
    (tmp_path / "w").mkdir()
    access = cli.access_from_args(args)
    assert access == Access(read=[str(data)], write=[str(tmp_path / "w")], workdir=str(tmp_path), network=True)
    none = cli.build_parser().parse_args(["exec", "f.py"])
    assert cli.access_from_args(none) is None


def test_run_tells_the_model_which_files_it_can_see(data):
    replies = ["<code>\nimport pandas as pd\nfinal_answer(int(pd.read_csv('" + str(data / "numbers.csv")
               + "')['n'].sum()))\n</code>"]
    with OpenAIStub(replies) as stub:
        proc = codeagent("run", "Sum column n of numbers.csv", "--model", "m", "--base-url", stub.base_url,
                         "--import", "pandas", "--read", str(data))
    assert proc.returncode == 0, proc.stderr
    assert "✓ answer: 42" in proc.stdout
    system = stub.requests[0]["messages"][0]["content"]
    assert f"{data} (read-only)" in system and f"  {data / 'numbers.csv'}" in system
    assert "relative paths resolve in the working directory" in system
    assert "There is no network or shell access" in system and "open() is not available" in system


def test_without_grants_the_prompt_says_there_is_no_file_access():
    with CodeAgent(ScriptedModel([])) as agent:
        prompt = agent.system_prompt()
    assert "There is no file, network or shell access" in prompt and "Files:" not in prompt


def test_the_listing_is_capped(tmp_path):
    for i in range(100):
        (tmp_path / f"f{i:03}.csv").write_text("x\n")
    with CodeAgent(ScriptedModel([]), access=Access(read=[str(tmp_path)], network=True)) as agent:
        prompt = agent.system_prompt()
    assert prompt.count(".csv") <= 30 and "more files not listed" in prompt
    assert "The network is reachable" in prompt


def test_the_agent_reads_the_grants_of_the_executor_it_is_given(data):
    with SubprocessExecutor(access=Access(read=[str(data)])) as ex:
        prompt = CodeAgent(ScriptedModel([]), executor=ex).system_prompt()
    assert f"{data / 'numbers.csv'}" in prompt
    with pytest.raises(ValueError, match="give access=... to that executor's constructor"):
        CodeAgent(ScriptedModel([]), executor=LocalExecutor(), access=Access())
    with pytest.raises(TypeError, match="access must be an executors.Access"):
        CodeAgent(ScriptedModel([]), access={"read": ["x"]})


def test_run_out_saves_the_run_and_its_figures_and_prints_their_paths(tmp_path, monkeypatch, capsys):
    replies = ["<code>\nx = 1  # figure\n</code>", "<code>\nfinal_answer(x)\n</code>"]
    monkeypatch.setattr(cli, "make_model", lambda args: ScriptedModel(replies))
    monkeypatch.setattr(cli, "make_executor", lambda *a, **k: FigureExecutor())
    out = tmp_path / "out"
    assert cli.main(["run", "plot", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    (run_json,) = out.glob("*.json")
    figure = out / f"{run_json.stem}.figure-1.png"
    assert figure.read_bytes() == PNG
    assert f"saved: {run_json}" in printed and f"saved: {figure}" in printed
    assert f"saved as {figure.resolve()}" in printed  # the model was told where it went
    saved = json.loads(run_json.read_text())
    assert saved["steps"][0]["attachments"][0]["file"] == figure.name


def test_exec_out_saves_the_figures(tmp_path, monkeypatch, capsys):
    class OneFigure(LocalExecutor):
        def execute(self, code):
            from executors import Attachment

            return dataclasses.replace(super().execute(code), attachments=(Attachment("image/png", PNG, "figure 1", 3, 2),))

    monkeypatch.setattr(cli, "make_executor", lambda *a, **k: OneFigure())
    step = code_file(tmp_path, "1 + 1\n")
    assert cli.main(["exec", step]) == 0
    assert "figure 1: 3×2 PNG, 1 kB (not saved: pass --out DIR to keep it)" in capsys.readouterr().out
    assert cli.main(["exec", step, "--json", "--out", str(tmp_path / "o")]) == 0
    (figure,) = json.loads(capsys.readouterr().out)["attachments"]
    assert Path(figure["file"]).read_bytes() == PNG and figure["file"].endswith("exec.figure-1.png")
