"""auto_agent: the documented rule, probed through the real `openai` client against the stub."""

from __future__ import annotations

import pytest
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, SingleCallAgent, ToolCallingAgent, auto_agent, tool
from codeagent.agent.auto import MODE_ENV, choose_mode
from codeagent.models.openai_model import ModelError

CODE_OK = "Thought: compute.\n<code>\nfinal_answer(17 * 23)\n</code>"
TOOL_OK = {"tool_calls": [{"name": "multiply", "arguments": {"a": 17, "b": 23}}]}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(MODE_ENV, raising=False)


def agent_for(replies, mode=None, **stub_options):
    with OpenAIStub(replies, **stub_options) as stub:
        model = OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0)
        agent = auto_agent(model, [add], mode=mode, max_steps=3)
    return agent, stub


def test_a_model_that_writes_code_gets_a_code_agent():
    agent, stub = agent_for([CODE_OK])
    assert type(agent) is CodeAgent and agent.auto_choice.mode == "code" and agent.auto_choice.writes_code
    assert len(stub.requests) == 1 and "tools" not in stub.requests[0]


def test_native_tool_calls_without_usable_code_get_a_tool_calling_agent():
    agent, stub = agent_for(["<code>\nfinal_answer(17 + 23)\n</code>", TOOL_OK])
    assert type(agent) is ToolCallingAgent and agent.auto_choice.native_tools
    assert stub.requests[1]["tools"][0]["function"]["name"] == "multiply"


def test_a_weak_model_gets_single_call_mode():
    agent, _ = agent_for(["I am not sure.", "Sure! 17 * 23 = 391"])
    assert type(agent) is SingleCallAgent and agent.auto_choice.mode == "single_call"


def test_an_endpoint_rejecting_tools_counts_as_no_function_calling():
    agent, stub = agent_for(["the answer is 391", "the answer is 391"], reject_tools=True)
    assert type(agent) is SingleCallAgent and stub.responses[:2] == [200, 400]
    # then the constraint probe (single-call mode is constrained where the endpoint can): none works here
    assert agent.auto_choice.constrain is None and "unconstrained" in agent.auto_choice.reason


def test_a_configured_mode_always_wins_without_probing(monkeypatch):
    agent, stub = agent_for([], mode="tool_calling")
    assert type(agent) is ToolCallingAgent and stub.requests == [] and "configured" in agent.auto_choice.reason
    monkeypatch.setenv(MODE_ENV, "single_call")
    agent, stub = agent_for([])
    assert type(agent) is SingleCallAgent and stub.requests == []
    agent, _ = agent_for([], mode="code")  # the argument beats the environment
    assert type(agent) is CodeAgent


def test_bad_modes_and_unreachable_endpoints_are_errors_for_the_user(monkeypatch):
    with pytest.raises(ValueError, match="mode= must be one of"):
        choose_mode(None, "json")  # type: ignore[arg-type]
    monkeypatch.setenv(MODE_ENV, "fast")
    with pytest.raises(ValueError, match=MODE_ENV):
        choose_mode(None)  # type: ignore[arg-type]
    monkeypatch.delenv(MODE_ENV)
    model = OpenAIModel("stub", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=2)
    with pytest.raises(ModelError, match="cannot reach"):
        auto_agent(model, [add])


def test_the_chosen_agent_runs():
    with OpenAIStub([CODE_OK, "<code>\nfinal_answer(add(2, 40))\n</code>"]) as stub:
        model = OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0)
        with auto_agent(model, [add]) as agent:
            assert agent.run("2 + 40?").output == 42
