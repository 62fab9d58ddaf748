"""Regression tests of the in-process runtime's own mechanisms (the lead's file)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from executors import Limits, LocalExecutor
from executors.worker.codec import Repr


def test_state_and_final_answer_contract():
    with LocalExecutor(tools={"add": lambda a, b: a + b}) as ex:
        r = ex.execute("x = add(1, 2)\nprint(x)\nx * 10")
        assert (r.output, r.logs, r.error, r.output_repr) == (30, "3\n", None, "30")
        r = ex.execute("final_answer(x)")
        assert r.is_final_answer and r.output == 3
        ex.reset()
        assert ex.execute("x").error.type == "NameError"


def test_tool_error_is_catchable_and_named():
    def boom():
        raise ValueError("nope")

    ex = LocalExecutor(tools={"boom": boom})
    r = ex.execute("try:\n    boom()\nexcept ToolError as e:\n    msg = str(e)\nmsg")
    assert r.output == "tool 'boom' failed: ValueError: nope"


def test_executor_used_from_a_worker_thread_keeps_its_limits():
    ex = LocalExecutor(limits=Limits(timeout_s=1))
    out = {}

    def run():
        out["r"] = ex.execute("while True:\n    try:\n        pass\n    except BaseException:\n        pass")
        out["ok"] = ex.execute("1 + 1").output

    t = threading.Thread(target=run)
    started = time.monotonic()
    t.start()
    t.join(10)
    assert not t.is_alive()
    assert out["r"].error.type in ("TimeoutError", "OperationLimitError")
    assert time.monotonic() - started < 4
    assert out["ok"] == 2


def test_concurrent_call_on_one_executor_is_refused_cleanly():
    ex = LocalExecutor(limits=Limits(timeout_s=2))
    results = []
    t = threading.Thread(target=lambda: results.append(ex.execute("import time\ntime.sleep(0.5)")))
    t.start()
    time.sleep(0.1)
    r = ex.execute("1")
    t.join()
    assert r.error is not None and r.error.type == "ExecutorBusy"
    assert results[0].error is None


@pytest.mark.parametrize("code", ["x = 1\n" * 60_000])
def test_oversized_source_is_refused(code):
    r = LocalExecutor().execute(code)
    assert r.error.type == "CodeTooLarge"


def test_the_host_never_gets_the_models_objects():
    ex = LocalExecutor()
    r = ex.execute("def g():\n    yield 1\n    while True:\n        yield 2\nit = g()\nnext(it)\nit")
    # the output is its repr, made in the step: there is no generator on the host to resume
    assert type(r.output) is Repr and "generator" in r.output and r.output_repr == r.output
    # model functions are still inert when host code calls them outside a step
    ex.execute("def f():\n    return 1")
    f = ex._runtime.ns["f"]
    with pytest.raises(RuntimeError, match="step has ended"):
        f()


def test_module_proxies_are_per_executor_and_read_only():
    a, b = LocalExecutor(), LocalExecutor()
    a.execute("import random\nrandom.seed(1)\nx = random.random()")
    b.execute("import random\nrandom.seed(2)")
    assert a.execute("random.seed(1)\nrandom.random() == x").output is True
    assert a.execute("import math\nmath.pi = 3").error is not None


def test_instrumenter_and_namespace_share_their_names():
    """Every `_` name the instrumenter writes into model code is one the namespace binds (or a
    target the rewritten code stores itself): both sides take them from names.py."""
    import ast

    from executors.restricted.compiler import names
    from executors.restricted.compiler.instrument import instrument
    from executors.restricted.execution.runtime import RestrictedRuntime

    program = (
        "class C:\n    n = 2\n    n **= 2\n    def m(self):\n        self._x = 1\n        return self._x\n"
        "def gen():\n    yield 1\nfor i in range(2):\n    pass\nwhile False:\n    pass\nelse:\n    pass\n"
        "while False:\n    pass\nc = C()\nc.n **= 2\nd = {'k': 1}\nd['k'] <<= 1\nx = 2 ** 3 << 1\n"
        "f = lambda: 1\ng = (v for v in [1])\ns = '{}'.format(1)\nt = type(c).__class__\n"
        "match c:\n    case C(n=1):\n        pass\n    case C():\n        pass\n"
        "try:\n    pass\nexcept Exception:\n    pass\nx"
    )
    tree = instrument(ast.parse(program))
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.startswith("_")
             and isinstance(n.ctx, ast.Load)}
    stores = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.startswith("_")
              and not isinstance(n.ctx, ast.Load)}
    assert loads - {names.AUG_TARGET, names.AUG_KEY} <= set(names.BOUND)
    assert stores <= {names.LOOP_TARGET, names.RESULT, names.AUG_TARGET, names.AUG_KEY}
    assert {names.FOR, names.LIVE, names.DEAD, names.POW, names.IPOW, names.ILSHIFT,
            names.PRIVATE_ATTR, names.WRITABLE, names.ATTR, names.FMT_ATTR} <= loads
    assert set(names.BOUND) - {names.RESULT} <= set(RestrictedRuntime().ns)


def test_reducers_of_a_generator_expression_keep_their_meaning():
    """Without a budget `sum`/`any`/`all` of a generator expression call CPython's reducer (see
    instrument.visit_Call): the same answers; a name the code rebound is the code's; the deadline
    and a budget the user sets still stop them; after a reset an old function stops at once."""
    from executors.restricted.guards.errors import SandboxFinished

    with LocalExecutor(limits=Limits(timeout_s=1)) as ex:
        ex.execute("row = [3, 1, 2]")
        assert ex.execute("sum(x for x in row), sum((x for x in row), 10), "
                          "any(x > 2 for x in row), all(x > 2 for x in row)").output == (6, 16, True, False)
        assert ex.execute("def sum(g, start=0):\n    return 'mine'\nsum(x for x in row)").output == "mine"
        assert ex.execute("del sum\nsum(x for x in row)").output == 6
        r = ex.execute("import itertools\nsum(x for x in itertools.count())")
        assert r.error is not None and r.error.type == "TimeoutError", r.error
        ex.execute("def total():\n    return sum(x for x in row)\nf = total")
        stale = ex._runtime.ns["f"]
        ex.reset()
        with pytest.raises(SandboxFinished):
            stale()
    with LocalExecutor(limits=Limits(timeout_s=30, max_operations=1000)) as ex:
        r = ex.execute("sum(x for x in range(10**6))")
        assert r.error is not None and r.error.type == "OperationLimitError", r.error


def test_a_run_without_deadline_leaves_the_watchdog_working():
    # No deadline, and one too far for a timed wait: neither may break the shared watchdog.
    for timeout in (None, 1e12):
        with LocalExecutor(limits=Limits(timeout_s=timeout)) as ex:
            assert ex.execute("sum(range(1000))").output == 499500
    with LocalExecutor(limits=Limits(timeout_s=0.5, max_operations=None)) as ex:
        t0 = time.monotonic()
        r = ex.execute("while True:\n    pass")
        assert r.error.type == "TimeoutError" and time.monotonic() - t0 < 3


def test_get_variables_is_refused_while_code_runs():
    box = {}

    def peek():
        try:
            ex.get_variables()
        except RuntimeError as exc:
            box["refused"] = str(exc)
        return 1

    ex = LocalExecutor(tools={"peek": peek})
    assert ex.execute("a = 1\npeek()").output == 1
    assert "running code" in box["refused"]
    assert ex.get_variables() == {"a": 1}


def test_get_variables_copies_shared_parts_once_and_shows_cycles():
    ex = LocalExecutor()
    # 2**40 paths through shared lists: copied once per distinct list (the in-process codec's
    # tree is a DAG)
    r = ex.execute("a = [1]\nfor i in range(40):\n    a = [a, a]\nloop = [1]\nloop.append(loop)")
    assert r.error is None
    got = ex.get_variables(["a", "loop"])
    assert got["a"][0] is got["a"][1]
    # a cycle is data up to the repeated container, which crosses as its repr
    assert got["loop"] == [1, "[1, [...]]"] and type(got["loop"][1]) is Repr


def test_the_watchdog_never_interrupts_a_step_the_runtime_is_finishing():
    """Past the deadline a host tool is interrupted after a grace period, but the runtime's own
    epilogue (paused: rendering done, leaving the step) is not, however late it runs: an
    interrupt there would escape execute() (seen on a loaded machine)."""
    import itertools as _it

    from executors.restricted.limits.watchdog import TOOL_GRACE_S, WATCHDOG, Interrupt

    class FakeRun:
        def __init__(self):
            self.deadline = time.monotonic() + 0.05
            self.thread_id = threading.get_ident()
            self.in_tool = self.ended = self.fired = False
            self.settling = False
            self.generation = 1
            self.reason = None

        def expire(self, reason):
            self.reason = reason

    run = FakeRun()
    WATCHDOG.watch(run)
    WATCHDOG.pause(run, True)
    interrupted = False
    until = time.monotonic() + 0.05 + TOOL_GRACE_S + 0.3
    try:
        for _ in _it.count():  # bytecode, so that a pending async exception would land
            if time.monotonic() > until:
                break
    except Interrupt:
        interrupted = True
    finally:
        WATCHDOG.unwatch(run)
    assert not interrupted and run.reason == "timeout"


_NEXT_STEP_WAKES_NOTHING = r"""
import threading, time
from executors.restricted.limits.watchdog import Watchdog

