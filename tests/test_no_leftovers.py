"""Nothing left behind: the runs that used to leave folders in the temp dir (or `.hypothesis/` in
the user's current directory) leave none, each run in a subprocess with a temp dir of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def private_tmp(tmp_path: Path) -> Path:
    """An empty folder to be the temp dir (TMPDIR) of the runs under test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def run(args: list[str], tmpdir: Path, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_suites_own_runs_of_the_leaky_tests_leave_no_temp_folders(private_tmp: Path, tmp_path: Path):
    # A SubprocessExecutor whose host is SIGKILLed, and a fuzz replay of a saved escape (it names
    # the marker folder of the campaign that saved it): both used to leave a folder per run.
    proc = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--basetemp={tmp_path / 'bt'}",
                "tests/test_subprocess.py::test_no_orphans_after_the_host_is_sigkilled",
                "tests/test_fuzz.py::test_cli_exits_nonzero_and_saves_replayable_failures"], private_tmp)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
    assert sorted(os.listdir(private_tmp)) == []


def test_the_stream_and_replay_example_leaves_nothing(private_tmp: Path):
    proc = run([str(ROOT / "examples" / "stream_and_replay.py")], private_tmp, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "replayed answer 3382 == original 3382: True" in proc.stdout
    assert sorted(os.listdir(private_tmp)) == []


def test_codeagent_fuzz_leaves_nothing_in_the_current_directory(private_tmp: Path, tmp_path: Path):
    work = tmp_path / "project"
    work.mkdir()
    proc = run(["-m", "codeagent", "fuzz", "--examples", "4", "--properties", "cpython", "--seed", "1"],
               private_tmp, cwd=work)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert sorted(os.listdir(work)) == []  # no .hypothesis/ (and no fuzz-failures/: nothing failed)
    assert sorted(os.listdir(private_tmp)) == []
