"""A host's debugger, coverage or profiler (sys.settrace / sys.setprofile) and in-process steps:
the model's frames are never handed to them, a step still ends at its limits, and what the host
set is there again afterwards (executors/restricted/host/tracing.py)."""

from __future__ import annotations

import cProfile
import subprocess
import sys
import textwrap
from pathlib import Path

from executors import LocalExecutor

ROOT = Path(__file__).resolve().parents[1]


def test_a_step_under_a_host_tracer_ends_at_its_time_limit_and_the_host_goes_on():
    # In a child process: before restricted/host/tracing.py this hung the host for good (the interrupt
    # landed in the tracer; CPython's removal of it was refused by the step's guard).
    script = textwrap.dedent("""
        import sys
        from executors import Limits, LocalExecutor

        def tracer(frame, event, arg):
            frame.f_trace_opcodes = True
            return tracer

        ex = LocalExecutor(limits=Limits(timeout_s=0.3))
        sys.settrace(tracer)
        stopped = ex.execute("def p(n):\\n    return n % 7\\nwhile True:\\n    p(3)")
        after = ex.execute("6 * 7")
        kept = sys.gettrace() is tracer
        sys.settrace(None)
        print(stopped.error.type, after.output, kept, sys.getrecursionlimit())
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["TimeoutError", "42", "True", "1000"], proc.stderr[-2000:]


def test_host_trace_and_profile_functions_see_tools_but_never_the_models_frames():
    seen: dict[str, list[str]] = {"trace": [], "profile": []}

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
        if event == "call":
            seen["trace"].append(frame.f_code.co_filename)
        return tracer

    def profiler(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "call":
            seen["profile"].append(frame.f_code.co_filename)

    def lookup(key: str) -> str:
        return key.upper()

    before = sys.gettrace(), sys.getprofile()  # (a coverage run's own, put back below)
    with LocalExecutor(tools={"lookup": lookup}) as ex:
        sys.settrace(tracer)
        sys.setprofile(profiler)
        try:
            result = ex.execute("def twice(x):\n    return x * 2\n"
                                "class Box:\n    def __repr__(self):\n        return 'box'\n"
                                "[twice(lookup('a')), Box()]")
            assert sys.gettrace() is tracer and sys.getprofile() is profiler
        finally:
            sys.settrace(before[0])
            sys.setprofile(before[1])
    assert result.error is None and result.output_repr == "['AA', box]"
    for kind, files in seen.items():
        assert __file__ in files, kind  # the tool ran traced (a breakpoint in it stops)
        assert not [name for name in files if name.startswith("<step")], kind


def test_a_c_profiler_is_left_in_place_and_keeps_profiling_after_a_step():
    def tool() -> int:
        return 1

    def after_the_step() -> int:
        return 2

    profile = cProfile.Profile()
    with LocalExecutor(tools={"tool": tool}) as ex:
        profile.enable()
        try:
            result = ex.execute("tool() + 1")
            after_the_step()
        finally:
            profile.disable()
    assert result.output == 2
    called = {entry.code.co_name for entry in profile.getstats()
              if not isinstance(entry.code, str)}  # (a C function's entry is its name)
    assert {"tool", "after_the_step"} <= called


def test_dropping_an_interrupt_leaves_no_flag_raised_for_the_next_trace_function():
    # PyThreadState_SetAsyncExc(id, NULL) with nothing pending left CPython 3.11's async-exception
    # flag raised for good: calls took the slow path from then on and, once a trace function was
    # set, the eval loop spun at the next function entry (watchdog._drop_pending).
    script = textwrap.dedent("""
        import sys, threading
        from executors.restricted.limits.watchdog import _drop_pending

        _drop_pending(threading.get_ident())  # nothing pending: the usual case (it was delivered)
        total = sum(i for i in range(10_000))  # (and nothing is raised later)

        def tracer(frame, event, arg):
            return tracer

        def f():
            return 1

        sys.settrace(tracer)
        f()
        sys.settrace(None)
        print("ok", total)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["ok", "49995000"]
