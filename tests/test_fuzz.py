"""Fuzzing as a feature: the strategies bite, the properties detect, and every executor that
exists here survives a short campaign (seconds each; the long one is scripts/fuzz-long)."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import executor_class
from hypothesis import HealthCheck, given, settings

from codeagent import fuzz as fuzz_cli
from executors import ExecutionError, ExecutionResult, FinalAnswer, Limits
from executors.strategies import (
    BOMB_KINDS,
    Bomb,
    EscapeAttempt,
    escape_attempts,
    programs,
    resource_bombs,
)
from executors.testing import (
    CANARY_ENV,
    Session,
    check_bombs_contained,
    check_matches_cpython,
    check_no_escape,
    check_no_internal_errors,
    fuzz,
    probe_tools,
    run_cpython,
)

ROOT = Path(__file__).resolve().parents[1]
QUICK = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)


class UnsafeExecutor:
    """No sandbox at all (plain exec): what the properties must catch."""

    authorized_imports = ()
    limits = Limits(timeout_s=2)

    def __init__(self) -> None:
        self.tools: dict[str, Any] = {}

    def register_tools(self, tools: Any) -> None:
        self.tools.update(tools)

    def set_variables(self, values: Any) -> None:
        pass

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass

    def execute(self, code: str) -> ExecutionResult:
        out = io.StringIO()

        def final_answer(value: Any = None) -> Any:
            raise FinalAnswer(value)

        try:
            with contextlib.redirect_stdout(out):
                exec(code, {"final_answer": final_answer, **self.tools})
            return ExecutionResult(logs=out.getvalue())
        except FinalAnswer as fa:
            return ExecutionResult(output=repr(fa.value), logs=out.getvalue(), is_final_answer=True)
        except BaseException as exc:  # noqa: BLE001
            return ExecutionResult(logs=out.getvalue(), error=ExecutionError(type(exc).__name__, "failed"))


# ----------------------------------------------------------------------------- the strategies


@QUICK
@given(programs(tools=probe_tools()))
def test_data_programs_compile_and_are_deterministic(code: str) -> None:
    compile(code, "<fuzz>", "exec")
    first, second = run_cpython(code, probe_tools()), run_cpython(code, probe_tools())
    assert (first.ok, first.logs, first.error_type) == (second.ok, second.logs, second.error_type)


def test_data_programs_mostly_run_to_completion() -> None:
    results = []

    @QUICK
    @given(programs(tools=probe_tools()))
    def collect(code: str) -> None:
        results.append(run_cpython(code, probe_tools()).ok)

    collect()
    assert sum(results) >= 0.8 * len(results), f"only {sum(results)}/{len(results)} ran to completion"


def test_data_programs_call_the_tools() -> None:
    called = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(programs(tools=probe_tools()))
    def collect(code: str) -> None:
        names = {n.func.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        called.extend(names & set(probe_tools()))

    collect()
    assert len(set(called)) >= 3, called


@QUICK
@given(resource_bombs())
def test_bombs_are_tagged(bomb: Bomb) -> None:
    assert bomb.kind in BOMB_KINDS and bomb.code and bomb.label.startswith(bomb.kind + "/")


@QUICK
@given(escape_attempts("/tmp/never-created-marker", CANARY_ENV, tools=list(probe_tools())))
def test_escape_attempts_compile(attempt: EscapeAttempt) -> None:
    compile(attempt.code, "<fuzz>", "exec")
    assert attempt.effect in ("marker", "canary", "reach", "tamper", "read")


def test_escape_attempts_escape_plain_cpython() -> None:
    """The generator is worth something only if its attempts work where nothing stops them."""
    outcomes: list[Any] = []
    fuzz(UnsafeExecutor, examples=100, properties=["escapes"], seed=1, isolate=True, on_outcome=outcomes.append)
    # (tampering is seen once per setting: the host process keeps what the first attempt changed)
    effects = [o for o in outcomes if not o.label.startswith("tamper/")]
    escaped = [o for o in effects if o.status == "escape"]
    assert len(escaped) >= 0.6 * len(effects), (len(escaped), len(effects))
    families = {o.label.split("/")[0] for o in outcomes if o.status == "escape"}
    assert {"dunder_walk", "frames", "builtins", "refused_import", "tamper"} <= families, families


def test_check_no_escape_fails_on_an_unsafe_executor() -> None:
    with pytest.raises(AssertionError, match="escape"):
        check_no_escape(UnsafeExecutor, examples=30, seed=2, isolate=True)


def test_cpython_reference_gives_output_and_final_answer() -> None:
    ref = run_cpython("x = add(1, 2)\nprint(x)\nx * 10", probe_tools())
    assert (ref.ok, ref.logs, ref.output) == (True, "3\n", 30)
    ref = run_cpython("final_answer([1, 2])\nprint('never')")
    assert ref.is_final_answer and ref.output == [1, 2] and ref.logs == ""
    assert run_cpython("input()").error_type == "RuntimeError"  # never waits on stdin
    # module-level annotations are evaluated, as in a fresh interpreter (no inherited __future__)
    assert run_cpython("ifA:A").error_type == "NameError"


# ----------------------------------------------------------------------------- per executor


def _short_campaign(kind: str, cls: type) -> Any:
    limits = Limits(timeout_s=1.0)
    tools = probe_tools()

    def make() -> Any:
        return cls(limits=limits)

    examples, seconds = {"local": (100, 10), "subprocess": (80, 15), "docker": (60, 20)}[kind]
    return fuzz(make, examples=examples, seconds=seconds, tools=tools, margin_s=2.0, seed=0)


def test_short_campaign(executor_kind: str) -> None:
    cls = executor_class(executor_kind)
    report = _short_campaign(executor_kind, cls)
    assert report.total("program") and report.total("escape") and report.total("bomb")
    report.assert_ok({"escape", "internal-error", "hang", "uncontained"})
    # most generated programs are accepted and behave exactly as under CPython
    assert report.total("program", "equal") >= 0.7 * report.total("program"), dict(report.counts)


def test_local_properties_one_by_one() -> None:
    from executors.local import LocalExecutor

    def make() -> Any:
        return LocalExecutor(limits=Limits(timeout_s=1.0))

    assert check_no_escape(make, examples=40, seed=3).total("escape", "held") == 40
    assert check_matches_cpython(make, examples=40, seed=3).total("program", "mismatch") == 0
    check_no_internal_errors(make, examples=30, mode="data", seed=3)
    check_bombs_contained(LocalExecutor, Limits(timeout_s=1.0), margin_s=2.0, examples=6,
                          bomb_kinds=["recursion", "memory"], seed=3)


def test_grammar_programs_on_local() -> None:
    """hypothesmith programs: refused cleanly or CPython's output; a few seconds' worth."""
    from executors.local import LocalExecutor

    report = fuzz(lambda: LocalExecutor(limits=Limits(timeout_s=1.0)), examples=15, seconds=6,
                  properties=["cpython"], mode="grammar", seed=4)
    report.assert_ok({"internal-error", "hang", "mismatch"})


# ----------------------------------------------------------------------------- reproducers


@pytest.mark.parametrize("code", [
    "sorted(range(23197263588))",
    "print(*(['z'] * 4921705), sep='--')",
])
def test_deadline_interrupt_never_leaks_out_of_execute(code: str) -> None:
    """Found by the fuzzer: the watchdog's asynchronous Interrupt escaped execute()."""
    from executors.local import LocalExecutor

    with Session(lambda: LocalExecutor(limits=Limits(timeout_s=1.0)), margin_s=2.0) as session:
        outcome = session.run("bomb", code, "time/reproducer")
    assert outcome.status == "contained", outcome.detail


