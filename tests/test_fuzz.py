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
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import executor_class
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

from codeagent.cli import fuzz as fuzz_cli
from executors import ExecutionError, ExecutionResult, FinalAnswer, Limits
from executors.access import owned_tempdir, sweep_dead_owners
from executors.fuzzing.attacks.library_escapes import library_plan
from executors.fuzzing.attacks.library_routes import CARRIERS as LIBRARY_CARRIERS
from executors.fuzzing.attacks.library_routes import KIND_EFFECT, TAMPERS
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


# ----------------------------------------------------------------------------- library carriers

LIBRARIES = ["numpy.*", "pandas.*", "matplotlib.*"]
# Known, reported, not a table row: a library caches an object that model code may write to.
# (np.finfo(np.float64), one instance per process, was one: the sandbox now gets a private copy.)
KNOWN_OPEN: set[str] = set()


class PlainLibraryExecutor(UnsafeExecutor):
    """No sandbox, with the data libraries and file modules 'authorized', in a scratch cwd."""

    authorized_imports = (*LIBRARIES, "os", "pathlib", "shutil", "time", "io")

    def execute(self, code: str) -> ExecutionResult:
        # a fresh cwd per attempt, in the forked child: an attempt may move its cwd away. Removed
        # after it; a child killed mid-attempt leaves one that the next attempt sweeps (its pid).
        scratch = owned_tempdir("codeagent-fuzz-plain-")
        os.chdir(scratch)
        try:
            return super().execute(code)
        finally:
            os.chdir("/")
            shutil.rmtree(scratch, ignore_errors=True)


def _known_open(outcome: Any) -> bool:
    return outcome.label.split("/")[2] in KNOWN_OPEN if outcome.label.startswith("library/tamper/") else False


def _library_outcomes(factory: Any, imports: list[str], examples: int, seed: int) -> list[Any]:
    """Library attempts only, run by a Session on the executor `factory` builds."""
    outcomes: list[Any] = []
    seen: set[str] = set()
    with Session(factory, margin_s=5.0) as session:
        @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @hseed(seed)
        @given(escape_attempts(session.marker, CANARY_ENV, tools=session.tools, authorized_imports=imports,
                               families=["library"]))
        def run(attempt: EscapeAttempt) -> None:
            if attempt.code not in seen:  # hypothesis repeats examples; one run each
                seen.add(attempt.code)
                outcomes.append(session.run("escape", attempt.code, attempt.label))

        run()
    return outcomes


def test_library_carriers_follow_the_authorized_importable_modules() -> None:
    plan = library_plan(("numpy.*", "no_such_module_xyz.*", "json"))
    assert plan.carriers and all(n.split(".")[0] == "numpy" for c in plan.carriers for n in c.needs)
    assert {t.needs for t in plan.tampers} == {("numpy",)}
    assert all(r.needs == () for r in plan.routes)  # no os/pathlib: no links made in the workdir
    files = library_plan(("os", "pathlib", "shutil"))
    assert {c.needs[0] for c in files.carriers if c.needs} == {"os", "pathlib", "shutil"}
    assert {"symlink:os", "hardlink:pathlib"} <= {r.id.replace("/", ":") for r in files.routes}
    data = library_plan(tuple(LIBRARIES))
    kinds = {c.kind for c in data.carriers}
    assert {"read", "write", "unpickle", "native", "evaluator", "format", "process"} <= kinds
    assert not [c for c in library_plan(()).carriers if c.needs]  # nothing authorized: nothing


def test_library_attempts_are_deterministic_for_a_seed() -> None:
    """The same seed gives the same attempts, also across interpreters (hash randomization)."""
    code = textwrap.dedent(f"""
        import hashlib
        from hypothesis import HealthCheck, given, seed, settings
        from executors.strategies import escape_attempts
        out = []
        @seed(7)
        @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(escape_attempts('/tmp/m/ESCAPED', 'CANARY', tools=['add'], authorized_imports={LIBRARIES + ["os"]!r},
                               families=['library']))
        def draw(a):
            out.append(a.label + a.code)
        draw()
        print(len(out), hashlib.sha256('\\n'.join(out).encode()).hexdigest())
    """)
    digests = set()
    for hashseed in ("1", "2"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hashseed})
        assert proc.returncode == 0, proc.stderr
        digests.add(proc.stdout.strip())
    assert len(digests) == 1, digests
    assert digests.pop().startswith("40 ")


