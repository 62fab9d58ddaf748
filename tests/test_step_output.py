"""Library output is the step's output (issue 44): what an authorized library prints or writes to
sys.stdout/sys.stderr during a step lands in that step's logs, in order with the model's prints,
in every executor; warnings are shown as CPython shows them (category, message, the model's
line), whatever filters the host set; the host's own stdout never receives a step's output, and
host threads writing during a step keep their stream.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator

import pytest

from executors import Limits, LocalExecutor, SubprocessExecutor

np = pytest.importorskip("numpy")
LIMITS = Limits(timeout_s=60)
KINDS = {"local": LocalExecutor, "worker": SubprocessExecutor}


_CPYTHON = """
import contextlib, io, linecache, sys
code = sys.stdin.read()
linecache.cache["<code>"] = (len(code), None, code.splitlines(True), "<code>")
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    exec(compile(code, "<code>", "exec"), {"__name__": "__main__"})
sys.__stdout__.write(out.getvalue())
"""


def cpython_logs(code: str) -> str:
    """What a fresh CPython prints for `code` (stdout and stderr in one stream, in order) when
    its file is named `<code>`, as the executors name the model's code."""
    done = subprocess.run([sys.executable, "-c", _CPYTHON], input=code, capture_output=True,
                          text=True, timeout=120, check=True)
    return done.stdout


@pytest.fixture(scope="module", params=list(KINDS))
def executor(request: pytest.FixtureRequest) -> Iterator[object]:
    with KINDS[request.param](authorized_imports=["numpy", "scipy", "sympy"], limits=LIMITS) as ex:
        yield ex


WARNS = """\
import numpy as np
print("before")
x = np.array([1.0, 2.0]) / 0
y = np.array([1.0]) / 0
print("after", x)
for i in range(3):
    z = np.log(np.array([0.0]))
"""


def test_library_warnings_read_as_in_cpython(executor: object) -> None:
    r = executor.execute(WARNS)
    assert r.error is None, r.error
    want = cpython_logs(WARNS)
    assert "<code>:3: RuntimeWarning: divide by zero encountered in divide\n" \
           "  x = np.array([1.0, 2.0]) / 0\n" in want  # (the reference shows what we expect)
    assert r.logs == want


def test_each_step_shows_its_warnings_afresh(executor: object) -> None:
    first = executor.execute(WARNS)
    second = executor.execute(WARNS)
    assert first.logs == second.logs == cpython_logs(WARNS)


def test_deprecation_warnings_as_a_script_shows_them(executor: object) -> None:
    """The model's own DeprecationWarning is shown (its code is __main__), as CPython does."""
    code = ("class Old(DeprecationWarning):\n    pass\n"
            "def f():\n    raise Old('gone')\n"
            "print(1)\n")
    assert executor.execute(code).logs == "1\n"
    code = "import numpy as np\nprint(np.array([1, 2]).tolist())\nnp.array([1.0]) / 0\nprint(2)\n"
    r = executor.execute(code)
    assert r.logs == cpython_logs(code)


def test_library_prints_land_in_the_logs_in_order(executor: object) -> None:
    code = """\
from scipy.optimize import minimize, rosen
import sympy
print("start")
r = minimize(rosen, [1.3, 0.7], method="Nelder-Mead", options={"disp": True})
print("middle")
sympy.pprint(sympy.Integral(sympy.sqrt(sympy.Symbol("x")), sympy.Symbol("x")), use_unicode=False)
print("end")
"""
    r = executor.execute(code)
    assert r.error is None, r.error
    assert r.logs == cpython_logs(code)
    assert r.logs.index("start") < r.logs.index("Optimization terminated successfully") \
        < r.logs.index("middle") < r.logs.index("/") < r.logs.index("end")


