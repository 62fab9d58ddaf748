"""ToolCallingAgent through the real `openai` client against the stub server speaking `tool_calls`."""

from __future__ import annotations

import threading
import time

from openai_stub import OpenAIStub

from codeagent import OpenAIModel, RunResult, ScriptedModel, ToolCallingAgent, tool
from codeagent.agent.tool_calling import tool_schema
from codeagent.events import (
    CodeAction,
    ErrorEvent,
    FinalAnswerEvent,
    ModelReplyEvent,
    Observation,
    RunEnd,
    RunStart,
)
from codeagent.models.openai_model import ModelReply, ToolCall

BARRIER = threading.Barrier(2, timeout=5)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def slow_lookup(key: str, delay: float = 0.0) -> str:
    """Look a key up (waits for a second concurrent lookup: proves the calls overlap)."""
    BARRIER.wait()
    time.sleep(delay)
    return key.upper()


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def model_for(stub, **kw):
    return OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0, **kw)


def test_native_tool_calls_to_a_final_answer():
    replies = [{"tool_calls": [call("add", a=2, b=40)]}, {"tool_calls": [call("final_answer", answer=42)]}]
    with OpenAIStub(replies) as stub:
        with ToolCallingAgent(model_for(stub), tools=[add]) as agent:
            events = list(agent.stream("What is 2 + 40?"))
    result = events[-1].result
    assert isinstance(result, RunResult) and result.status == "success" and result.output == 42
    assert [type(e) for e in events] == [
        RunStart, ModelReplyEvent, CodeAction, Observation, ModelReplyEvent, CodeAction, Observation,
        FinalAnswerEvent, RunEnd,
    ]
    assert result.steps[0].code == "add(a=2, b=40)" and result.steps[0].observation == "add(a=2, b=40) -> 42"
    assert result.usage.total_tokens > 0 and len(result.steps) == 2
    first, second = stub.requests
    names = [t["function"]["name"] for t in first["tools"]]
    assert names == ["add", "final_answer"] and "stop" not in first
    assert first["tools"][0]["function"]["parameters"]["properties"]["a"] == {"type": "integer"}
    # the tool call and its result went back in the protocol's shape
    assistant, tool_msg = second["messages"][-2:]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["function"]["name"] == "add"
    assert tool_msg == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "42"}


def test_parallel_calls_run_concurrently_and_come_back_in_order():
    BARRIER.reset()
    replies = [
        {"tool_calls": [call("slow_lookup", key="first", delay=0.2), call("slow_lookup", key="second")]},
        {"tool_calls": [call("final_answer", answer="done")]},
    ]
    with OpenAIStub(replies) as stub:
        result = ToolCallingAgent(model_for(stub), tools=[slow_lookup]).run("look up two keys")
    # the barrier needs both calls in flight at once; the first finishes last yet is listed first
    assert result.status == "success"
    assert result.steps[0].observation.splitlines() == [
        "slow_lookup(key='first', delay=0.2) -> 'FIRST'", "slow_lookup(key='second') -> 'SECOND'",
    ]
    tool_messages = [m for m in stub.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["'FIRST'", "'SECOND'"]


def test_tool_errors_bad_arguments_and_unknown_tools_are_observations():
    replies = [
        {"tool_calls": [call("add", a="two", b=1), call("nope"), {"name": "add", "arguments": "{not json"}]},
        {"tool_calls": [call("final_answer")]},
        {"tool_calls": [call("final_answer", answer=3)]},
    ]
    with OpenAIStub(replies) as stub:
        events = list(ToolCallingAgent(model_for(stub), tools=[add]).stream("add"))
    result = events[-1].result
    obs = result.steps[0].observation
    assert "argument 'a' must be int" in obs and "no tool named 'nope'" in obs and "not a JSON object" in obs
    assert result.steps[0].error_kind == "tool" and result.steps[1].error_kind == "tool"
    assert "final_answer needs the answer" in result.steps[1].observation
    assert result.status == "success" and result.output == 3
    assert [e.kind for e in events if isinstance(e, ErrorEvent)] == ["tool", "tool"]


def test_text_replies_are_parsed_or_taught():
    replies = [
        "I think the answer is 5.",
        '{"name": "add", "arguments": {"a": 2, "b": 3}}',
        "final_answer(5)",
    ]
    with OpenAIStub(replies) as stub:
        result = ToolCallingAgent(model_for(stub), tools=[add]).run("2 + 3?")
    assert result.steps[0].error_kind == "parse" and "called no tool" in result.steps[0].observation
    assert result.steps[1].observation == "add(a=2, b=3) -> 5"
    assert result.status == "success" and result.output == 5


def test_an_endpoint_without_function_calling_falls_back_to_text():
    with OpenAIStub(['{"name": "final_answer", "arguments": {"answer": "ok"}}'], reject_tools=True) as stub:
        agent = ToolCallingAgent(model_for(stub), tools=[add])
        result = agent.run("say ok")
    assert result.status == "success" and result.output == "ok"
    assert stub.responses == [400, 200] and "tools" not in stub.requests[1]
    assert not agent.native and "rejected `tools`" in agent.adaptations[0]


def test_max_steps_and_model_errors_end_cleanly():
    with OpenAIStub(["no idea"] * 2 + [{"status": 500, "error": "down"}]) as stub:
        result = ToolCallingAgent(model_for(stub), tools=[add], max_steps=2).run("?")
        assert result.status == "max_steps" and result.error == "no final answer after 2 steps"
        assert "last turn" in stub.requests[-1]["messages"][-1]["content"]
        failed = ToolCallingAgent(model_for(stub), tools=[add]).run("?")
    assert failed.status == "failed" and "HTTP 500" in failed.error


def test_scripted_model_carries_tool_calls():
    model = ScriptedModel([ModelReply(text="", tool_calls=(ToolCall(name="final_answer", arguments={"answer": [1, 2]}),))])
    result = ToolCallingAgent(model, tools=[add]).run("list")
    assert result.output == [1, 2] and model.tools[0][-1]["function"]["name"] == "final_answer"


def test_tool_schema_marks_required_and_optional_parameters():
    schema = tool_schema(slow_lookup)["function"]
    assert schema["parameters"]["required"] == ["key"]
    assert schema["parameters"]["properties"]["delay"] == {"type": "number"}
    assert schema["description"].startswith("Look a key up")
