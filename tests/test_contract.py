"""The executor contract, written once and run over every executor in executors_under_test."""

from __future__ import annotations

import time

import executors_under_test
import pytest

from executors import ExecutionResult, Executor, Limits
from executors.base import MAX_SOURCE_CHARS, check_code

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


# -- no deadline ---------------------------------------------------------------------------------
def test_no_timeout_is_accepted_and_the_other_limits_hold(make_executor):
    """`None disables a limit`: timeout_s=None means no deadline, and execute() still never
    raises; recursion (and, under the restricted policy, the operation budget) still stop code."""
    ex = make_executor(limits=Limits(timeout_s=None, max_operations=100_000))
    r = ex.execute("total = sum(range(10))\ntotal")
    assert (r.output, r.error) == (45, None)
    r = ex.execute("def down(n):\n    return down(n + 1)\ndown(0)")
    assert r.error is not None and r.error.type == "RecursionError"
    if not make_executor.kind.endswith("open"):  # the open policy has no operation budget
        t0 = time.monotonic()
        r = ex.execute("while True:\n    pass")
        assert r.error is not None and r.error.type == "OperationLimitError"
        assert time.monotonic() - t0 < 10
    assert ex.execute("total + 1").output == 46


# -- code the executor cannot take ---------------------------------------------------------------
@pytest.mark.parametrize("code", [b"1 + 1", None, 42, ["1 + 1"]], ids=["bytes", "None", "int", "list"])
def test_code_that_is_not_a_string_gets_the_same_answer_everywhere(ex, code):
    r = ex.execute(code)
    assert r.error == check_code(code) and r.error.type == "TypeError"
    assert not r.is_final_answer and r.output is None
    assert ex.execute("1 + 1").output == 2


def test_oversized_code_gets_the_same_answer_everywhere(ex):
    code = "x = 1\n" * (MAX_SOURCE_CHARS // 6 + 1)
    r = ex.execute(code)
    assert r.error == check_code(code) and r.error.type == "CodeTooLarge"
    assert ex.execute("1 + 1").output == 2


# -- operators: in-place and reflected dunders behave as in CPython -------------------------------
BINARY_OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "matmul": "@", "truediv": "/", "floordiv": "//",
    "mod": "%", "pow": "**", "lshift": "<<", "rshift": ">>", "and": "&", "or": "|", "xor": "^",
}


def operator_program(name: str, symbol: str) -> str:
    """Every way `symbol` reaches a dunder: plain, reflected, in-place, the in-place fallbacks
    (no __iop__, NotImplemented), name/attribute/subscript/class-body targets (each part
    evaluated once), and builtins that change in place."""
    op, rop, iop = f"__{name}__", f"__r{name}__", f"__i{name}__"
    return f"""
log = []
class Full:
    def {op}(self, other):
        log.append('{op}')
        return '{op}'
    def {rop}(self, other):
        log.append('{rop}')
        return '{rop}'
    def {iop}(self, other):
        log.append('{iop}')
        return '{iop}'
class PlainOnly:
    def {op}(self, other):
        log.append('{op}')
        return 'plain'
class Declines:
    def {iop}(self, other):
        log.append('declined {iop}')
        return NotImplemented
    def {op}(self, other):
        log.append('declined {op}')
        return NotImplemented
class Taker:
    def {rop}(self, other):
        log.append('taker {rop}')
        return 'taken'
class Box:
    def __init__(self):
        self.item = Full()
        self._hidden = Full()
    def bump(self):
        self._hidden {symbol}= 1
        return self._hidden
def key():
    log.append('key')
    return 'k'
def obj(o):
    log.append('object')
    return o
x = Full()
x {symbol}= 1
log.append(x)
x = PlainOnly()
x {symbol}= 1
log.append(x)
log.append(Full() {symbol} 1)
log.append(1 {symbol} Full())
x = 1
x {symbol}= Full()
log.append(x)
x = Declines()
x {symbol}= Taker()
log.append(x)
box = Box()
obj(box).item {symbol}= 1
log.append(box.item)
log.append(box.bump())
d = {{'k': Full()}}
obj(d)[key()] {symbol}= 1
log.append(d['k'])
class Body:
    n = Full()
    n {symbol}= 1
    d = {{'k': Full()}}
    d[key()] {symbol}= 1
    box = Box()
    box.item {symbol}= 1
log.append(Body.n)
log.append(Body.d['k'])
log.append(Body.box.item)
log.append(sorted(k for k in vars(Body) if not k.startswith('__')))
log
"""


BUILTIN_INPLACE_PROGRAM = """
out = []
x = [1]
alias = x
x += [2]
x *= 2
out.append([x, alias is x])
s = {1}
alias = s
s |= {2}
s &= {2, 3}
s ^= {4}
s -= {4}
out.append([sorted(s), alias is s])
n = 3
n **= 4
n <<= 2
n >>= 1
n @= 1 if False else 1
out
"""


