"""The fuzzing package's "deferred" family (issue 21): model-made objects with hostile methods,
host callables as methods, suspended generators and lazy iterators over host writers, handed to
each of the user's tools by generated model code or left for the host, which the evaluator then
touches as a host would. `codeagent fuzz --escape-families deferred` runs it.

Where nothing holds them (plain CPython) the attempts write beside the marker or read the secret;
every executor must hold them. Today LocalExecutor does not: that test fails until the
plain-data boundary lands (branch i21-boundary), by design.
"""

from __future__ import annotations

import ast
import gc
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import library_escape_harness as base
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from test_fuzz import _args

from codeagent.cli import fuzz as fuzz_cli
from executors import ExecutionError, ExecutionResult, FinalAnswer, Limits
from executors.fuzzing import Session, fuzz
from executors.fuzzing.attacks.deferred import FORMS, deferred_plan
from executors.fuzzing.attacks.escapes import DEFAULT_FAMILIES, FAMILIES
from executors.fuzzing.campaigns.campaign import check_families
from executors.fuzzing.judging.host_touches import touch_like_a_host
from executors.fuzzing.judging.probes import probe_tools
from executors.restricted.compiler.checker import inspect_tree
from executors.strategies import escape_attempts

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[1]
WRITERS = ["pathlib", "numpy.*", "tempfile"]


class PlainExecutor:
    """No sandbox: one namespace across steps, the last expression's value as the output, the
    real tools, real variables. What the deferred family must get out of."""

    authorized_imports = tuple(WRITERS)
    limits = Limits(timeout_s=5)

    def __init__(self) -> None:
        self.tools: dict[str, Any] = {}
        self.ns: dict[str, Any] = {}

    def register_tools(self, tools: Any) -> None:
        self.tools.update(tools)

    def execute(self, code: str) -> ExecutionResult:
        answer: list[Any] = []

        def final_answer(value: Any = None) -> Any:
            answer.append(value)
            raise FinalAnswer(value)

        self.ns.update(self.tools, final_answer=final_answer)
        logs = io.StringIO()
        value, err = base.plain_exec(code, logs, ns=self.ns)
        if answer:
            return ExecutionResult(output=answer[0], logs=logs.getvalue(), is_final_answer=True)
        error = ExecutionError(err["type"], err["message"]) if err else None
        return ExecutionResult(output=value, logs=logs.getvalue(), error=error)

    def get_variables(self) -> dict[str, Any]:
        return {k: v for k, v in self.ns.items() if not k.startswith("_") and k not in self.tools}

    def set_variables(self, values: Any) -> None:
        self.ns.update(values)

    def reset(self) -> None:
        self.ns = {}
        gc.collect()

    def close(self) -> None:
        self.reset()


def test_deferred_family_is_known_drawn_by_default_and_asked_for_by_name() -> None:
    # drawn by default: a short default campaign found a host write through get_variables()
    assert "deferred" in FAMILIES and "deferred" in DEFAULT_FAMILIES
    assert check_families(["deferred"]) == ("deferred",)


def test_deferred_plan_follows_the_authorized_importable_modules() -> None:
    assert not deferred_plan((), ("search",)).usable  # nothing writes files: nothing to draw
    plan = deferred_plan(("pathlib", "no_such_module_xyz"), ("search", "add"))
    assert plan.usable and plan.tools == ("add", "search")
    assert {w[0] for w in plan.writers} == {"pathlib"} and {w[0] for w in plan.host_writers} == {"pathlib"}
    data = deferred_plan(("numpy.*", "pandas.*"), ())
    assert {w[0] for w in data.host_writers} == {"numpy", "pandas"}


@hseed(5)
@settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(escape_attempts("/tmp/codeagent-deferred/ESCAPED", "CANARY", tools=probe_tools(),
                       authorized_imports=WRITERS, families=["deferred"]))
def test_deferred_attempts_are_model_code_the_policy_accepts(attempt: Any) -> None:
    """The language is not the way out: each attempt passes the AST policy, calls only the tools
    it was given, and says which form and destination it is."""
    assert attempt.family == "deferred" and attempt.encoding in FORMS
    violations = inspect_tree(ast.parse(attempt.code), frozenset(probe_tools()) | {"final_answer"})
    assert violations == [], [v.message for v in violations]