def test_deque_multiplied_past_the_memory_cap_is_a_clean_error() -> None:
    """Found by the fuzzer: SystemError 'error return without exception set' (deque * n under
    the address-space cap) instead of a MemoryError for the model."""
    from executors.local import LocalExecutor

    with Session(lambda: LocalExecutor(limits=Limits(timeout_s=1.0)), margin_s=2.0) as session:
        outcome = session.run("bomb", "import collections\nx = collections.deque([0]) * 100663296", "memory/deque_mul")
    assert outcome.status == "contained", outcome.detail


@pytest.mark.parametrize("code", [
    "while False:\n    pass\nclass Box:\n    pass\nb = Box()\nb.a = 1\nprint(b.a)",
    "i = 0\nwhile i < 3:\n    i += 1\nclass Box:\n    def __init__(self, a):\n        self.a = a\nprint(Box(i).a)",
])
def test_attribute_writes_after_a_while_loop(code: str) -> None:
    """Found by the fuzzer (a divergent TypeError: 'NoneType' object is not callable)."""
    from executors.local import LocalExecutor

    with Session(lambda: LocalExecutor(limits=Limits(timeout_s=2.0))) as session:
        outcome = session.run("program", code)
    assert outcome.status == "equal", outcome.detail


# ----------------------------------------------------------------------------- the command


def _args(**over: Any) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    fuzz_cli.add_fuzz_arguments(parser)
    args = parser.parse_args([])
    for k, v in over.items():
        setattr(args, k, v)
    return args