def test_operator_dunders_behave_as_in_cpython(ex):
    from cpython_oracle import run_cpython

    mismatches = {}
    for name, symbol in BINARY_OPERATORS.items():
        program = operator_program(name, symbol)
        expected = run_cpython(program)
        assert expected.error_type is None, (name, expected)
        r = ex.execute(program)
        if r.error is not None or r.output != expected.output:
            mismatches[name] = (r.error, r.output, expected.output)
    assert mismatches == {}


def test_builtin_inplace_operators_behave_as_in_cpython(ex):
    from cpython_oracle import run_cpython

    program = BUILTIN_INPLACE_PROGRAM.replace("n @= 1 if False else 1\n", "")
    expected = run_cpython(program)
    r = ex.execute(program)
    assert r.error is None, r.error
    assert r.output == expected.output == [[[1, 2, 1, 2], True], [[2], True]]
    r = ex.execute("n = 3\nn **= 4\nn <<= 2\nn >>= 1\nn")
    assert r.output == 162


# -- final_answer --------------------------------------------------------------------------------
def test_final_answer_by_keyword(ex):
    r = ex.execute("final_answer(answer=[1, 'two'])")
    assert (r.is_final_answer, r.output, r.error) == (True, [1, "two"], None)


@pytest.mark.parametrize("call", [
    "final_answer()", "final_answer(1, 2)", "final_answer(1, answer=2)", "final_answer(value=1)",
    "final_answer(answer=1, extra=2)",
])
def test_final_answer_takes_exactly_one_value(ex, call):
    r = ex.execute(call)
    assert not r.is_final_answer
    assert r.error is not None and r.error.type == "TypeError"
    assert "final_answer" in r.error.message
    assert ex.execute("final_answer(7)").output == 7


# -- get_variables -------------------------------------------------------------------------------
VARIABLES_PROGRAM = """
import math
nums = [1, 2.5, None, True, 'x']
info = {'name': 'n', 'nested': {'k': [1, [2]]}}
class Point:
    def __repr__(self):
        return 'Point()'
p = Point()
class Tagged(dict):
    def __repr__(self):
        return 'Tagged!'
tagged = Tagged(a=1)
mixed = [1, Point()]
def helper():
    return 1
label = 'n'
while len(label) < 1:  # (the restricted runtime keeps names of its own for loops and results)
    pass
mixed[0] **= 2
"""


Point_like = dict  # (no model class exists on the host: what crosses is a str, never an instance)


def test_get_variables_gives_plain_data_and_reprs(make_executor):
    ex = make_executor(tools=TOOLS)
    assert ex.execute(VARIABLES_PROGRAM).error is None
    if make_executor.kind.endswith("open"):  # only the open policy lets the code write '_' names
        assert ex.execute("_private = 3").error is None
    got = ex.get_variables()
    assert set(got) == {"nums", "info", "Point", "p", "Tagged", "tagged", "mixed", "helper", "label"}
    assert got["nums"] == [1, 2.5, None, True, "x"]
    assert got["info"] == {"name": "n", "nested": {"k": [1, [2]]}}
    assert got["label"] == "n"
    # not plain data: the host gets text, never the model's object
    assert got["p"] == "Point()" and type(got["p"]) is not dict
    # a subclass of a builtin crosses as its base's data (read by the base's C code, never the
    # subclass's methods)
    assert got["tagged"] == {"a": 1} and type(got["tagged"]) is dict
    # a container holding an object crosses as data with that object's repr inside (the codec)
    assert got["mixed"] == [1, "Point()"] and type(got["mixed"][1]) is not Point_like
    assert isinstance(got["helper"], str) and "helper" in got["helper"]
    assert isinstance(got["Point"], str) and "Point" in got["Point"]
    # a copy: changing it changes nothing in the executor
    got["nums"].append(99)
    got["info"]["nested"]["k"].append(3)
    assert ex.execute("[len(nums), info['nested']['k']]").output == [5, [1, [2]]]


def test_get_variables_by_name(ex):
    ex.execute("a = 1\nb = [2]\nimport math")
    assert ex.get_variables(["b", "a"]) == {"b": [2], "a": 1}
    assert ex.get_variables([]) == {}
    for names in (["a", "missing"], ["add"], ["math"], ["final_answer"]):
        with pytest.raises(KeyError, match=names[-1]):
            ex.get_variables(names)
    ex.reset()
    assert ex.get_variables() == {}


def test_get_variables_renders_hostile_reprs_under_the_limits(make_executor):
    ex = make_executor(limits=Limits(timeout_s=1))
    r = ex.execute("class Slow:\n    def __repr__(self):\n        while True:\n            pass\n"
                   "class Bad:\n    def __repr__(self):\n        raise ValueError('no')\n"
                   "slow = Slow()\nbad = Bad()\nok = 1")
    assert r.error is None, r.error
    t0 = time.monotonic()
    got = ex.get_variables(["slow", "bad", "ok"])
    assert time.monotonic() - t0 < 5
    assert got["ok"] == 1
    assert "Slow object" in got["slow"] and "Bad object" in got["bad"]
    assert ex.execute("ok + 1").output == 2
