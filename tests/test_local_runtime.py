"""Regression tests of the in-process runtime's own mechanisms (the lead's file)."""

from __future__ import annotations

import threading
import time

import pytest
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from executors import Limits, LocalExecutor
from executors.restricted.policy import FORBIDDEN_ATTRIBUTES


def test_forbidden_attributes_cover_restrictedpython_inspect_attributes():
    assert set(INSPECT_ATTRIBUTES) <= FORBIDDEN_ATTRIBUTES


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


def test_objects_are_inert_after_the_step():
    ex = LocalExecutor()
    r = ex.execute("def g():\n    yield 1\n    while True:\n        yield 2\nit = g()\nnext(it)\nit")
    with pytest.raises(RuntimeError, match="step has ended"):
        next(r.output)
    # (that attempt ended the generator, as any exception inside a generator does); objects
    # the host leaves alone keep working in later steps
    ex.execute("it2 = g()\nnext(it2)")
    assert ex.execute("next(it2)").output == 2


def test_module_proxies_are_per_executor_and_read_only():
    a, b = LocalExecutor(), LocalExecutor()
    a.execute("import random\nrandom.seed(1)\nx = random.random()")
    b.execute("import random\nrandom.seed(2)")
    assert a.execute("random.seed(1)\nrandom.random() == x").output is True
    assert a.execute("import math\nmath.pi = 3").error is not None
