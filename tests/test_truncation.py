"""Wherever output is cut, the note says truly how much is gone: the note's count plus what is
shown is the real length, in every executor, in the agent's observation and in the MCP server's
answer, and a cut of a cut counts what the first cut removed too."""

from __future__ import annotations

import re

import executors_under_test
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeagent.agent.memory import truncate_middle
from codeagent.agent.observation import observation_text
from executors.base import ExecutionResult, Limits, cut_middle, full_length
from executors.restricted.limits.output import OutputBuffer as StepBuffer
from executors.worker.wire import OutputBuffer as WireBuffer
from executors.worker.wire import omitted_note

make_executor = executors_under_test.make_executor
NOTE = re.compile(r"\n\.\.\. \[([\d,]+) characters omitted\] \.\.\.\n")

# Text made of plain characters and of the pieces of a note, so that notes, broken notes and
# notes of earlier cuts all occur in what is cut.
PIECES = st.sampled_from(["x", "y\n", "é", "\n... [", " characters omitted] ...\n", "1", ",000", "12",
                          omitted_note(7), omitted_note(12_345)])
TEXTS = st.lists(PIECES, max_size=80).map("".join)


def shown_and_count(text: str) -> tuple[int, int]:
    """(characters shown, characters the one note says are gone)."""
    notes = NOTE.findall(text)
    assert len(notes) == 1, text[:200]
    note = NOTE.search(text)
    return len(text) - len(note.group(0)), int(notes[0].replace(",", ""))


@given(TEXTS, st.integers(0, 200), st.sampled_from([0.5, 2 / 3]))
def test_a_cut_keeps_the_full_length_and_fits(text, limit, share):
    cut = cut_middle(text, limit, head_share=share)
    assert full_length(cut) == full_length(text)
    assert len(cut) <= max(limit, len(omitted_note(full_length(text))))
    if len(text) <= limit:
        assert cut == text


@given(TEXTS, st.integers(0, 200), st.integers(0, 200))
def test_a_cut_of_a_cut_still_counts_everything(text, first, second):
    assert full_length(cut_middle(cut_middle(text, first), second, head_share=2 / 3)) == full_length(text)


@given(st.lists(st.text(alphabet="ab\n", max_size=300), max_size=30), st.integers(60, 500))
def test_output_buffers_count_what_they_drop(writes, limit):
    written = "".join(writes)
    for buffer in (WireBuffer(limit), StepBuffer(limit)):
        for w in writes:
            buffer.write(w)
        text = buffer.text() if isinstance(buffer, WireBuffer) else buffer.getvalue()
        assert full_length(text) == len(written)
        assert len(text) <= limit
        if len(written) <= limit:
            assert text == written


@pytest.mark.parametrize("code, length", [
    ("print('x' * 100_000, end='')", 100_000),
    ("for i in range(1000): print('y' * 99)", 100_000),
])
def test_printed_output_cut_in_every_executor_says_how_much(make_executor, code, length):
    with make_executor(limits=Limits(timeout_s=20)) as ex:
        r = ex.execute(code)
    assert r.error is None, r.error
    shown, count = shown_and_count(r.logs)
    assert shown + count == length  # the worker said 37 characters were omitted of 100,000
    assert len(r.logs) <= Limits().max_output_chars


def test_a_long_value_cut_in_every_executor_says_how_much(make_executor):
    with make_executor(limits=Limits(timeout_s=20)) as ex:
        r = ex.execute("'z' * 100_000")
    shown, count = shown_and_count(r.output_repr)
    assert shown + count == 100_002  # the repr has its quotes


def test_the_observation_and_the_mcp_answer_count_truly():
    logs = "".join(f"line {i}\n" for i in range(20_000))
    result = ExecutionResult(output=None, logs=cut_middle(logs, 20_000))
    whole = observation_text(ExecutionResult(output=None, logs=logs), 10**9)
    for budget in (3_000, 8_000, 30_000):
        text = observation_text(result, budget)
        assert full_length(text) == len(whole)
        assert len(text) <= budget
    assert full_length(truncate_middle(result.logs, 500)) == len(logs)


def test_the_mcp_server_answer_counts_truly():
    pytest.importorskip("mcp")
    from codeagent.mcp.serve import OBSERVATION_CHARS, run_python_result

    logs = "q" * 100_000
    answer = run_python_result(ExecutionResult(output=None, logs=cut_middle(logs, 20_000)))
    text = answer.content[0].text
    assert len(text) <= OBSERVATION_CHARS
    shown, count = shown_and_count(text)
    assert shown + count == len("Printed output:\n") + 100_000
