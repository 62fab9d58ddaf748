"""Single-call mode: one literal tool call per turn, ast-checked, bundles, immediate-repeat refusal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, SingleCallAgent, tool
from codeagent.agent.code_agent import ActionRefused
from codeagent.agent.formats import SingleCall
from codeagent.agent.single_call import call_fingerprint, check_single_call
from codeagent.events import CodeAction, ErrorEvent, FinalAnswerEvent, RunEnd

CALLS: list[tuple] = []


@tool
def price(item: str) -> float:
    """Price of one item in euros."""
    CALLS.append(("price", item))
    return {"apple": 0.5, "pear": 0.75}.get(item, 1.0)


@tool
def stock(item: str, store: str = "main") -> int:
    """Units of an item in stock at a store."""
    CALLS.append(("stock", item, store))
    return 7


@tool
def order(item: str, units: int) -> str:
    """Order units of an item (not read-only)."""
    CALLS.append(("order", item, units))
    return f"ordered {units} {item}"


TOOLS = {"price": price, "stock": stock, "order": order}


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()


def c(line: str) -> str:
    return f"Thought: next.\n<code>{line}</code>"


def run(replies, **kw):
    model = ScriptedModel(replies)
    with SingleCallAgent(model, tools=[price, stock, order], **kw) as agent:
        events = list(agent.stream("What does an apple cost?"))
    result = events[-1].result
    return result, events, model


def test_one_call_per_turn_to_a_final_answer():
    result, events, model = run([c('price("apple")'), c("final_answer(0.5)")])
    assert result.status == "success" and result.output == 0.5 and len(result.steps) == 2
    assert CALLS == [("price", "apple")]
    assert "Last value: 0.5" in result.steps[0].observation
    assert [type(e).__name__ for e in events][0] == "RunStart" and isinstance(events[-1], RunEnd)
    assert any(isinstance(e, FinalAnswerEvent) for e in events)
    system = model.calls[0][0]["content"]
    # tools as call signatures: weak models copy `def` stubs instead of calling them
    assert "one call per reply" in system and "price(item: str) -> float  # Price of one item" in system
    assert "def price" not in system


@pytest.mark.parametrize(
    ("line", "lesson"),
    [
        ("x = price('apple')", "Do not assign"),
        ("for i in [1]: price('apple')", "exactly one tool call"),
        ("import math", "exactly one tool call"),
        ("cost('apple')", "`cost` is not a tool"),
        ("print(price('apple'))", "Write just price('apple')"),
        ("price(item)", "not a literal value"),
        ("price('ap' + 'ple')", "not a literal value"),
        ("price(*['apple'])", "without *"),
        ("stock(**{'item': 'apple'})", "without **"),
        ("os.system('ls')", "not a tool"),
    ],
)
def test_anything_but_one_literal_call_is_taught_not_run(line, lesson):
    with pytest.raises(ActionRefused) as info:
        check_single_call(line, TOOLS)
    assert info.value.kind == "invalid_action" and lesson in info.value.message


def test_a_refused_action_is_recovered_from_in_the_loop():
    result, events, _ = run([c("p = price('apple')"), c("price('apple')"), c("final_answer(0.5)")])
    assert result.status == "success" and CALLS == [("price", "apple")]
    assert result.steps[0].error_kind == "invalid_action" and "Do not assign" in result.steps[0].observation
    kinds = [e.kind for e in events if isinstance(e, ErrorEvent)]
    assert kinds == ["invalid_action"]


def test_several_calls_run_only_if_all_are_bundleable():
    ok = check_single_call("price('apple')\nstock('apple')", TOOLS, bundleable={"price", "stock"})
    assert [x.name for x in ok] == ["price", "stock"]
    with pytest.raises(ActionRefused, match="exactly one call per reply.*order cannot be combined"):
        check_single_call("price('apple')\norder('apple', 2)", TOOLS, bundleable={"price", "stock"})
    with pytest.raises(ActionRefused, match="Send the first call alone now: price"):
        check_single_call("price('apple')\nprice('pear')", TOOLS)


def test_a_bundle_returns_every_result_in_order():
    result, _, _ = run([c("price('apple'); price('pear')"), c("final_answer(1.25)")], bundleable=["price"])
    assert CALLS == [("price", "apple"), ("price", "pear")]
    assert result.steps[0].observation == "Last value: {\"price('apple')\": 0.5, \"price('pear')\": 0.75}"
    assert result.status == "success"


def test_bundleable_must_name_known_tools():
    with pytest.raises(ValueError, match="unknown tools: nope"):
        SingleCallAgent(ScriptedModel([]), tools=[price], bundleable=["nope"])
    with pytest.raises(ValueError, match="unknown tools: stock"):
        CodeAgent(ScriptedModel([]), tools=[price], action_format=SingleCall(bundleable=["stock"]))


def test_single_call_agent_is_a_code_agent_with_the_single_call_format():
    replies = [c("price('apple'); price('pear')"), c("price('apple'); price('pear')"), c("final_answer(1.25)")]
    runs = []
    for make in (
        lambda m: SingleCallAgent(m, tools=[price, stock], bundleable=["price"], instructions="Be brief."),
        lambda m: CodeAgent(m, tools=[price, stock], action_format=SingleCall(["price"]), instructions="Be brief."),
    ):
        model = ScriptedModel(replies)
        with make(model) as agent:
            runs.append((agent.run("Two prices?"), model.calls))
    (a, calls_a), (b, calls_b) = runs
    assert calls_a == calls_b  # the same prompts, the same conversation
    assert [s.model_dump(exclude={"duration_s", "model_duration_s", "execution_duration_s"}) for s in a.steps] == [
        s.model_dump(exclude={"duration_s", "model_duration_s", "execution_duration_s"}) for s in b.steps
    ]
    assert a.steps[1].error_kind == "repeated_action" and a.output == b.output == 1.25


def test_the_previous_call_is_forgotten_between_runs():
    model = ScriptedModel([c("price('apple')"), c("price('apple')"), c("final_answer(0.5)")])
    with SingleCallAgent(model, tools=[price], max_steps=1) as agent:
        first = agent.run("one")  # ends after its one step: price('apple') was the last call
        agent.max_steps = 2
        second = agent.run("two")
    assert first.status == "max_steps" and second.success and CALLS == [("price", "apple")] * 2


def test_the_same_call_right_after_itself_is_refused():
    # quotes and keyword spelling differ, the call is the same: refused, not run
    result, events, _ = run([
        c('stock("apple")'), c("stock(item='apple', store='main')"), c("price('apple')"),
        c('stock("apple")'), c("final_answer(7)"),
    ])
    assert CALLS == [("stock", "apple", "main"), ("price", "apple"), ("stock", "apple", "main")]
    assert result.steps[1].error_kind == "repeated_action"
    assert "try something different" in result.steps[1].observation.lower()
    assert result.status == "success"
    assert [e.code for e in events if isinstance(e, CodeAction)][1] == "stock(item='apple', store='main')"


def test_fingerprint_normalizes_quotes_and_keywords():
    (a,) = check_single_call('stock("apple", "main")', TOOLS)
    (b,) = check_single_call("stock(store='main', item='apple')", TOOLS)
    (d,) = check_single_call("stock('apple', 'side')", TOOLS)
    assert call_fingerprint(a, TOOLS) == call_fingerprint(b, TOOLS) != call_fingerprint(d, TOOLS)


def test_max_steps_ends_cleanly_when_the_model_never_answers():
    result, _, _ = run([c("x = 1")] * 3, max_steps=3)
    assert result.status == "max_steps" and "no final answer" in result.error


def test_prose_and_fences_go_through_the_parser_first():
    result, _, _ = run(["```python\nprice('apple')\n```", "The answer is 0.5", "Let me think about which of the fruit prices matter here first."], max_steps=3)
    assert CALLS == [("price", "apple")]
    assert result.steps[1].error_kind == "parse" and result.status == "max_steps"
    # the lesson is this mode's: one call, and the final_answer call the prose suggests
    lesson = result.steps[1].observation
    assert "one line: a single call of one tool, like <code>price(item=...)</code>" in lesson
    assert "reply <code>final_answer(0.5)</code>" in lesson and "print(result)" not in lesson
    assert 'final_answer("your answer")' in result.steps[2].observation


def test_near_misses_get_the_corrected_call():
    with pytest.raises(ActionRefused, match=r"`pric` is not a tool you can call. Did you mean price\(item=\.\.\.\)"):
        check_single_call("pric('apple')", TOOLS)
    # SmolLM2-135M writes the signature's colon into the call; the lesson hands back the fixed line
    result, _, _ = run(['<code>pric(item: "apple")', "<code>price(item='apple')</code>", "final_answer(0.5)"])
    assert "keyword arguments take =, not :. Reply exactly: <code>price(item=\"apple\")</code>" in (
        result.steps[0].observation.replace("'", '"')
    )
    assert result.status == "success"


def test_a_pasted_tool_definition_is_taught():
    with pytest.raises(ActionRefused, match=r"Do not define functions.*like price\(item=\.\.\.\)"):
        check_single_call("def price(item):\n    return 1", TOOLS)


def test_through_the_real_openai_client():
    with OpenAIStub([c("stock('pear')"), "final_answer(7)"]) as stub:
        model = OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0)
        with SingleCallAgent(model, tools=[stock]) as agent:
            result = agent.run("How many pears?")
    assert result.status == "success" and result.output == 7 and len(stub.requests) == 2
    assert "</code>" in stub.requests[0]["stop"]


def _double_quoted(value: str) -> str:
    import json

    return json.dumps(value)  # a valid Python literal for any str, spelled with double quotes


@settings(max_examples=60, deadline=None)
@given(item=st.text(max_size=20), store=st.text(max_size=20), other=st.text(max_size=20))
def test_fingerprint_property_spelling_never_matters_values_always_do(item, store, other):
    (single,) = check_single_call(f"stock({item!r}, {store!r})", TOOLS)
    (double,) = check_single_call(f"stock(store={_double_quoted(store)}, item={_double_quoted(item)})", TOOLS)
    assert call_fingerprint(single, TOOLS) == call_fingerprint(double, TOOLS)
    (changed,) = check_single_call(f"stock({item!r}, {other!r})", TOOLS)
    assert (call_fingerprint(changed, TOOLS) == call_fingerprint(single, TOOLS)) == (other == store)


def test_the_last_step_note_asks_for_one_call_not_a_code_block():
    """A single-call model is told on its last step to make final_answer its one call (the
    CodeAgent's note speaks of a code block, a format this model was never shown)."""
    with OpenAIStub(["print(1)", "print(2)", "final_answer(3)"]) as stub:
        model = OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0)
        with SingleCallAgent(model, max_steps=3) as agent:
            result = agent.run("Count.")
    assert result.status == "success" and result.output == 3 and len(stub.requests) == 3
    note = SingleCallAgent.last_step_note
    assert "code block" not in note and "one call" in note
    assert note in stub.requests[2]["messages"][-1]["content"]
    assert all(note not in r["messages"][-1]["content"] for r in stub.requests[:2])
