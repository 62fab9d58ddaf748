"""A host's debugger, coverage or profiler (sys.settrace / sys.setprofile) and in-process steps:
the model's frames are never handed to them, a step still ends at its limits, and what the host
set is there again afterwards (executors/restricted/host/tracing.py)."""

from __future__ import annotations

import cProfile
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


# ----------------------------------------------------------------------------- sys.monitoring (3.12+)
needs_monitoring = pytest.mark.skipif(not hasattr(sys, "monitoring"),
                                      reason="sys.monitoring is CPython 3.12+ (scripts/test-pythons runs it there)")


class Tool:
    """A monitoring tool (as coverage, a debugger or a profiler is): what it was told, by event."""

    def __init__(self, events: int) -> None:
        m = sys.monitoring
        self.id = next(i for i in range(6) if m.get_tool(i) is None)
        self.events = events
        self.seen: list[tuple[str, str, str, str]] = []  # (event, file, function, argument types)
        self.callbacks = {}
        for name in ("PY_START", "PY_RETURN", "LINE", "CALL", "RAISE"):
            event = getattr(m.events, name)
            if event & events:
                self.callbacks[event] = self._recorder(name)

    def _recorder(self, name: str):
        def callback(code, *args):  # noqa: ANN001, ANN002, ANN202 - sys.monitoring's signature
            self.seen.append((name, code.co_filename, code.co_name,
                              " ".join(type(a).__name__ for a in args)))

        return callback

    def __enter__(self) -> Tool:
        m = sys.monitoring
        m.use_tool_id(self.id, "test-tool")
        for event, callback in self.callbacks.items():
            m.register_callback(self.id, event, callback)
        m.set_events(self.id, self.events)
        return self

    def __exit__(self, *exc: object) -> None:
        m = sys.monitoring
        m.set_events(self.id, 0)
        for event in self.callbacks:
            m.register_callback(self.id, event, None)
        m.free_tool_id(self.id)

    def registered(self) -> bool:
        """Every callback is the tool's own again (read by swapping it in and back)."""
        m = sys.monitoring
        return all(m.register_callback(self.id, e, cb) is cb for e, cb in self.callbacks.items())


@needs_monitoring
def test_a_monitoring_tool_sees_tools_but_never_the_models_code_or_objects():
    def lookup(key: str) -> str:
        return key.upper()

    e = sys.monitoring.events
    with Tool(e.PY_START | e.PY_RETURN | e.LINE | e.CALL | e.RAISE) as tool:
        with LocalExecutor(tools={"lookup": lookup}) as ex:
            result = ex.execute("class Box:\n    def __repr__(self):\n        return 'box'\n"
                                "def twice(x):\n    return x * 2\ntry:\n    1 / 0\n"
                                "except ZeroDivisionError:\n    pass\n[twice(lookup('a')), Box()]")
            assert tool.registered()  # put back after the step
    assert result.error is None and result.output_repr == "['AA', box]"
    assert ("PY_START", __file__, "lookup", "int") in tool.seen  # monitored (a breakpoint stops)
    assert [s for s in tool.seen if s[1].startswith("<step")] == []
    assert [s for s in tool.seen if "Box" in s[3]] == []  # a model object never reached the tool


@needs_monitoring
def test_hidden_events_are_only_the_steps_threads():
    """Events are the interpreter's, set for every thread: while a step hides its thread, the
    host's other threads are reported as before."""
    import threading

    from executors.restricted.host import monitoring

    def host_work() -> int:
        return sum(host_step(i) for i in range(50))

    def host_step(i: int) -> int:
        return i

    model_code = compile("def model_step(i):\n    return i\n", "<step-0>", "exec")
    model_ns: dict = {}
    exec(model_code, model_ns)
    e = sys.monitoring.events
    with Tool(e.PY_START) as tool:
        assert monitoring.hide()
        try:
            [model_ns["model_step"](i) for i in range(10)]  # this thread: hidden
            host_step(1)
            other = threading.Thread(target=host_work)
            other.start()
            other.join()
        finally:
            monitoring.show()
        assert tool.registered()
        host_step(2)
    starts = [s[2] for s in tool.seen]
    assert starts.count("host_step") == 50 + 1  # the other thread's 50, then the call after
    assert "model_step" not in starts


@needs_monitoring
def test_a_step_under_a_monitoring_tool_ends_at_its_time_limit_and_the_host_goes_on():
    script = textwrap.dedent("""
        import sys
        from executors import Limits, LocalExecutor
        m = sys.monitoring
        lines = []
        m.use_tool_id(4, "probe")
        m.register_callback(4, m.events.LINE, lambda code, line: lines.append(code.co_filename))
        m.set_events(4, m.events.LINE)
        ex = LocalExecutor(limits=Limits(timeout_s=0.3))
        stopped = ex.execute("def p(n):\\n    return n % 7\\nwhile True:\\n    p(3)")
        after = ex.execute("6 * 7")
        model = [f for f in lines if f.startswith("<step")]
        m.set_events(4, 0)
        print(stopped.error.type, after.output, len(model), sys.getrecursionlimit())
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["TimeoutError", "42", "0", "1000"], proc.stderr[-2000:]
