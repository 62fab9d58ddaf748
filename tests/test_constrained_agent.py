"""Constrained decoding end to end: OpenAIModel(constrain=...) and the agents, over the real HTTP stub.

The stub replays scripted replies and keeps every request body, so these tests check what goes on
the wire (the schema or grammar exactly when asked), what happens when an endpoint rejects it (the
documented fallback, reported as Notice events) and that a reply breaking the constraint anyway
still gets a lesson the model can act on.
"""

from __future__ import annotations

import json

import pytest
from openai_stub import OpenAIStub
from test_constrain import Gbnf

from codeagent import (
    CodeAgent,
    OpenAIModel,
    ScriptedModel,
    SingleCallAgent,
    ToolCallingAgent,
    auto_agent,
    tool,
)
from codeagent.agent.auto import MODE_ENV
from codeagent.agent.memory import Memory
from codeagent.events import ErrorEvent, Notice, RunEnd
from codeagent.models.constrain import (
    SCALAR_ANSWER_SCHEMA,
    Constraint,
    code_action_grammar,
    code_action_schema,
    single_call_schema,
)
from codeagent.models.openai_model import ModelError

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Task: hi"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
GRAMMAR = 'root ::= "yes" | "no"\n'
PROBE_OK = '{"animal": "zebra", "legs": 4}'


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return {"japan": "Tokyo", "france": "Paris"}.get(country.strip().lower(), "unknown")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(MODE_ENV, raising=False)


def model_for(stub: OpenAIStub, constrain=None, **kw) -> OpenAIModel:
    kw.setdefault("max_retries", 0)
    return OpenAIModel("stub-model", base_url=stub.base_url, api_key="k", constrain=constrain, **kw)


def constraint_keys(body: dict) -> set[str]:
    return {k for k in ("response_format", "grammar", "guided_json", "guided_grammar", "tool_choice") if k in body}


# -- the request carries the constraint exactly when asked ---------------------------------------


@pytest.mark.parametrize("constrain, expected", [
    ("json_schema", {"response_format": {"type": "json_schema",
                                         "json_schema": {"name": "t", "schema": SCHEMA, "strict": False}}}),
    ("json_object", {"response_format": {"type": "json_object", "schema": SCHEMA}}),
    ("guided_json", {"guided_json": SCHEMA}),
    ("grammar", {"grammar": GRAMMAR}),
    ("guided_grammar", {"guided_grammar": GRAMMAR}),
])
def test_each_spelling_puts_exactly_its_fields_in_the_body(constrain, expected):
    constraint = Constraint(schema=SCHEMA, grammar=GRAMMAR, name="t")
    with OpenAIStub(["ok", "ok", "ok"]) as stub:
        model = model_for(stub, constrain)
        model.complete(MESSAGES, constraint=constraint)
        model.complete(MESSAGES)  # no constraint asked: none sent
        model_for(stub, None).complete(MESSAGES, constraint=constraint)  # constrain=None: none sent
    first, second, third = stub.requests
    assert {k: first[k] for k in constraint_keys(first)} == expected
    assert constraint_keys(second) == set() and constraint_keys(third) == set()
    assert model.adaptations == []


def test_a_schema_goes_to_a_grammar_spelling_as_gbnf_and_a_grammar_never_to_a_schema_spelling():
    with OpenAIStub(["ok", "ok"]) as stub:
        model_for(stub, "grammar").complete(MESSAGES, constraint=Constraint(schema=SCHEMA))
        model_for(stub, "json_schema").complete(MESSAGES, constraint=Constraint(grammar=GRAMMAR))
    gbnf = Gbnf(stub.requests[0]["grammar"])
    assert gbnf.accepts('{"a": 3}') and not gbnf.accepts('{"a": "x"}')
    assert constraint_keys(stub.requests[1]) == set()


