"""Distributed fuzzing (`codeagent fuzz --backend local|ray`): a campaign with a seed is a function
of (seed, examples, shard size, options), wherever its shards run.

The same campaign runs in this process (no --backend, as before), on a local process pool and on a
real local Ray instance; the reports (counts, refusal types and their order, failing examples) and
the saved reproducers must be the same. Resource bombs are left out of that comparison: which
limit stops a bomb first (time, operations, memory) is a race the machine's load decides, in one
process as much as on many.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unavailable import unavailable

from codeagent.cli import fuzz as fuzz_cli
from executors.fuzzing import (
    CommandOptions,
    FuzzReport,
    Outcome,
    merge_reports,
    plan_shards,
    report_from_dict,
    report_to_dict,
    run_command,
)
from executors.fuzzing.campaigns.campaign import PROPERTIES, phase_plan

TESTS = Path(__file__).resolve().parent
_ORACLE = os.path.join("fuzzing", "differential", "oracle.py")


def scale(n: int) -> int:
    """Triple n in a sandbox, double it in the CPython reference: every program that prints what
    it returns is a mismatch, the same one wherever it runs, so campaigns have reproducers to save."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_ORACLE):
            return n * 2
        frame = frame.f_back
    return n * 3


MISMATCHING_TOOLS = {"scale": scale}
TOOLS_SPEC = f"{__name__}:MISMATCHING_TOOLS"  # imported by the workers (tests/ is on their path)


# ----------------------------------------------------------------------------- laws, no workers


@given(examples=st.integers(1, 5000), props=st.lists(st.sampled_from(PROPERTIES), min_size=1, max_size=3, unique=True),
       size=st.integers(1, 1200), seed=st.integers(0, 2**31))
def test_the_plan_covers_each_phase_in_runs_seeded_like_the_in_process_campaign(examples, props, size, seed):
    shards = plan_shards(examples, props, seed, size)
    assert [s.index for s in shards] == list(range(len(shards)))
    for prop, planned in phase_plan(examples, props).items():
        mine = [s for s in shards if s.prop == prop]
        assert sum(s.examples for s in mine) == planned
        assert all(0 < s.examples <= size for s in mine)
        # the k-th hypothesis run of a phase is seeded seed + k, in one process as in a shard
        assert [s.hypothesis_seed for s in mine] == [seed + k for k in range(len(mine))]
    assert [s.prop for s in shards] == sorted((s.prop for s in shards), key=props.index)


_outcomes = st.builds(Outcome, category=st.sampled_from(["program", "escape", "bomb"]),
                      label=st.sampled_from(["data", "x/y"]),
                      status=st.sampled_from(["equal", "refused", "divergent", "mismatch", "held", "escape",
                                              "contained", "uncontained", "hang", "internal-error"]),
                      code=st.sampled_from(["", "print(1)", "x = 2"]), detail=st.sampled_from(["", "why"]),
                      error_type=st.none() | st.sampled_from(["TimeoutError", "PolicyError", "ValueError"]),
                      duration_s=st.floats(0, 5))


@settings(max_examples=60, deadline=None)
@given(outcomes=st.lists(_outcomes, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=5))
def test_merging_shard_reports_in_order_gives_the_whole_campaigns_report(outcomes, cuts):
    whole = FuzzReport()
    for o in outcomes:
        whole.add(o)
    bounds = sorted({0, len(outcomes), *(c for c in cuts if c <= len(outcomes))})
    parts = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part = FuzzReport()
        for o in outcomes[lo:hi]:
            part.add(o)
        parts.append(report_from_dict(json.loads(json.dumps(report_to_dict(part)))))  # as it crosses
    merged = merge_reports(parts)
    assert merged.counts == whole.counts
    # refusal types tie-break by first appearance: the printed order must not depend on sharding
    assert list(merged.error_types.items()) == list(whole.error_types.items())
    assert merged.failures == whole.failures
    assert [o.duration_s for o in merged.top_slowest(5)] == [o.duration_s for o in whole.top_slowest(5)]


