"""OpenAIModel through the real `openai` client against a real local HTTP server; ScriptedModel."""

from __future__ import annotations

import socket
import time

import pytest
from openai_stub import OpenAIStub

from codeagent import ModelReply, OpenAIModel, ScriptedModel
from codeagent.models.openai_model import (
    ModelError,
    Usage,
    cut_at_stop,
    merge_system_into_user,
    split_reasoning,
)

MESSAGES = [{"role": "system", "content": "You write code."}, {"role": "user", "content": "Task: say hi"}]


def model_for(stub: OpenAIStub, **kw) -> OpenAIModel:
    return OpenAIModel("stub-model", base_url=stub.base_url, api_key="test-key", **kw)


def test_complete_sends_the_protocol_and_returns_text_and_usage():
    with OpenAIStub([{"text": "Hello", "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}}]) as stub:
        reply = model_for(stub).complete(MESSAGES, stop=["</code>"])
    assert reply == ModelReply(text="Hello", usage=Usage(prompt_tokens=11, completion_tokens=2, total_tokens=13),
                               finish_reason="stop")
    (body,) = stub.requests
    assert body["model"] == "stub-model" and body["messages"] == MESSAGES and body["stop"] == ["</code>"]


def test_server_side_stop_is_honored_and_text_is_cut():
    with OpenAIStub(["<code>\nprint(1)\n</code>\nObservation: made up"]) as stub:
        reply = model_for(stub).complete(MESSAGES, stop=["</code>", "\nObservation:"])
    assert reply.text == "<code>\nprint(1)\n"


def test_no_stop_support_cuts_client_side():
    reply = "<code>\nprint(1)\n</code>\nObservation: made up"
    with OpenAIStub([reply], reject_stop=True) as stub:
        with pytest.raises(ModelError, match="HTTP 400.*stop"):
            model_for(stub, adapt=False).complete(MESSAGES, stop=["</code>"])
        stub.add(reply)
        cut = model_for(stub, supports_stop=False).complete(MESSAGES, stop=["</code>"])
    assert "stop" not in stub.requests[-1]
    assert cut.text == "<code>\nprint(1)\n"


def test_an_endpoint_rejecting_stop_is_adapted_to():
    reply = "<code>\nprint(1)\n</code>\nObservation: made up"
    with OpenAIStub([reply, reply], reject_stop=True) as stub:
        model = model_for(stub)
        assert model.complete(MESSAGES, stop=["</code>"]).text == "<code>\nprint(1)\n"
        assert model.complete(MESSAGES, stop=["</code>"]).text == "<code>\nprint(1)\n"
    assert stub.responses == [400, 200, 200] and "stop" in stub.requests[0]
    assert all("stop" not in body for body in stub.requests[1:])
    assert not model.supports_stop and "rejected `stop`" in model.adaptations[0]


def test_endpoint_without_system_role():
    with OpenAIStub(["ok", "ok", "ok"], system_role=False) as stub:
        with pytest.raises(ModelError, match="system_role=False"):
            model_for(stub, adapt=False).complete(MESSAGES)
        reply = model_for(stub, system_role=False).complete(MESSAGES)
        assert reply.text == "ok"
        assert stub.requests[-1]["messages"] == [{"role": "user", "content": "You write code.\n\nTask: say hi"}]
        adapting = model_for(stub)  # the default adapts after one HTTP 400
        assert adapting.complete(MESSAGES).text == "ok" and not adapting.system_role
    assert stub.responses == [400, 200, 400, 200]


def test_reasoning_content_and_think_text_are_kept_out_of_the_text():
    replies = [
        {"text": "<code>\nx = 1\n</code>", "reasoning_content": "Let me think about x."},
        "<think>I should print.</think>\nThought: print it\n<code>print(2)</code>",
    ]
    with OpenAIStub(replies) as stub:
        model = model_for(stub)
        first = model.complete(MESSAGES, stop=["</code>"])
        second = model.complete(MESSAGES, stop=["</code>"])
    assert first.text == "<code>\nx = 1\n" and first.reasoning == "Let me think about x."
    assert second.text == "Thought: print it\n<code>print(2)" and second.reasoning == "I should print."


def test_a_500_is_retried_by_the_sdk():
    with OpenAIStub([{"status": 500}, {"status": 429}, "fine"]) as stub:
        reply = model_for(stub, max_retries=3).complete(MESSAGES)
    assert reply.text == "fine" and stub.responses == [500, 429, 200]


def test_persistent_errors_become_model_errors_that_name_the_setting():
    with OpenAIStub([{"status": 500}, {"status": 500}]) as stub:
        with pytest.raises(ModelError, match="HTTP 500"):
            model_for(stub, max_retries=1).complete(MESSAGES)
        assert stub.responses == [500, 500]
        stub.add({"status": 401, "error": "bad key"})
        with pytest.raises(ModelError, match="HTTP 401.*api-key-env") as info:
            model_for(stub).complete(MESSAGES)
        assert info.value.status == 401  # callers branch on the status, not on the message
        stub.add({"status": 404, "error": "model not found"})
        with pytest.raises(ModelError, match="HTTP 404.*--model") as info:
            model_for(stub).complete(MESSAGES)
        assert info.value.status == 404


def test_unreachable_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=5)
    with pytest.raises(ModelError, match="cannot reach.*--base-url") as info:
        model.complete(MESSAGES)
    assert info.value.status is None  # not an HTTP answer


def test_request_options_native_and_server_specific():
    with OpenAIStub(["ok"]) as stub:
        model_for(stub, request_options={"temperature": 0.2, "max_tokens": 50, "top_k": 20}).complete(MESSAGES)
    body = stub.requests[0]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50 and body["top_k"] == 20


def test_api_key_defaults(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o-mini")
    with OpenAIStub(["ok"]) as stub:  # a local server needs no key
        assert OpenAIModel("m", base_url=stub.base_url).complete(MESSAGES).text == "ok"
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        stub.add("from env")
        assert OpenAIModel("m").complete(MESSAGES).text == "from env"


def test_scripted_model_replays_cuts_and_records():
    model = ScriptedModel(["a</code>tail", ModelReply(text="b", reasoning="why")])
    assert model.scripted and model.model_id == "scripted"
    first = model.complete(MESSAGES, stop=["</code>"])
    assert first.text == "a" and first.usage.total_tokens > 0
    assert model.complete(MESSAGES).reasoning == "why"
    assert model.calls[0] == MESSAGES and model.stops == [["</code>"], None]
    with pytest.raises(ModelError, match="ran out of replies"):
        model.complete(MESSAGES)


def test_split_reasoning_cases():
    assert split_reasoning("plain") == ("plain", None)
    assert split_reasoning("<think>a</think>b") == ("b", "a")
    assert split_reasoning("a</think>\nb") == ("b", "a")  # template opened the block itself
    assert split_reasoning("b<think>unfinished") == ("b", "unfinished")
    assert split_reasoning("<think>1</think>x<think>2</think>y") == ("xy", "1\n\n2")


def test_models_and_the_parser_share_one_reasoning_stripper():
    from codeagent import parsing

    assert split_reasoning is parsing.split_reasoning
    # the parser drops the same block the model would have recorded as reasoning
    reply = "<think>\n<code>\ndraft()\n</code>\n</think>\n<code>\nfinal_answer(1)\n</code>"
    text, reasoning = split_reasoning(reply)
    assert reasoning == "<code>\ndraft()\n</code>" and "draft" not in text
    assert parsing.parse_code(reply) == parsing.parse_code(text) == "final_answer(1)"
    # a mid-line <think> quoted in prose stays text for the parser; a model's raw reply treats it as
    # its own reasoning token
    assert parsing.strip_reasoning("use <think> tags").text == "use <think> tags"
    assert split_reasoning("use <think> tags") == ("use ", "tags")


def test_cut_at_stop_and_merge():
    assert cut_at_stop("abcXdefY", ["Y", "X"]) == "abc"
    assert cut_at_stop("abc", None) == "abc" and cut_at_stop("abc", [""]) == "abc"
    assert merge_system_into_user([{"role": "system", "content": "S"}]) == [{"role": "user", "content": "S"}]
    merged = merge_system_into_user(MESSAGES + [{"role": "assistant", "content": "x"}])
    assert [m["role"] for m in merged] == ["user", "assistant"]


def test_stub_is_fast_enough_for_many_tests():
    with OpenAIStub(["ok"] * 20) as stub:
        model = model_for(stub)
        t0 = time.perf_counter()
        for _ in range(20):
            model.complete(MESSAGES)
    assert (time.perf_counter() - t0) / 20 < 0.1