def test_bad_constrain_settings_are_user_errors():
    with pytest.raises(ValueError, match="constrain must be None, 'auto' or one of"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1", constrain="json")
    with pytest.raises(ValueError, match="no endpoint to probe"):
        ScriptedModel([], constrain="auto")


# -- an endpoint that rejects the constraint ----------------------------------------------------


def test_a_rejected_constraint_falls_back_to_none_and_says_so():
    with OpenAIStub([{"status": 400, "error": "Unknown field: grammar"}, "ok", "ok"]) as stub:
        model = model_for(stub, "grammar", max_retries=3)
        assert model.complete(MESSAGES, constraint=Constraint(grammar=GRAMMAR)).text == "ok"
        model.complete(MESSAGES, constraint=Constraint(grammar=GRAMMAR))
    assert stub.responses == [400, 200, 200]
    assert "grammar" in stub.requests[0] and "grammar" not in stub.requests[1] and "grammar" not in stub.requests[2]
    assert model.constraint_spelling() is None
    (note,) = model.adaptations
    assert "rejected the constrained request (constrain='grammar', HTTP 400: Unknown field: grammar)" in note
    assert "continuing without a constraint" in note


def test_a_server_error_on_the_first_constrained_request_is_not_retried_by_the_sdk():
    """llama-cpp-python answers json_schema with HTTP 500: an answer, not a fault to retry 3 times."""
    with OpenAIStub([{"status": 500, "error": "Input should be 'text' or 'json_object'"}, "ok"]) as stub:
        model = model_for(stub, "json_schema", max_retries=3)
        model.complete(MESSAGES, constraint=Constraint(schema=SCHEMA))
    assert stub.responses == [500, 200]
    assert "HTTP 500: Input should be 'text' or 'json_object'" in model.adaptations[0]


def test_auto_probes_once_per_endpoint_and_model_and_falls_to_the_next_spelling():
    probe = [{"status": 500, "error": "Input should be 'text' or 'json_object'"}, "Waves.", PROBE_OK]
    with OpenAIStub([*probe, "ok", {"status": 400, "error": "grammar too large"}, "ok", "ok"]) as stub:
        model = model_for(stub, "auto")
        assert model.constraint_spelling() == "grammar"  # json_schema: 500, json_object: ignored
        assert len(stub.requests) == 3
        model.complete(MESSAGES, constraint=Constraint(schema=SCHEMA))
        assert "grammar" in stub.requests[3]
        model.complete(MESSAGES, constraint=Constraint(schema=SCHEMA))  # rejected: the next one untried
        assert stub.requests[5]["guided_json"] == SCHEMA and model.constraint_spelling() == "guided_json"
        again = model_for(stub, "auto")  # the same endpoint and model: no second probe
        again.complete(MESSAGES, constraint=Constraint(schema=SCHEMA))
        assert "grammar" in stub.requests[6] and len(stub.requests) == 7
    assert model.adaptations[0].startswith("constrain='auto': constrain='grammar' (passed over: json_schema: HTTP 500")
    assert "trying constrain='guided_json'" in model.adaptations[1]


def test_auto_that_finds_nothing_sends_no_constraint_and_the_run_says_why():
    with OpenAIStub(["Waves."] * 4 + ["<code>final_answer('Tokyo')</code>"]) as stub:
        agent = SingleCallAgent(model_for(stub, "auto"), [capital_of])
        events = list(agent.stream("Capital of Japan?"))
    assert events[-1].result.output == "Tokyo"
    assert constraint_keys(stub.requests[-1]) == set()
    (notice,) = [e for e in events if isinstance(e, Notice)]
    assert notice.message.startswith("constrain='auto': no constraint spelling works on this endpoint")
    assert json.loads(notice.to_json())["type"] == "notice"


def test_a_rejection_mid_run_is_a_notice_and_the_run_goes_on():
    replies = [{"status": 400, "error": "bad grammar"}, '<code>capital_of(country="Japan")</code>',
               '<code>final_answer("Tokyo")</code>']
    with OpenAIStub(replies) as stub:
        agent = SingleCallAgent(model_for(stub, "grammar"), [capital_of])
        events = list(agent.stream("Capital of Japan?"))
    assert events[-1].result.output == "Tokyo"
    notices = [e for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].step == 1 and "HTTP 400: bad grammar" in notices[0].message
    assert "grammar" in stub.requests[0] and all("grammar" not in b for b in stub.requests[1:])


# -- each agent mode brings its constraint ------------------------------------------------------


def test_single_call_with_a_grammar_speaks_its_own_format_and_never_allows_the_last_call_again():
    replies = ['<code>capital_of(country="Japan")</code>', '<code>final_answer("Tokyo")</code>']
    with OpenAIStub(replies) as stub:
        result = SingleCallAgent(model_for(stub, "grammar"), [capital_of]).run("Capital of Japan?")
    assert result.output == "Tokyo"
    first, second = (Gbnf(b["grammar"]) for b in stub.requests)
    assert first.accepts('<code>capital_of(country="Japan")</code>')
    assert second.accepts('<code>capital_of(country="France")</code>')
    assert not second.accepts('<code>capital_of(country="Japan")</code>')  # it just ran
    assert second.accepts('<code>final_answer("Tokyo")</code>')
    assert not first.accepts('<code>final_answer({"a": 1})</code>')  # a scalar answer only
    assert not first.accepts("The capital is Tokyo.")


def test_single_call_with_a_schema_gets_the_json_prompt_and_replies_go_through_the_json_tier():
    replies = ['{"name": "capital_of", "arguments": {"country": "Japan"}}',
               '{"name": "final_answer", "arguments": {"answer": "Tokyo"}}']
    with OpenAIStub(replies) as stub:
        result = SingleCallAgent(model_for(stub, "json_object"), [capital_of]).run("Capital of Japan?")
    assert result.output == "Tokyo" and [s.code for s in result.steps] == ["capital_of(country='Japan')",
                                                                           "final_answer('Tokyo')"]
    body = stub.requests[0]
    schema = single_call_schema([capital_of], answer_schema=SCALAR_ANSWER_SCHEMA)
    assert body["response_format"] == {"type": "json_object", "schema": schema}
    system = body["messages"][0]["content"]
    assert 'Each reply is one JSON object: {"name": "<tool>", "arguments": {...}}' in system
    # a worked example from the actual tool, as chat turns before the task, in the same JSON
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    example_call = json.loads(body["messages"][2]["content"])
    assert example_call["name"] == "capital_of" and set(example_call["arguments"]) == {"country"}
    assert body["messages"][-1]["content"] == "Task:\nCapital of Japan?"
    # after a result: the reminder to answer, in the constrained spelling
    observation = stub.requests[1]["messages"][-1]["content"]
    assert observation.startswith("Observation:\nLast value: 'Tokyo'\nIf this answers the task, reply "
                                  '{"name": "final_answer"')


def test_a_reply_that_breaks_the_schema_anyway_gets_a_lesson_in_the_constrained_format():
    replies = ["The capital of Japan is Tokyo.", '{"name": "capitol", "arguments": {"country": "Japan"}}',
               '{"name": "final_answer", "arguments": {"answer": "Tokyo"}}']
    with OpenAIStub(replies) as stub:
        events = list(SingleCallAgent(model_for(stub, "json_object"), [capital_of]).stream("Capital of Japan?"))
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.kind for e in errors] == ["parse", "invalid_action"]
    assert 'Reply with one JSON object: {"name": "<tool name>", "arguments": {...}}' in errors[0].message
    assert '{"name": "capital_of", "arguments": {"country": ...}}' in errors[0].message
    assert "Did you mean capital_of(country=...)" in errors[1].message
    assert events[-1].result.output == "Tokyo"
    assert stub.requests[1]["messages"][-1]["content"].startswith("Observation:\nError: I could not find a tool call")