class Run:
    in_tool = ended = fired = settling = False
    generation = 1
    thread_id = threading.get_ident()
    def expire(self, reason): pass

def until(condition):
    end = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < end
        time.sleep(0.001)

wd, run = Watchdog(), Run()
run.deadline = time.monotonic() + 60
wd.watch(run)
until(lambda: wd._wake_at == run.deadline)  # the thread has seen the step
wd.unwatch(run)
with wd.lock:
    wd._cond.notify()  # the thread looks again while the run is between steps: its entry goes
until(lambda: id(run) not in wd._queued)
notified = []
wd._cond.notify = lambda n=1: notified.append(n)
run.ended, run.generation, run.deadline = False, 2, time.monotonic() + 60
wd.watch(run)
assert id(run) in wd._queued and notified == [], notified
print("ok")
"""


def test_the_next_step_of_a_run_wakes_no_watchdog_thread():
    """The watchdog drops an ended run at once (it keeps no reference to it) but still wakes at
    that entry's deadline, so the run's next step (a later deadline) needs no notify: a step
    costs no thread switch. (Before, every step of a worker woke the thread under load.) In a
    process of its own: the watchdog's thread never ends."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _NEXT_STEP_WAKES_NOTHING], capture_output=True, text=True,
                          timeout=120, cwd=str(Path(__file__).resolve().parents[1]))
    assert proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_a_generator_is_closed_when_its_step_ends():
    """Its cleanup runs inside the step (the host never runs it when it drops the generator); in
    the next step it is exhausted. Generator expressions, which have no cleanup, live on."""
    ex = LocalExecutor()
    r = ex.execute("def g():\n    try:\n        yield 1\n        yield 2\n    finally:\n"
                   "        print('closed in the step')\nit = g()\nnext(it)")
    assert r.error is None and r.logs == "closed in the step\n"
    assert ex.execute("next(it, 'exhausted')").output == "exhausted"
    ex.execute("squares = (i * i for i in range(3))\nnext(squares)")
    assert ex.execute("next(squares)").output == 1


