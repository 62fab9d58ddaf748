"""The compile cache (executors/restricted/execution/compile_step.py) never serves a stale program.

Its key must hold everything that changes the compiled result (the source, the names the code may
not rebind, whether an operation budget is metered); what the authorized imports and the other
limits decide is checked when the code runs. A cached answer must equal a fresh compile.
"""

from __future__ import annotations

import types

from hypothesis import given, settings
from hypothesis import strategies as st

from executors import Limits, LocalExecutor
from executors.restricted.execution import compile_step as compiler

SOURCES = [
    "x = 1\nx",
    "for i in range(3):\n    pass",
    "while False:\n    pass",
    "add = 1",
    "lookup = 2",
    "def f():\n    yield from [1]\nlist(f())",
    "[v for v in enumerate('ab')]",
    "import os",
    "x = (",
    "_x = 1",
]
RESERVED = [frozenset({"final_answer"}), frozenset({"final_answer", "add"}),
            frozenset({"final_answer", "add", "lookup"})]


def _shape(code: types.CodeType) -> tuple:
    """A code object's content, without its file name."""
    return (code.co_code, code.co_names, code.co_varnames, code.co_flags, tuple(
        _shape(c) if isinstance(c, types.CodeType) else c for c in code.co_consts))


def _answer(code: types.CodeType | None, error) -> tuple:
    return ("error", error.type, error.message, error.lineno) if code is None else \
        ("code", _shape(code))


def _fresh(source: str, reserved: frozenset[str], metered: bool) -> tuple:
    """The compiler's own uncached path."""
    return _answer(*compiler._compile(source, "<fresh>", source.splitlines(), reserved, metered))


def _cached(source: str, reserved: frozenset[str], metered: bool) -> tuple:
    code, error, _name = compiler.compile_step(source, reserved, metered)
    return _answer(code, error)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SOURCES), st.sampled_from(RESERVED), st.booleans()),
                min_size=1, max_size=25))
def test_a_cached_compile_equals_a_fresh_one(requests):
    """Whatever was compiled before, under whatever key, the answer is the fresh one's."""
    for source, reserved, metered in requests:
        assert _cached(source, reserved, metered) == _fresh(source, reserved, metered)


def test_metering_is_part_of_the_key():
    source = "for i in range(3):\n    pass"
    metered, _, name_a = compiler.compile_step(source, frozenset({"final_answer"}), True)
    plain, _, name_b = compiler.compile_step(source, frozenset({"final_answer"}), False)
    assert name_a != name_b and "_for" in metered.co_names and "_for" not in plain.co_names


def test_a_new_tool_makes_the_old_program_refused():
    """The same source, compiled before a tool of that name existed, is refused after."""
    ex = LocalExecutor()
    try:
        assert ex.execute("lookup = 3\nlookup").output == 3
        ex.register_tools({"lookup": lambda q: q})
        r = ex.execute("lookup = 3\nlookup")
        assert r.error is not None and r.error.type == "PolicyError" and "lookup" in r.error.message
    finally:
        ex.close()


def test_limits_and_imports_apply_to_a_cached_program():
    """One source, run by executors with other limits and imports: each holds its own."""
    loop = "n = 0\nfor i in range(10**6):\n    n += 1\nn"
    imports = "import numpy\nint(numpy.arange(4).sum())"
    free = LocalExecutor(limits=Limits(timeout_s=30))
    budget = LocalExecutor(limits=Limits(timeout_s=30, max_operations=1000))
    numeric = LocalExecutor(authorized_imports=["numpy"], limits=Limits(timeout_s=30))
    try:
        for _ in range(2):  # the second round is served from the cache
            assert free.execute(loop).output == 10**6
            r = budget.execute(loop)
            assert r.error is not None and r.error.type == "OperationLimitError"
            assert "Limits.max_operations" in r.error.message
            assert numeric.execute(imports).output == 6
            r = free.execute(imports)
            assert r.error is not None and r.error.type == "ImportError", r.error
    finally:
        for ex in (free, budget, numeric):
            ex.close()


def test_the_cache_is_bounded():
    first = "y = 'the first of many'"
    _, _, name = compiler.compile_step(first, frozenset(), False)
    assert compiler.compile_step(first, frozenset(), False)[2] == name  # a hit
    for i in range(compiler._CACHE_SIZE + 1):
        compiler.compile_step(f"y = {i}", frozenset(), False)
    assert compiler.compile_step(first, frozenset(), False)[2] != name  # compiled anew
    assert len(compiler.SOURCES) <= compiler._CACHE_SIZE + 1