def test_on_the_last_step_only_the_final_answer_can_be_written():
    """A weak model that keeps looking things up ends with its best answer, not out of steps."""
    replies = ['<code>capital_of(country="Japan")</code>', '<code>final_answer("Tokyo")</code>']
    with OpenAIStub(replies) as stub:
        result = SingleCallAgent(model_for(stub, "grammar"), [capital_of], max_steps=2).run("Capital of Japan?")
    assert result.output == "Tokyo"
    first, last = (Gbnf(b["grammar"]) for b in stub.requests)
    assert first.accepts('<code>capital_of(country="France")</code>')
    assert not last.accepts('<code>capital_of(country="France")</code>')
    assert last.accepts('<code>final_answer("Tokyo")</code>')
    replies = ['{"name": "capital_of", "arguments": {"country": "Japan"}}',
               '{"name": "final_answer", "arguments": {"answer": "Tokyo"}}']
    with OpenAIStub(replies) as stub:
        SingleCallAgent(model_for(stub, "json_object"), [capital_of], max_steps=2).run("Capital of Japan?")
    first, last = (b["response_format"]["schema"] for b in stub.requests)
    assert first == single_call_schema([capital_of], answer_schema=SCALAR_ANSWER_SCHEMA)
    assert last == single_call_schema([], answer_schema=SCALAR_ANSWER_SCHEMA)