def test_a_shard_that_never_reports_back_fails_the_campaign(tmp_path, capsys):
    options = CommandOptions(examples=30, seed=1, shard_size=10, properties=["cpython"], backend="local",
                             save_dir=str(tmp_path), json=str(tmp_path / "summary.json"))
    lost = lambda tasks: {t["id"]: "crashed: the worker process was killed by SIGKILL" for t in tasks}  # noqa: E731
    assert run_command(options, None, None, distribute=lost) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["internal_errors"] == 3 and summary["shards"] == 3  # one per lost shard, never "passed"
    assert "did not finish: crashed: the worker process was killed by SIGKILL" in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "message"), [
    (["--backend", "local", "--seconds", "10"], "--seconds cannot be used with --backend"),
    (["--backend", "local", "--workers", "0"], "argument --workers: must be between 1 and 1024, got 0"),
    (["--shard-size", "0"], "argument --shard-size: must be >= 1, got 0"),
    (["--escape-families", "nope"], "--escape-families: escape families must be among dunder_walk"),
])
def test_options_that_cannot_work_are_refused_before_anything_runs(flags, message, capsys):
    """A usage mistake is one line and exit status 2 (1 means the campaign found something)."""
    with pytest.raises(SystemExit) as stopped:
        fuzz_cli.main(flags)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_escape_families_narrow_the_attempts_and_travel_with_the_shards():
    """--escape-families library: only attempts through the libraries, in process and in the
    shard tasks a distributed run hands out."""
    from executors import LocalExecutor
    from executors.fuzzing import CommandOptions, fuzz
    from executors.fuzzing.campaigns.distributed import shard_tasks
    from executors.fuzzing.campaigns.shards import plan_shards

    imports = ["numpy.*", "pandas.*"]
    labels: list[str] = []
    report = fuzz(lambda: LocalExecutor(authorized_imports=imports), examples=6, properties=["escapes"],
                  escape_families=["library"], seed=5,
                  on_outcome=lambda o: labels.append(o.label))
    assert labels and all(label.startswith("library/") for label in labels), labels
    assert report.failures == []
    options = CommandOptions(examples=6, seed=5, properties=["escapes"], escape_families=["library"])
    tasks = shard_tasks(plan_shards(6, ["escapes"], 5, 10), options)
    assert tasks and all(t["options"]["escape_families"] == ["library"] for t in tasks)
    with pytest.raises(ValueError, match="escape families must be among"):
        fuzz(LocalExecutor, examples=1, escape_families=["nope"])


# ----------------------------------------------------------------------------- the same campaign, three places


def _campaign(tmp_path: Path, name: str, *flags: str, fresh_process: bool = False) -> tuple[dict, dict[str, str]]:
    """Run one campaign from the command line; (its JSON summary without timings and the backend,
    its saved reproducers by file name)."""
    out = tmp_path / name
    args = ["--examples", "40", "--seed", "3", "--shard-size", "10", "--properties", "cpython", "escapes",
            "--tools", TOOLS_SPEC, "--save-dir", str(out), "--json", str(tmp_path / f"{name}.json"), *flags]
    if fresh_process:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
        proc = subprocess.run([sys.executable, "-m", "codeagent.cli.fuzz", *args], capture_output=True, text=True,
                              env=env, cwd=TESTS.parent, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
    else:
        assert fuzz_cli.main(args) == 0  # mismatches fail only with --strict
    summary = json.loads((tmp_path / f"{name}.json").read_text())
    for key in ("duration_s", "backend", "workers", "seed", "shards", "shard_size"):
        summary.pop(key, None)
    # a reproducer's rerun line names its own path: the rest of the file must be the same
    return summary, {p.name: p.read_text().replace(str(out), "SAVE_DIR") for p in sorted(out.glob("*.py"))}


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    # In a fresh process, as a user runs it: this one may carry an audit hook an earlier test
    # installed (they cannot be removed), which changes what error some escape attempts meet.
    return _campaign(tmp_path_factory.mktemp("fuzz"), "here", fresh_process=True)


def test_a_local_process_pool_gives_the_in_process_report(in_process, tmp_path):
    summary, saved = in_process
    assert summary["mismatches"] > 0 and summary["escape_attempts"] > 0 and saved  # a real comparison
    assert _campaign(tmp_path, "pool", "--backend", "local", "--workers", "2") == in_process
    # the shards' results stay in --shard-dir: run again, nothing is redone, the same report
    assert _campaign(tmp_path, "pool2", "--backend", "local", "--shard-dir", str(tmp_path / "shards")) == in_process
    assert _campaign(tmp_path, "pool3", "--backend", "local", "--shard-dir", str(tmp_path / "shards")) == in_process
    assert len((tmp_path / "shards" / "results.jsonl").read_text().splitlines()) == 5  # 5 shards, run once


def test_ray_gives_the_in_process_report_and_its_reproducers_replay(in_process, tmp_path, monkeypatch, capsys):
    from codeagent.batch.backends.ray_actors import ray_available

    problem = ray_available()
    if problem:
        unavailable(f"distributed fuzzing on Ray needs Ray: {problem}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    ray_default = Path(tempfile.gettempdir()) / "ray"
    sessions_before = set(ray_default.glob("session_*"))
    summary, saved = _campaign(tmp_path, "ray", "--backend", "ray", "--workers", "2")
    assert (summary, saved) == in_process
    # the local Ray it started kept its session in a folder of its own, removed at the end
    assert set(ray_default.glob("session_*")) == sessions_before
    assert not list(Path(tempfile.gettempdir()).glob(f"ray-{os.getpid()}-*"))
    first = next(iter(saved))
    meta = json.loads(next(line for line in saved[first].splitlines() if line.startswith("# fuzz-meta: "))[13:])
    assert meta["origin"]["campaign_seed"] == 3
    assert meta["origin"]["hypothesis_seed"] == 3 + meta["origin"]["shard"]
    capsys.readouterr()
    assert fuzz_cli.main(["--replay", str(tmp_path / "ray" / first), "--tools", TOOLS_SPEC]) == 0
    assert f"{first}: mismatch" in capsys.readouterr().out  # the saved example still reproduces

