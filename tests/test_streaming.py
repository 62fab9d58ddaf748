"""Streamed model replies, against the project's real HTTP stub speaking server-sent events: text
deltas as they arrive, the code run only once its block is complete, the stream closed as soon
as the block has closed (the server sees the connection go), stalls and breaks as clear errors,
servers that do not stream, usage and finish reasons recorded."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, tool
from codeagent.agent.tool_calling import ToolCallingAgent
from codeagent.events import ModelReplyEvent, Notice, RunEnd, TextDelta
from codeagent.parsing import BlockWatch, parse_code
from executors import LocalExecutor


def code(body: str) -> str:
    return f"Thought: I will compute it.\n<code>\n{body}\n</code>"


def model(stub: OpenAIStub, **options) -> OpenAIModel:
    return OpenAIModel("stub-model", base_url=stub.base_url, api_key="k", **options)


def wait_for(condition, seconds: float = 30.0) -> bool:
    """Whether `condition()` came true (the stub's handler notices a closed connection at its next write)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def run_events(agent, task: str = "t") -> list:
    return list(agent.stream(task))


def test_text_deltas_arrive_before_the_code_runs():
    seen: list = []
    deltas_when_run: list[int] = []

    @tool
    def probe() -> int:
        """Record how many deltas the caller had when the code ran."""
        deltas_when_run.append(sum(isinstance(e, TextDelta) for e in seen))
        return 7

    with OpenAIStub([code("x = probe()\nfinal_answer(x * 6)")]) as stub, \
            CodeAgent(model(stub), tools=[probe], executor=LocalExecutor(tools=[probe])) as agent:
        for event in agent.stream("t"):
            seen.append(event)
    deltas = [e for e in seen if isinstance(e, TextDelta)]
    reply = next(e for e in seen if isinstance(e, ModelReplyEvent))
    assert len(deltas) > 1 and deltas_when_run == [len(deltas)]  # every piece came before the code ran
    assert "".join(d.text for d in deltas) == reply.text and all(0 < len(d.text) <= 4 for d in deltas)
    assert seen[-1].result.output == 42 and seen[-1].result.steps[0].finish_reason == "stop"
    assert stub.requests[0]["stream"] is True and stub.requests[0]["stream_options"] == {"include_usage": True}


def test_a_block_that_closes_early_is_cut_and_the_server_sees_the_connection_close():
    tail = "More words the model goes on writing, that nobody needs. " * 3
    reply = {"text": "Thought: the answer.\n```python\nfinal_answer(6 * 7)\n```\n", "tail": tail}
    with OpenAIStub([reply]) as stub, CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
        assert wait_for(lambda: stub.cut), "the server never saw the connection closed"
        (request, sent), = stub.cut
    result = events[-1].result
    assert result.status == "success" and result.output == 42
    step = result.steps[0]
    assert step.finish_reason == "cut" and step.model_output.endswith("```\n")
    assert "More words" not in "".join(e.text for e in events if isinstance(e, TextDelta))
    assert step.usage.completion_tokens > 0  # estimated: a cut stream brings no usage
    assert request == 1 and sent < len(reply["text"]) + 3000 * len(tail)  # the tail was not all sent


def test_a_server_that_ignores_stop_is_cut_at_the_closing_tag():
    with OpenAIStub([{"text": code("final_answer(1)") + "\nObservation: made up", "tail": "x" * 40}],
                    honor_stop=False) as stub, CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        result = run_events(agent)[-1].result
        assert wait_for(lambda: stub.cut)
    assert result.output == 1 and result.steps[0].finish_reason == "cut"
    assert "</code>" not in result.steps[0].model_output and "Observation" not in result.steps[0].model_output


def test_a_stream_that_stalls_is_cut_at_the_timeout_with_a_clear_error():
    reply = {"text": code("final_answer(1)"), "stall_after": 8, "stall_s": 60}
    with OpenAIStub([reply]) as stub, \
            CodeAgent(model(stub, timeout=0.5, max_retries=0), executor=LocalExecutor()) as agent:
        t0 = time.monotonic()
        result = run_events(agent)[-1].result
        waited = time.monotonic() - t0
    assert result.status == "failed" and waited < 30
    assert "stalled" in result.error and "sent nothing for 0.5 s" in result.error
    assert "OpenAIModel(timeout=...)" in result.error and "--model-timeout" in result.error


def test_a_stream_that_breaks_off_fails_with_a_clear_error():
    with OpenAIStub([{"text": code("final_answer(1)"), "break_after": 8}]) as stub, \
            CodeAgent(model(stub, max_retries=0), executor=LocalExecutor()) as agent:
        result = run_events(agent)[-1].result
    assert result.status == "failed" and "broke off after 8 characters" in result.error
    assert len(stub.requests) == 1


def test_a_server_that_does_not_stream_answers_whole():
    with OpenAIStub([code("x = 6"), code("final_answer(x * 7)")], stream=False) as stub, \
            CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert events[-1].result.output == 42 and [d.step for d in deltas] == [1, 2]  # one delta a reply
    assert all(r["stream"] is True for r in stub.requests)


def test_a_server_that_rejects_stream_is_asked_for_whole_replies():
    with OpenAIStub([code("x = 6"), code("final_answer(x * 7)")], reject_stream=True) as stub, \
            CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
    assert events[-1].result.output == 42
    assert any(isinstance(e, Notice) and "rejected `stream`" in e.message for e in events)
    assert [bool(r.get("stream")) for r in stub.requests] == [True, False, False]  # adapted once


def test_usage_and_finish_reason_of_a_streamed_reply_are_recorded():
    usage = {"prompt_tokens": 111, "completion_tokens": 22, "total_tokens": 133}
    with OpenAIStub([{"text": code("final_answer(1)"), "usage": usage, "finish_reason": "stop"}]) as stub, \
            CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
    result = events[-1].result
    assert result.usage.total_tokens == 133 and result.steps[0].finish_reason == "stop"
    assert next(e for e in events if isinstance(e, ModelReplyEvent)).finish_reason == "stop"


def test_run_asks_for_whole_replies_unless_told_to_stream():
    replies = [code("final_answer(1)")]
    with OpenAIStub(replies * 2) as stub:
        with CodeAgent(model(stub), executor=LocalExecutor()) as agent:
            assert agent.run("t").output == 1
        with CodeAgent(model(stub), executor=LocalExecutor(), stream_outputs=True) as agent:
            assert agent.run("t").output == 1
    assert [r.get("stream") for r in stub.requests] == [None, True]


def test_reasoning_streams_apart_and_stays_out_of_the_code():
    with OpenAIStub([{"text": code("final_answer(2)"), "reasoning_content": "think: 1 + 1"}]) as stub, \
            CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
    reasoning = [e.text for e in events if isinstance(e, TextDelta) and e.reasoning]
    assert reasoning == ["think: 1 + 1"] and events[-1].result.steps[0].reasoning == "think: 1 + 1"
    assert events[-1].result.output == 2


def test_native_tool_calls_stream_and_come_together():
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    replies = [{"tool_calls": [{"name": "add", "arguments": {"a": 40, "b": 2}}]},
               {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "done"}}]}]
    with OpenAIStub(replies) as stub:
        events = list(ToolCallingAgent(model(stub), tools=[add]).stream("t"))
    result = events[-1].result
    assert result.output == "done" and "add(a=40, b=2) -> 42" in result.steps[0].observation
    assert all(r["stream"] is True for r in stub.requests)


