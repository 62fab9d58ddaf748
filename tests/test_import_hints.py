"""A refused import's hint on the command line ends the loop (issue 46): it never suggests an
--import the command already has, in any form; a module that form covers is importable (the
package brings its public modules), or refused for its own reason, which the hint says no flag
changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent.cli.hints import flag_hint
from executors import ExecutionError

ROOT = Path(__file__).resolve().parents[1]


def exec_cli(code: str, *imports: str) -> subprocess.CompletedProcess:
    flags = [arg for name in imports for arg in ("--import", name)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEAGENT_"))}
    return subprocess.run([sys.executable, "-m", "codeagent", "exec", "--executor", "local",
                           *flags, "-"], input=code, capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


@pytest.mark.parametrize("flag", ["numpy", "numpy.*"])
def test_a_given_package_brings_its_submodules(flag: str) -> None:
    """Before: 'import of numpy.linalg is not allowed … hint: pass --import numpy' with
    --import numpy given: the user went round in a loop."""
    done = exec_cli("import numpy.linalg\nprint(numpy.linalg.norm([3.0, 4.0]))", flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("5.0\n") and "hint" not in done.stderr


def test_a_refusal_the_flag_cannot_change_says_so() -> None:
    done = exec_cli("import numpy.f2py", "numpy")
    assert done.returncode == 1
    assert "even though it is authorized: compiles and loads native code" in done.stderr
    assert "pass --import" not in done.stderr


def test_a_missing_flag_is_still_named() -> None:
    done = exec_cli("from scipy import optimize\nprint(optimize.rosen([1.0, 1.0]))", "scipy.stats")
    assert done.returncode == 1
    assert "hint: to allow it, pass --import scipy" in done.stderr


@pytest.mark.parametrize("message, given, hint", [
    ("import of 'numpy.linalg' is not allowed. Authorized modules: numpy", ["numpy"],
     "already authorizes numpy.linalg"),
    ("import of 'numpy.linalg' is not allowed.", ["numpy.*"], "already authorizes"),
    ("import of 'pandas' is not allowed.", ["numpy"], "pass --import pandas"),
    ("cannot import 'optimize' from 'scipy': it is not available", ["scipy.stats"],
     "pass --import scipy"),
    ("module 'scipy' has no attribute 'optimize' in the sandbox (…)", None, "pass --import scipy"),
    ("module 'numpy' has no attribute 'nope' in the sandbox (…)", ["numpy"], ""),
    ("importing 'numpy._core' is not allowed: private", ["numpy"], ""),
])
def test_hints_never_repeat_a_given_flag(message: str, given: list[str] | None, hint: str) -> None:
    text = flag_hint(ExecutionError("ImportError", message), given)
    assert hint in text if hint else text == ""
    for name in given or ():
        assert f"pass --import {name.removesuffix('.*')}" not in text