def test_host_filters_do_not_decide_a_steps_warnings(executor: object) -> None:
    """An 'error' or 'ignore' filter of the host is the host's business: the step's warning is
    shown as in a plain CPython script, and the host's filters are as it left them."""
    for action in ("error", "ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter(action)
            before = list(warnings.filters)
            r = executor.execute(WARNS)
            assert list(warnings.filters) == before
        assert r.error is None and r.logs == cpython_logs(WARNS)


def test_a_librarys_own_warning_capture_still_records(executor: object) -> None:
    code = ("import numpy as np\n"
            "np.testing.assert_warns(RuntimeWarning, np.divide, np.array([1.0]), 0.0)\n"
            "print('recorded')\n")
    r = executor.execute(code)
    assert r.error is None, r.error
    assert r.logs == cpython_logs(code)  # (numpy deprecates assert_warns: that warning shows)
    assert "recorded\n" in r.logs and "RuntimeWarning: divide" not in r.logs


# -- in process: the host's streams ----------------------------------------------------------------
def test_the_hosts_stdout_never_receives_a_step(capfd: pytest.CaptureFixture[str]) -> None:
    with LocalExecutor(authorized_imports=["numpy", "scipy"], limits=LIMITS) as ex:
        r = ex.execute("import numpy as np\nfrom scipy.optimize import minimize, rosen\n"
                       "minimize(rosen, [1.3, 0.7], method='Nelder-Mead', options={'disp': True})\n"
                       "np.array([1.0]) / 0\nprint('mine')\n")
    assert r.error is None, r.error
    assert "Optimization terminated" in r.logs and "RuntimeWarning" in r.logs
    out, err = capfd.readouterr()
    assert "Optimization" not in out + err and "RuntimeWarning" not in out + err and "mine" not in out
    assert sys.stdout is not None and type(sys.stdout).__name__ != "StepStream"


def test_host_threads_keep_their_stream_during_a_step() -> None:
    """A host thread that prints while a step runs writes to the host's stream, not the step's;
    the step's own prints go to its logs."""
    host_out = io.StringIO()
    started, release = threading.Event(), threading.Event()

    def host_thread() -> None:
        started.wait(30)
        print("host line", file=sys.stdout)
        sys.stderr.write("host error line\n")
        release.set()

    def wait_for_host() -> bool:  # a tool: runs on the step's thread, in the step
        started.set()
        return release.wait(30)

    with contextlib.redirect_stdout(host_out), contextlib.redirect_stderr(host_out):
        with LocalExecutor(tools={"wait_for_host": wait_for_host}, limits=LIMITS) as ex:
            thread = threading.Thread(target=host_thread)
            thread.start()
            r = ex.execute("print('step before')\nwait_for_host()\nprint('step after')\n")
            thread.join(30)
    assert r.error is None, r.error
    assert r.logs == "step before\nstep after\n"
    assert host_out.getvalue() == "host line\nhost error line\n"


def test_a_tool_prints_to_the_host() -> None:
    """A tool is host code: what it prints is the host's, not the model's observation."""
    host_out = io.StringIO()

    def shout(text: str) -> str:
        print("tool says", text)
        return text.upper()

    with contextlib.redirect_stdout(host_out):
        with LocalExecutor(tools={"shout": shout}, limits=LIMITS) as ex:
            r = ex.execute("print(shout('hi'))")
    assert r.logs == "HI\n"
    assert host_out.getvalue() == "tool says hi\n"


# -- in the worker: what native code writes to fds 1/2 itself ----------------------------------------
NATIVE_PRINTS = ("print('before')\nimport numpy as np\nold = np.seterr(all='print')\n"
                 "x = np.int16(32000) * np.int16(3)\nprint('after')\nnp.seterr(**old)\n")


@pytest.mark.parametrize("policy", ["restricted", "open"])
def test_native_writes_to_fds_keep_cpythons_order_in_the_worker(policy: str) -> None:
    """numpy's seterr(all='print') writes with C's stdio, not sys.stderr: CPython's terminal
    shows it between the two prints, and so do the worker's logs (step after step: nothing of one
    step shows again in the next). In process such writes reach the host's fds (a limit the
    README names)."""
    expected = "before\nWarning: overflow encountered in scalar multiply\nafter\n"
    with SubprocessExecutor(authorized_imports=["numpy"], limits=LIMITS, policy=policy) as ex:
        for _ in range(2):
            r = ex.execute(NATIVE_PRINTS)
            assert r.error is None, r.error
            assert r.logs == expected
        r = ex.execute("print('quiet')")
        assert r.logs == "quiet\n"