def test_scripted_model_streams_in_chunks_and_counts_cut_replies():
    model_ = ScriptedModel(["abcdefghij", "Thought\n```python\nfinal_answer(3)\n```\nand then more text"],
                           chunk_chars=3)
    stream = model_.stream([{"role": "user", "content": "hi"}])
    assert [d.text for d in stream] == ["abc", "def", "ghi", "j"] and stream.reply().text == "abcdefghij"
    with CodeAgent(model_, executor=LocalExecutor()) as agent:
        events = run_events(agent)
    assert events[-1].result.output == 3 and events[-1].result.steps[0].finish_reason == "cut"
    assert model_.cut == 1


# -- BlockWatch: where a streamed action closed, whatever the chunks ---------------------------

REPLIES = st.sampled_from([
    "Thought: x.\n<code>\nprint(1)\nfinal_answer(2)\n</code>\nObservation: none",
    "Let me see.\n```python\nx = [1, 2]\nfinal_answer(sum(x))\n```\nThat should do it.",
    "Plan:\n```json\n{\"a\": 1}\n```\nnow code:\n```\nfinal_answer(len('abc'))\n```\nbye",
    "<think>maybe ```python\nnope()\n``` no</think>Answer:\n```py\nfinal_answer(7)\n```\ntail",
    "no action at all, only words that go on\nand on",
])


@settings(max_examples=200, deadline=None)
@given(REPLIES, st.lists(st.integers(1, 12), min_size=1, max_size=60))
def test_the_block_end_does_not_depend_on_the_chunks(reply: str, sizes: list[int]):
    """Law: fed in any chunks, the watch finds the same end as fed one character at a time, and
    the code parsed from the kept text is the code of the whole reply."""
    def end_of(pieces: list[str]) -> int | None:
        watch, text = BlockWatch(), ""
        for piece in pieces:
            text += piece
            found = watch.end(text)
            if found is not None:
                return found
        return None

    pieces, i = [], 0
    while i < len(reply):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(reply[i:i + size])
        i += size
    end = end_of(pieces)
    assert end == end_of(list(reply))
    if end is not None:
        assert parse_code(reply[:end]) == parse_code(reply)


def test_run_end_is_last_and_deltas_belong_to_their_step():
    with OpenAIStub([code("x = 1"), "no code", code("final_answer(x)")]) as stub, \
            CodeAgent(model(stub), executor=LocalExecutor()) as agent:
        events = run_events(agent)
    assert isinstance(events[-1], RunEnd) and {e.step for e in events if isinstance(e, TextDelta)} == {1, 2, 3}