def test_code_agent_with_a_grammar_gets_thought_then_one_block():
    with OpenAIStub(["Thought: add them.\n<code>\nfinal_answer(add(2, 40))\n</code>"]) as stub:
        result = CodeAgent(model_for(stub, "grammar"), [add]).run("2 + 40?")
    assert result.output == 42
    assert stub.requests[0]["grammar"] == code_action_grammar(("<code>", "</code>"))


def test_code_agent_with_a_schema_decodes_the_json_and_the_policy_still_applies():
    replies = [json.dumps({"thought": "look around", "code": "import os\nprint(os.listdir('/'))"}),
               "not json at all",
               json.dumps({"thought": "add", "code": "final_answer(add(2, 40))"})]
    with OpenAIStub(replies) as stub:
        result = CodeAgent(model_for(stub, "json_schema"), [add]).run("2 + 40?")
    assert stub.requests[0]["response_format"]["json_schema"]["schema"] == code_action_schema()
    assert result.output == 42
    first, second, _ = result.steps
    assert first.code == "import os\nprint(os.listdir('/'))" and "os" in first.observation  # refused by policy
    assert first.error_kind == "execution" and second.error_kind == "parse"
    assert '{"thought": "what you will do", "code": "the Python code"}' in second.error


def test_tool_calling_asks_for_a_required_tool_call_and_drops_it_when_rejected():
    call = {"tool_calls": [{"name": "final_answer", "arguments": {"answer": 42}}]}
    with OpenAIStub([call, {"status": 400, "error": "tool_choice 'required' is not supported"}, call, call]) as stub:
        assert ToolCallingAgent(model_for(stub, "grammar"), [add]).run("2 + 40?").output == 42
        events = list(ToolCallingAgent(model_for(stub, "auto"), [add]).stream("2 + 40?"))
        ToolCallingAgent(model_for(stub, None), [add]).run("2 + 40?")
    assert stub.requests[0]["tool_choice"] == "required" and "grammar" not in stub.requests[0]
    assert stub.requests[1]["tool_choice"] == "required" and "tool_choice" not in stub.requests[2]
    assert "tool_choice" not in stub.requests[3]  # constrain=None: as before
    (notice,) = [e for e in events if isinstance(e, Notice)]
    assert "rejected tool_choice='required' (HTTP 400)" in notice.message
    assert isinstance(events[-1], RunEnd) and events[-1].result.output == 42


# -- auto_agent ----------------------------------------------------------------------------------


def test_auto_agent_gives_a_weak_model_a_constrained_single_call_agent():
    weak = ["I am not sure.", "Sure! 17 * 23 = 391"]  # the code probe, the tool probe
    probe = [{"status": 500, "error": "Input should be 'text' or 'json_object'"}, "Waves.", PROBE_OK]
    run = ['<code>capital_of(country="Japan")</code>', '<code>final_answer("Tokyo")</code>']
    with OpenAIStub([*weak, *probe, *run]) as stub:
        agent = auto_agent(model_for(stub), [capital_of])
        events = list(agent.stream("Capital of Japan?"))
    assert type(agent) is SingleCallAgent and agent.auto_choice.constrain == "grammar"
    assert "constrained with constrain='grammar' (probed)" in agent.auto_choice.reason
    assert all("grammar" in b for b in stub.requests[5:])
    notices = [e.message for e in events if isinstance(e, Notice)]  # the probe ran before the run
    assert len(notices) == 1 and "constrain='grammar'" in notices[0]
    assert events[-1].result.output == "Tokyo"