def test_a_generator_that_ignores_close_is_ended_when_the_step_is():
    ex = LocalExecutor()
    r = ex.execute("def g():\n    while True:\n        try:\n            yield 1\n"
                   "        except GeneratorExit:\n            print('ignored')\nit = g()\nnext(it)")
    assert r.error is None and r.logs.startswith("ignored\n")
    assert ex.execute("next(it, 'over')").output == "over"


def test_no_descriptor_stays_open_on_the_workdir_after_close():
    import os

    ex = LocalExecutor(authorized_imports=["pathlib"])
    r = ex.execute("import pathlib\np = pathlib.Path('kept.txt')\np.write_text('a')\nf = p.open('a')\n"
                   "f.write('more')")
    assert r.error is None
    workdir = os.path.realpath(ex.workdir)
    ex.close()

    def targets():
        for name in os.listdir("/proc/self/fd"):
            try:
                yield os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                continue

    assert not [t for t in targets() if t.startswith(workdir)]


def test_a_process_without_statm_is_not_asked_for_it_every_step(monkeypatch):
    """Where /proc/self/statm cannot be opened (a confined worker: Landlock closes /proc) the
    per-step address-space cap is skipped, as before, but the open is not retried every step."""
    from executors.restricted.limits import process_caps as caps

    opened = []

    def refuse(path, *args, **kwargs):
        opened.append(path)
        raise PermissionError(13, "Permission denied", path)

    process_caps = caps.ProcessCaps()
    monkeypatch.setattr(caps.os, "open", refuse)
    for _ in range(3):
        process_caps.enter(256, 200)
        process_caps.leave()
    assert opened == ["/proc/self/statm"]
    assert process_caps.address_space() == 0
