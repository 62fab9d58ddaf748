"""Bombs a model's code hands the host, in every executor: a Decimal with an exponent in the
billions, an int of 84,000 digits, a Decimal of 100,000 digits, a 40 MB string, nesting 100,000
deep, a list of 2.1 million values. As a final answer, a printed value, a variable and a tool's argument,
each reaches the host within the bounds table (executors/worker/bounds): what was cut says so
(a Repr naming the bound, or a ToolError for a tool's argument, which is never called with a cut
value), and neither taking the result nor touching it like a host would (print it, int() it,
format it, put it in JSON) grows the host past a few megabytes. Before the bounds, `int()` of the
Decimal alone made the host grow by gigabytes, in every executor.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from executors_under_test import make_executor  # noqa: F401  (the fixture)

from executors import Limits
from executors.fuzzing.judging.host_touches import touch_like_a_host
from executors.worker.codec import Repr

MB = 2**20

BOMBS = {
    "Decimal 1E+999999999": "import decimal\nv = decimal.Decimal('1e999999999')",
    "Decimal of 100,000 digits": "import decimal\nv = decimal.Decimal('9' * 100_000)",
    "int of 84,510 digits": "v = 7 ** 100_000",
    "str of 40 MB": "v = 'x' * 40_000_000",
    "nesting 100,000 deep": "v = []\nfor _ in range(100_000):\n    v = [v]",
    "2.1 million values": "v = [0] * 2_100_000",
}
PLACES = {
    "final answer": "final_answer(v)",
    "printed": "print(v)",
    "variable": "x = v",
    "tool argument": "probe(v)",
}


def _cut_note(value) -> str | None:
    """The text of the marker that says what was cut, looked for down a nested value."""
    for _ in range(300):
        if isinstance(value, Repr):
            return str(value)
        if type(value) is not list or len(value) != 1:
            return None
        value = value[0]
    return None


class Peak:
    """The most the host's Python heap grew by inside the block (tracemalloc)."""

    def __enter__(self):
        self.tracing = tracemalloc.is_tracing()
        if not self.tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self.base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1] - self.base
        if not self.tracing:
            tracemalloc.stop()


@pytest.mark.parametrize("place", list(PLACES), ids=list(PLACES))
@pytest.mark.parametrize("bomb", list(BOMBS), ids=list(BOMBS))
def test_a_bomb_reaches_the_host_bounded(make_executor, bomb, place):  # noqa: F811
    calls = []
    ex = make_executor(tools={"probe": lambda value: calls.append(value) or 1},
                       authorized_imports=["decimal"], limits=Limits(timeout_s=30, max_memory_mb=512))
    in_process = make_executor.kind == "local"
    with Peak() as taking:
        r = ex.execute(f"{BOMBS[bomb]}\n{PLACES[place]}")
        values = [r.output]
        if place == "variable":
            values.append(ex.get_variables(["x"])["x"])
    if not in_process:  # (in process the step's own 40 MB string is on the host's heap too)
        assert taking.bytes < 16 * MB, f"taking the result grew the host by {taking.bytes / MB:.1f} MB"
    assert len(r.logs) <= ex.limits.max_output_chars + 200
    started = time.monotonic()
    with Peak() as touching:
        touch_like_a_host(values + calls)
    assert touching.bytes < 4 * MB and time.monotonic() - started < 5, (touching.bytes, bomb, place)
    assert calls == [], "a tool is never called with a value that did not cross"
    if place == "tool argument":
        assert r.error is not None and r.error.type == "ToolError" and "too large to cross" in r.error.message, r.error
    elif place in ("final answer", "variable"):
        assert r.error is None, r.error
        note = _cut_note(values[-1])
        assert note is not None and "did not cross the boundary" in note and "Bounds." in note, values[-1]
    assert ex.execute("1 + 1").output == 2