def test_cli_runs_a_campaign_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "codeagent.fuzz", "--executor", "local", "--examples", "30",
         "--properties", "cpython", "escapes", "--timeout", "1", "--seed", "5",
         "--save-dir", str(tmp_path / "fails"), "--json", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CPython-equal" in proc.stdout and "fuzz local:" in proc.stderr
    summary = json.loads(out.read_text())
    assert summary["examples"] == 30 and summary["escapes"] == 0 and summary["internal_errors"] == 0


def test_cli_exits_nonzero_and_saves_replayable_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fuzz_cli, "make_factory", lambda args: UnsafeExecutor)
    args = _args(examples=12, properties=["escapes"], save_dir=str(tmp_path / "fails"), seed=6)
    assert fuzz_cli.run_fuzz(args) == 1
    saved = sorted((tmp_path / "fails").glob("escape-escape-*.py"))
    assert saved, capsys.readouterr().out
    text = saved[0].read_text()
    assert "# rerun: python -m codeagent.fuzz --replay" in text
    compile(text, str(saved[0]), "exec")
    # Replaying the saved file against the unsafe executor escapes again; against local it holds.
    assert fuzz_cli.run_fuzz(_args(replay=[str(saved[0])])) == 1
    monkeypatch.undo()
    assert fuzz_cli.run_fuzz(_args(replay=[str(saved[0])], timeout=1.0)) == 0
    assert "held" in capsys.readouterr().out


class _Wrapped:
    """Delegates to LocalExecutor, then spoils the result in one way."""

    def __init__(self, spoil: str) -> None:
        from executors.local import LocalExecutor

        self.inner = LocalExecutor(limits=Limits(timeout_s=1.0))
        self.spoil = spoil
        self.limits, self.authorized_imports = self.inner.limits, self.inner.authorized_imports

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def execute(self, code: str) -> ExecutionResult:
        r = self.inner.execute(code)
        if self.spoil == "logs" and r.logs:
            return ExecutionResult(output=r.output, logs=r.logs + "!", is_final_answer=r.is_final_answer)
        if self.spoil == "raise" and "print" in code:
            raise RuntimeError("executor bug")
        return r


def test_check_matches_cpython_catches_a_wrong_output() -> None:
    with pytest.raises(AssertionError, match="mismatch"):
        check_matches_cpython(lambda: _Wrapped("logs"), examples=20, seed=8, isolate=False)


def test_check_no_internal_errors_catches_execute_raising() -> None:
    with pytest.raises(AssertionError, match="execute\\(\\) raised RuntimeError"):
        check_no_internal_errors(lambda: _Wrapped("raise"), examples=20, mode="data", seed=9, isolate=False)


# ----------------------------------------------------------------------------- the layout


def test_old_import_paths_are_the_package_objects() -> None:
    """`executors.strategies` and `executors.testing` re-export `executors.fuzzing`, not copies."""
    import executors.strategies as strategies
    import executors.testing as testing
    from executors import fuzzing

    # a submodule named like a public name would shadow it once imported
    submodules = {m.name for m in pkgutil.iter_modules(fuzzing.__path__)}
    assert not submodules & set(fuzzing.__all__), submodules & set(fuzzing.__all__)
    for module in (strategies, testing):
        for name in module.__all__:
            assert getattr(module, name) is getattr(fuzzing, name), (module.__name__, name)


def test_the_fuzzing_package_sits_below_the_executors() -> None:
    """Importing every fuzzing module loads no place where code runs (they are built lazily)."""
    code = ("import importlib, pkgutil, sys\nimport executors.fuzzing as f\n"
            "for m in pkgutil.iter_modules(f.__path__):\n"
            "    importlib.import_module('executors.fuzzing.' + m.name)\n"
            "import executors.strategies, executors.testing\n"
            "print(sorted(k for k in sys.modules if k.startswith(('executors.', 'codeagent'))"
            " and not k.startswith('executors.fuzzing')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    loaded = set(ast.literal_eval(proc.stdout.strip()))
    # executors.base re-exports FinalAnswer/ToolError from the worker's stdlib-only errors module
    allowed = {"executors.base", "executors.strategies", "executors.testing", "executors.worker",
               "executors.worker.errors"}
    assert loaded <= allowed, loaded - allowed


def test_cli_rejects_a_malformed_tools_spec() -> None:
    with pytest.raises(SystemExit, match="codeagent fuzz: --tools wants MODULE:ATTR"):
        fuzz_cli.run_fuzz(_args(tools=["no-colon"]))