def test_host_touches_survive_hostile_values() -> None:
    class Hostile:
        def __len__(self) -> int:
            raise RuntimeError("no")

    assert touch_like_a_host([Hostile(), "plain", 3]) > 0  # errors are the value's, never ours


def _outcomes(factory: Any, examples: int, seed: int) -> list[Any]:
    outcomes: list[Any] = []
    seen: set[str] = set()
    with Session(factory, margin_s=5.0) as session:
        @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @hseed(seed)
        @given(escape_attempts(session.marker, "CANARY", tools=session.tools, authorized_imports=WRITERS,
                               families=["deferred"]))
        def run(attempt: Any) -> None:
            if attempt.code not in seen:
                seen.add(attempt.code)
                outcomes.append(session.run("escape", attempt.code, attempt.label))

        run()
    return outcomes


def test_deferred_attempts_get_out_of_plain_cpython() -> None:
    """Not vacuous: with nothing to hold them, most attempts write beside the marker or read the
    secret, through every form and through the tools as well as the host's touches."""
    outcomes = _outcomes(PlainExecutor, 150, 21)
    escaped = [o for o in outcomes if o.status == "escape"]
    assert len(escaped) >= 0.5 * len(outcomes), (len(escaped), len(outcomes))
    assert {o.label.split("/")[-1] for o in escaped} == set(FORMS)
    assert {o.label.split("/")[1] for o in escaped} == {"marker", "read"}
    destinations = {o.label.split("/")[-2] for o in escaped}
    assert any(d.startswith("tool-") for d in destinations) and {"output", "variable"} & destinations


@pytest.mark.parametrize("kind", ["local", "subprocess", "unhardened"])
def test_deferred_campaign_finds_no_escape(kind: str) -> None:
    """`codeagent fuzz --escape-families deferred` in small, for the probe tools: every attempt
    held (LocalExecutor fails this today: issue 21)."""
    from executors import LocalExecutor, SubprocessExecutor

    limits = Limits(timeout_s=10.0)

    def make() -> Any:
        if kind == "local":
            return LocalExecutor(authorized_imports=WRITERS, limits=limits)
        return SubprocessExecutor(authorized_imports=WRITERS, limits=limits, harden=kind == "subprocess",
                                  unconfined_native=kind != "subprocess")

    report = fuzz(make, examples=60, seconds=120, properties=["escapes"], escape_families=["deferred"],
                  margin_s=5.0, seed=13)
    assert report.total("escape") >= 30, dict(report.counts)
    failed = report.failed({"escape", "hang", "internal-error"})
    assert not failed, "\n\n".join(f"{o.label}: {o.detail}\n{o.code}" for o in failed[:3])


def word_count(text: str) -> int:
    """Words in a text."""
    return len(text.split())


def format_report(rows: list) -> str:
    """Rows as a report."""
    return "\n".join(f"- {row}" for row in rows)


USER_TOOLS = {"word_count": word_count, "format_report": format_report}  # a user's own tools


def test_cli_finds_the_deferred_class_for_a_users_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`codeagent fuzz --escape-families deferred --tools ...` against an executor that holds
    nothing: it exits non-zero and names the deferred attempts it found."""
    monkeypatch.setattr(fuzz_cli, "make_factory", lambda args: PlainExecutor)
    args = _args(examples=12, properties=["escapes"], escape_families=["deferred"], authorized_imports=WRITERS,
                 tools=["test_fuzz_deferred:USER_TOOLS"], seed=2, save_dir=str(tmp_path / "fails"))
    assert fuzz_cli.run_fuzz(args) == 1
    assert "deferred/" in capsys.readouterr().out
    saved = [p.read_text() for p in (tmp_path / "fails").glob("escape-escape-*.py")]
    assert any("word_count(*args)" in text or "format_report(*args)" in text for text in saved)


def test_cli_deferred_campaign_on_the_hardened_worker(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "codeagent.cli.fuzz", "--executor", "subprocess", "--examples", "12",
         "--properties", "escapes", "--escape-families", "deferred", "--authorized-imports", *WRITERS,
         "--timeout", "10", "--seed", "3", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(out.read_text())
    assert summary["examples"] == 12 and summary["escapes"] == 0 and summary["internal_errors"] == 0