def test_auto_agent_keeps_a_configured_spelling_and_says_when_none_works():
    with OpenAIStub(["no", "no"]) as stub:
        agent = auto_agent(model_for(stub, "json_object"), [capital_of])
        assert agent.auto_choice.constrain == "json_object" and "(configured)" in agent.auto_choice.reason
        assert len(stub.requests) == 2  # nothing probed
    with OpenAIStub(["no", "no"] + ["Waves."] * 4) as stub:
        agent = auto_agent(model_for(stub), [capital_of])
    assert agent.auto_choice.constrain is None and "no constraint spelling works" in agent.auto_choice.reason


def test_a_model_that_cannot_constrain_is_left_alone():
    agent = auto_agent(ScriptedModel(["no", "no"]), [capital_of])
    assert type(agent) is SingleCallAgent and agent.auto_choice.constrain is None
    assert "no constrain setting" in agent.auto_choice.reason


# -- the prompt: worked examples ----------------------------------------------------------------


def test_examples_sit_between_the_system_prompt_and_the_task_and_always_stay():
    examples = [{"role": "user", "content": "Task: x"}, {"role": "assistant", "content": "y" * 400}]
    memory = Memory("system", "Task: real", examples=examples)
    for i in range(20):
        memory.add_step(f"reply {i}", "observation " + "z" * 400)
    messages = memory.messages(budget_tokens=700)
    assert messages[1:3] == examples and messages[3]["content"].startswith("Task: real")
    assert memory.last_dropped > 0 and messages[-1]["content"].startswith("observation")
    with pytest.raises(ValueError, match="user / assistant turns"):
        Memory("s", "t", examples=[{"role": "assistant", "content": "x"}])


def test_unconstrained_single_call_gets_the_examples_too_and_they_can_be_switched_off():
    from codeagent.agent.formats import SingleCall

    model = ScriptedModel(['<code>final_answer("Tokyo")</code>'] * 2)
    SingleCallAgent(model, [capital_of]).run("Capital of Japan?")
    assert [m["role"] for m in model.calls[0]][:5] == ["system", "user", "assistant", "user", "assistant"]
    assert model.constraints == [None]
    CodeAgent(model, [capital_of], action_format=SingleCall(examples=False)).run("Capital of Japan?")
    assert [m["role"] for m in model.calls[1]] == ["system", "user"]


def test_scripted_model_can_stand_for_a_constraining_endpoint():
    model = ScriptedModel(['<code>capital_of(country="Japan")</code>', '<code>final_answer("Tokyo")</code>'],
                          constrain="grammar")
    assert SingleCallAgent(model, [capital_of]).run("Capital of Japan?").output == "Tokyo"
    assert all(c is not None and c.grammar for c in model.constraints)


def test_cli_run_sends_the_constraint(capsys):
    from codeagent.cli.main import main

    with OpenAIStub(["Thought: done.\n<code>\nfinal_answer(42)\n</code>"]) as stub:
        status = main(["run", "2 + 40?", "--base-url", stub.base_url, "--model", "m", "--constrain", "grammar"])
    assert status == 0 and stub.requests[0]["grammar"] == code_action_grammar(("<code>", "</code>"))
    with pytest.raises(SystemExit):
        main(["run", "x", "--constrain", "yaml"])
    assert "invalid choice: 'yaml'" in capsys.readouterr().err


def test_an_unreachable_endpoint_under_auto_is_still_a_model_error():
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=2,
                        constrain="auto")
    result = SingleCallAgent(model, [capital_of]).run("Capital of Japan?")
    assert result.status == "failed" and "cannot reach" in (result.error or "")
    assert "the probe request failed" in model.adaptations[0]
    with pytest.raises(ModelError):
        model.complete(MESSAGES, constraint=Constraint(schema=SCHEMA))
