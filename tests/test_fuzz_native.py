"""The crash-finding fuzz family (issue 42): native-library calls with hostile shapes, strides,
dtypes, offsets and indices, run against LocalExecutor in a forked child that must not die by a
signal. The default suite runs a small derandomized tier (a fixed seed: the same programs every
run); the long campaign (`scripts/fuzz-long local`) runs 10,000."""

from __future__ import annotations

import ast
import faulthandler
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from executors import Limits, LocalExecutor
from executors.fuzzing import Session, fuzz
from executors.fuzzing.attacks.native_calls import NATIVE_FAMILIES, NATIVE_IMPORTS, native_calls
from executors.restricted.compiler.checker import inspect_tree

pytestmark = pytest.mark.timeout(900)


@settings(max_examples=150, database=None, deadline=None)
@given(native_calls())
def test_native_calls_are_code_the_policy_accepts(call) -> None:  # noqa: ANN001
    assert inspect_tree(ast.parse(call.code)) == []
    assert call.label.startswith(f"native/{call.family}/")


def _local() -> LocalExecutor:
    return LocalExecutor(authorized_imports=list(NATIVE_IMPORTS), limits=Limits(timeout_s=10))


_SMALL_TIER = """
import json
from executors import Limits, LocalExecutor
from executors.fuzzing import fuzz
from executors.fuzzing.attacks.native_calls import NATIVE_IMPORTS

def local():
    return LocalExecutor(authorized_imports=list(NATIVE_IMPORTS), limits=Limits(timeout_s=10))

labels = []
report = fuzz(local, examples=70, properties=["crashes"], seed=42, isolate=True,
              register_tools=False, tools={}, on_outcome=lambda o: labels.append(o.label))
print(json.dumps([report.total("native"), report.total("native", "survived"),
                  sorted({label.split("/")[1] for label in labels}), [repr(f) for f in report.failures[:3]]]))
"""


def test_a_small_tier_never_kills_the_host() -> None:
    """Every family, a fixed seed: LocalExecutor answers every example and its host survives.
    In a fresh interpreter: the examples run in forked children, and polars' thread pool, if an
    earlier test in this process started it, does not survive a fork (a child hung in polars)."""
    done = subprocess.run([sys.executable, "-c", _SMALL_TIER], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    total, survived, libraries, failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert total == 70
    assert survived == 70, failures
    assert {"numpy", "pandas", "pyarrow", "scipy", "polars"} <= set(libraries), libraries
    assert len(NATIVE_FAMILIES) == 7


class _DyingHost(LocalExecutor):
    """An in-process executor whose process dies by SIGSEGV on one program."""

    def execute(self, code: str):  # noqa: ANN201
        if "die here" in code:
            faulthandler.disable()  # (pytest's: no traceback on the way down)
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().execute(code)


def test_a_host_killed_by_a_signal_is_a_crash() -> None:
    with Session(_DyingHost, isolate=True, register_tools=False, tools={}) as session:
        died = session.run("native", "x = 'die here'", "native/test/segv")
        lived = session.run("native", "x = 1 + 1", "native/test/fine")
    assert died.status == "crashed" and died.failed, died
    assert "died" in died.detail
    assert lived.status == "survived"  # (a fresh child took over)


def test_a_phase_of_many_runs_gets_all_its_examples() -> None:
    """A phase runs hypothesis in batches; each batch ends when it has its share, and hypothesis
    then replays the example that stopped it (which draws nothing): that replay is no flaky
    strategy, and a phase of more than five batches used to stop after the fifth."""
    report = fuzz(_local, examples=14, batch_size=2, properties=["crashes"], seed=9, isolate=True,
                  register_tools=False, tools={})
    assert report.total("native") == 14
