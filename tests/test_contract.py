"""The executor contract, written once and run over every executor in executors_under_test."""

from __future__ import annotations

import time

import executors_under_test
import pytest

from executors import ExecutionResult, Executor, Limits

make_executor = executors_under_test.make_executor  # the parametrized fixture


def add(a, b):
    return a + b


def echo(*args, **kwargs):
    return [list(args), kwargs]


def fail(message="bad input"):
    raise ValueError(message)


TOOLS = {"add": add, "echo": echo, "fail": fail}


@pytest.fixture
def ex(make_executor):
    return make_executor(tools=TOOLS, limits=Limits(timeout_s=5))


def test_is_an_executor(ex):
    assert isinstance(ex, Executor)


def test_value_logs_and_state(ex):
    r = ex.execute("x = add(1, 2)\nprint(x)\nx * 10")
    assert r.error is None, r.error
    assert (r.output, r.logs, r.is_final_answer) == (30, "3\n", False)
    assert r.output_repr == "30"
    r = ex.execute("x + 1")
    assert r.output == 4


def test_no_value_for_statements(ex):
    r = ex.execute("y = 1")
    assert r.error is None and r.output is None and r.output_repr is None


def test_final_answer(ex):
    ex.execute("x = 3")
    r = ex.execute("final_answer(x)")
    assert (r.is_final_answer, r.output, r.error) == (True, 3, None)


def test_final_answer_survives_except(ex):
    r = ex.execute("try:\n    final_answer(41)\nexcept Exception:\n    pass\nprint('after')")
    assert r.is_final_answer and r.output == 41 and "after" not in r.logs
    r = ex.execute("try:\n    final_answer('bare')\nexcept:\n    pass\n")
    assert r.is_final_answer and r.output == "bare"


def test_runtime_error_with_line_and_logs(ex):
    r = ex.execute("print('before')\na = 1\nb = a / 0\nprint('after')")
    assert r.error is not None and r.error.type == "ZeroDivisionError"
    assert r.error.lineno == 3 and "a / 0" in (r.error.line or "")
    assert r.logs == "before\n"
    assert not r.is_final_answer


def test_syntax_and_name_errors(ex):
    r = ex.execute("def f(:\n    pass")
    assert r.error is not None and r.error.type == "SyntaxError" and r.error.lineno == 1
    r = ex.execute("undefined_name + 1")
    assert r.error is not None and r.error.type == "NameError"


def test_tool_error_is_catchable(ex):
    r = ex.execute("try:\n    fail('nope')\nexcept Exception as e:\n    print('caught', 'nope' in str(e))")
    assert r.error is None, r.error
    assert r.logs == "caught True\n"
    r = ex.execute("fail('loud')")
    assert r.error is not None and "loud" in r.error.message


def test_tool_values_cross(ex):
    r = ex.execute("echo((1, 2), {'k': [1.5, None]}, flag=True)")
    assert r.error is None, r.error
    assert r.output == [[(1, 2), {"k": [1.5, None]}], {"flag": True}]


def test_set_variables_and_reset(ex):
    ex.set_variables({"data": [1, 2, 3], "label": "n"})
    r = ex.execute("label + str(sum(data))")
    assert r.output == "n6"
    ex.reset()
    r = ex.execute("data")
    assert r.error is not None and r.error.type == "NameError"
    assert ex.execute("add(2, 2)").output == 4  # tools survive reset


def test_register_tools_later(ex):
    assert ex.execute("1").output == 1
    ex.register_tools({"triple": lambda v: 3 * v})
    assert ex.execute("triple(5)").output == 15


def test_authorized_import(ex):
    r = ex.execute("import math\nmath.sqrt(16)")
    assert r.error is None and r.output == 4.0


def test_output_is_truncated(make_executor):
    ex = make_executor(limits=Limits(timeout_s=5, max_output_chars=1000))
    r = ex.execute("for i in range(5000):\n    print('line', i)")
    assert r.error is None
    assert len(r.logs) < 1300
    assert r.logs.startswith("line 0\n") and r.logs.rstrip().endswith("line 4999")


def test_infinite_loop_times_out_and_recovers(make_executor):
    ex = make_executor(limits=Limits(timeout_s=1, max_operations=None))
    ex.execute("1")
    t0 = time.monotonic()
    r = ex.execute("while True:\n    pass")
    assert time.monotonic() - t0 < 2.0
    assert r.error is not None and r.error.type == "TimeoutError"
    assert ex.execute("1 + 1").output == 2


def test_context_manager_and_idempotent_close(make_executor):
    ex = make_executor()
    with ex as entered:
        r = entered.execute("2 * 21")
        assert isinstance(r, ExecutionResult) and r.output == 42
    ex.close()
    ex.close()


def test_set_variables_refuses_taken_and_private_names(ex):
    for bad in ({"final_answer": 1}, {"add": 2}, {"_hidden": 3}, {"not an identifier": 4}):
        with pytest.raises(ValueError):
            ex.set_variables(bad)
    assert ex.execute("add(1, 1)").output == 2