def test_library_carriers_escape_plain_cpython() -> None:
    """Not vacuous: where nothing stops them, the library attempts read the secret, write beside
    the marker, unpickle, load native code, evaluate strings, start processes, tamper."""
    # a temp dir of its own (the forked children inherit it): other runs on this machine share /tmp
    private, before = tempfile.mkdtemp(prefix="carriers-tmp-"), tempfile.tempdir
    tempfile.tempdir = private
    try:
        outcomes = _library_outcomes(PlainLibraryExecutor, list(PlainLibraryExecutor.authorized_imports), 1000, 11)
    finally:
        tempfile.tempdir = before
    # nothing left: each attempt removes its folder, a child killed mid-attempt leaves it to the
    # next one (or to this sweep: its owner's pid is dead)
    sweep_dead_owners("codeagent-fuzz-plain-", private)
    left = [name for name in os.listdir(private) if name.startswith("codeagent-fuzz-plain-")]
    shutil.rmtree(private, ignore_errors=True)
    assert left == []
    # hooks only the sandbox's host calls (repr of the last value, == on final_answer, str of an
    # exception) never run under plain exec; tampering shows once per setting (one process)
    ran = [o for o in outcomes if o.label.split("/")[-2] not in ("repr_hook", "eq_hook", "exception_str")
           and not o.label.startswith("library/tamper/")]
    escaped = [o for o in ran if o.status == "escape"]
    assert len(escaped) >= 0.6 * len(ran), (len(escaped), len(ran))
    effects = {o.label.split("/")[1] for o in outcomes if o.status == "escape"}
    assert {"read", "marker", "canary", "tamper"} <= effects, effects
    routes = {o.label.split("/")[2] for o in escaped}
    kind_of = {c.id.replace("/", ":"): c.kind for c in LIBRARY_CARRIERS}
    kinds = {kind_of[r.split("+")[0]] for r in routes}
    assert set(KIND_EFFECT) <= kinds, set(KIND_EFFECT) - kinds
    for spelling in ("symlink", "proc_", "dot"):  # links in the workdir, /proc/self/..., ..
        assert any("+" + spelling in r for r in routes), (spelling, sorted(routes))


@pytest.mark.parametrize("kind", ["local", "subprocess"])
def test_short_library_campaign_finds_no_escape(kind: str) -> None:
    """`codeagent fuzz --authorized-imports numpy.* pandas.* matplotlib.*` in small: the escape
    attempts, a third of them through the libraries, all held (subprocess: harden=False, so the
    worker's audit hook holds alone)."""
    from executors.local import LocalExecutor
    from executors.process import SubprocessExecutor

    limits = Limits(timeout_s=10.0)  # cold pandas/matplotlib imports on a busy machine

    def make() -> Any:
        if kind == "local":
            return LocalExecutor(authorized_imports=LIBRARIES, limits=limits)
        return SubprocessExecutor(authorized_imports=LIBRARIES, limits=limits, harden=False,
                                  unconfined_native=True)

    outcomes: list[Any] = []
    report = fuzz(make, examples=150, seconds=90, properties=["escapes"], authorized_imports=None,
                  margin_s=5.0, seed=12, on_outcome=outcomes.append)
    library = [o for o in outcomes if o.label.startswith("library/")]
    assert len(library) >= 15, dict(report.counts)
    escapes = [o for o in report.failed({"escape", "hang"}) if not _known_open(o)]
    assert not escapes, "\n\n".join(f"{o.label}: {o.detail}\n{o.code}" for o in escapes[:3])


@pytest.mark.parametrize("kind", ["local", "subprocess"])
@pytest.mark.parametrize("tamper", [pytest.param(t, id=t.id, marks=[pytest.mark.xfail(
    strict=True, reason="a cached library object is writable: reported, not a table row")]
    if t.id in KNOWN_OPEN else []) for t in TAMPERS])
def test_library_settings_do_not_outlive_the_step(tamper: Any, kind: str, tamper_sessions: dict) -> None:
    """Every settings row of the fuzzer's table, as a plain step: the next step (and, in process,
    the host) sees the setting as it was. The registries here were found by the fuzzer and are
    now hidden members (library_rules.DANGEROUS_MEMBERS)."""
    code = "\n".join(tamper.imports) + "\n" + re.sub(r"\$\(([\w.]+)\)", r"\1", tamper.code) + "\n"
    outcome = tamper_sessions[kind].run("escape", code, f"library/tamper/{tamper.id}/plain/literal")
    assert outcome.status == "held", outcome.detail


@pytest.fixture(scope="module")
def tamper_sessions() -> Any:
    from executors.local import LocalExecutor
    from executors.process import SubprocessExecutor

    limits = Limits(timeout_s=20.0)
    sessions = {
        "local": Session(lambda: LocalExecutor(authorized_imports=LIBRARIES, limits=limits), margin_s=5.0),
        "subprocess": Session(lambda: SubprocessExecutor(authorized_imports=LIBRARIES, limits=limits,
                                                         harden=False, unconfined_native=True),
                              margin_s=5.0),
    }
    yield sessions
    for session in sessions.values():
        session.close()


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
        [sys.executable, "-m", "codeagent.cli.fuzz", "--executor", "local", "--examples", "30",
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
    assert "# rerun: python -m codeagent.cli.fuzz --replay" in text
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
            "for m in pkgutil.walk_packages(f.__path__, 'executors.fuzzing.'):\n"
            "    importlib.import_module(m.name)\n"
            "import executors.strategies, executors.testing\n"
            "print(sorted(k for k in sys.modules if k.startswith(('executors.', 'codeagent'))"
            " and not k.startswith('executors.fuzzing')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    loaded = set(ast.literal_eval(proc.stdout.strip()))
    # executors.base re-exports FinalAnswer/ToolError from the worker's stdlib-only errors module
    # and the one way text is cut (worker.display, stdlib only); the lying worker's judge reads the
    # bounds table (worker.bounds: data, stdlib only)
    allowed = {"executors.base", "executors.strategies", "executors.testing", "executors.worker",
               "executors.worker.errors", "executors.worker.display", "executors.worker.bounds",
               "executors.worker.bounds.numbers", "executors.worker.bounds.table"}
    assert loaded <= allowed, loaded - allowed


def test_cli_rejects_a_malformed_tools_spec(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        fuzz_cli.run_fuzz(_args(tools=["no-colon"]))
    assert stopped.value.code == 2  # a usage mistake (1 means the campaign found something)
    assert "codeagent fuzz: --tools wants MODULE:ATTR" in capsys.readouterr().err


def test_each_examples_collection_skips_what_the_host_held_before(tmp_path: Path) -> None:
    """Every example ends with a full gc collection (a model object's finalizer counts too). Run
    from a big host (a test runner with the PyData stack imported: millions of objects), walking
    all of those each time made an example ~15x slower, and a forked child's first walk copied
    every page they sit on. So what existed before the campaign is frozen: in the forked child
    for good, in this process until the session closes, which leaves gc as it found it."""
    import gc

    from executors.local import LocalExecutor

    seen = tmp_path / "freeze-counts"

    def factory() -> LocalExecutor:
        with open(seen, "a") as f:
            f.write(f"{os.getpid()} {gc.get_freeze_count()}\n")
        return LocalExecutor(limits=Limits(timeout_s=2.0))

    with Session(factory, margin_s=2.0) as session:  # isolated: built again in a forked child
        assert session.isolated
        assert session.run("program", "print(1)").status == "equal"
    built_in = {int(pid): int(count) for pid, count in (line.split() for line in seen.read_text().splitlines())}
    children = {pid: count for pid, count in built_in.items() if pid != os.getpid()}
    assert children and all(count > 0 for count in children.values()), built_in

    before = gc.get_freeze_count()
    with Session(factory, margin_s=2.0, isolate=False) as session:
        during = gc.get_freeze_count()
        assert during > 0 if before == 0 else during == before  # (a host's own freeze: untouched)
        assert session.run("program", "print(1)").status == "equal"
    assert gc.get_freeze_count() == before
