"""The whole agent loop through the real `openai` client against a real local HTTP server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, RunResult, ScriptedModel, tool
from codeagent.agent.code_agent import LAST_STEP_NOTE, normalize_code
from codeagent.agent.memory import Memory, estimate_tokens, truncate_middle
from codeagent.events import RunEnd

CALLS: list[tuple[int, int]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _clear_calls():
    CALLS.clear()


def code(body: str, thought: str = "Thought: next step.") -> str:
    return f"{thought}\n<code>\n{body}\n</code>"


def run_against(replies, *, task="What is 2 + 40?", stub_options=None, model_options=None, **agent_options):
    """Run the agent against a stub replaying `replies`; return (result, stub)."""
    with OpenAIStub(replies, **(stub_options or {})) as stub:
        model = OpenAIModel("stub-model", base_url=stub.base_url, api_key="k", max_retries=2, **(model_options or {}))
        with CodeAgent(model, tools=[add], **agent_options) as agent:
            result = agent.run(task)
    return result, stub


def last_user_message(body: dict) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def test_success_in_one_step():
    result, stub = run_against([code("final_answer(add(2, 40))")])
    assert result.status == "success" and result.success and result.output == 42
    assert len(result.steps) == 1 and result.steps[0].is_final_answer
    assert result.steps[0].code == "final_answer(add(2, 40))" and CALLS == [(2, 40)]
    assert result.usage.total_tokens > 0 and result.usage == result.steps[0].usage
    assert result.duration_s > 0 and result.model == "stub-model" and not result.scripted
    (body,) = stub.requests
    assert "</code>" in body["stop"]
    system = body["messages"][0]
    assert system["role"] == "system" and "def add(a: int, b: int) -> int:" in system["content"]
    assert "<code>" in system["content"] and "final_answer" in system["content"] and "math" in system["content"]
    assert body["messages"][1] == {"role": "user", "content": "Task:\nWhat is 2 + 40?"}


def test_parse_error_then_recovery():
    result, stub = run_against(["The answer is 42.", code("final_answer(42)")])
    assert result.status == "success" and result.output == 42
    first = result.steps[0]
    assert first.error_kind == "parse" and first.code is None and first.observation.startswith("Error: ")
    # The parse error message is what the model sees next, after its own reply.
    second = stub.requests[1]["messages"]
    assert second[2] == {"role": "assistant", "content": "The answer is 42."}
    assert second[3]["content"].startswith("Observation:\nError: ") and "final_answer" in second[3]["content"]


def test_runtime_error_then_recovery():
    result, stub = run_against([code("x = add(2, 40)\ny = x / 0"), code("final_answer(x)")])
    assert result.status == "success" and result.output == 42
    step = result.steps[0]
    assert step.error_kind == "execution" and "ZeroDivisionError" in step.error
    observation = last_user_message(stub.requests[1])
    assert "ZeroDivisionError" in observation and "Variables assigned before the error still exist" in observation
    # the server cut the reply at </code>; the history shows it closed, in the format asked for
    assert stub.requests[1]["messages"][2]["content"] == code("x = add(2, 40)\ny = x / 0")


def test_tool_argument_error_is_an_observation():
    result, stub = run_against([code("add('forty', 2)"), code("final_answer(add(40, 2))")])
    assert result.output == 42
    observation = last_user_message(stub.requests[1])
    assert "argument 'a' must be int" in observation


def test_max_steps_with_forced_final_answer():
    replies = [code("print(1)"), code("print(2)"), code("final_answer(3)")]
    result, stub = run_against(replies, max_steps=3)
    assert result.status == "success" and result.output == 3
    assert LAST_STEP_NOTE in last_user_message(stub.requests[2])
    assert all(LAST_STEP_NOTE not in last_user_message(r) for r in stub.requests[:2])


def test_max_steps_without_final_answer_is_a_status_not_an_exception():
    result, _ = run_against([code("print(1)"), code("print(2)")], max_steps=2)
    assert result.status == "max_steps" and result.output is None
    assert result.error == "no final answer after 2 steps" and len(result.steps) == 2


def test_repeated_action_is_not_rerun():
    replies = [code("y = add(1, 1)\nprint(y)"), code("y = add(1,  1)   # same again\nprint( y )"), code("final_answer(y)")]
    result, stub = run_against(replies)
    assert result.status == "success" and result.output == 2
    assert CALLS == [(1, 1)]  # the second copy never ran
    assert result.steps[1].error_kind == "repeated_action"
    assert "same code as in step 1" in last_user_message(stub.requests[2])
    assert normalize_code("a=1 # c") == normalize_code("a = 1") != normalize_code("a = 2")


def test_what_ran_in_an_earlier_run_is_not_a_repeat():
    model = ScriptedModel([code("y = add(1, 1)"), code("final_answer(y)")] * 2)
    with CodeAgent(model, tools=[add]) as agent:
        first, second = agent.run("first"), agent.run("second")
    assert first.status == second.status == "success" and CALLS == [(1, 1), (1, 1)]
    assert [s.error_kind for s in second.steps] == [None, None]


def test_error_kinds_are_recorded_as_plain_strings():
    result, _ = run_against(["The answer is 42.", code("1 / 0"), code("final_answer(1)")])
    kinds = [s.error_kind for s in result.steps]
    assert kinds == ["parse", "execution", None] and type(kinds[0]) is str
    assert [s["error_kind"] for s in json.loads(result.to_json())["steps"]] == kinds


def test_empty_replies_are_retried_then_succeed():
    result, stub = run_against(["", "   ", code("final_answer(1)")])
    assert result.status == "success" and result.steps[0].empty_replies == 2 and len(stub.requests) == 3
    assert "Your previous reply was empty" in last_user_message(stub.requests[1])


def test_empty_replies_fail_cleanly_after_three_retries():
    result, stub = run_against(["", "", "", "", code("final_answer(1)")])
    assert result.status == "failed" and "4 empty replies" in result.error
    assert len(stub.requests) == 4 and result.steps[0].error_kind == "empty_reply"


def test_reasoning_only_reply_counts_as_empty_and_reasoning_is_recorded():
    replies = [{"text": "", "reasoning_content": "hmm"}, {"text": code("final_answer(5)"), "reasoning_content": "got it"}]
    result, _ = run_against(replies)
    assert result.output == 5 and result.steps[0].reasoning == "got it" and result.steps[0].empty_replies == 1


def test_think_text_never_reaches_the_code():
    reply = "<think>maybe final_answer(0)?</think>\n" + code("final_answer(7)")
    result, stub = run_against([reply])
    assert result.output == 7 and result.steps[0].code == "final_answer(7)"
    assert result.steps[0].reasoning == "maybe final_answer(0)?"


def test_server_error_then_retry():
    result, stub = run_against([{"status": 500}, {"status": 503}, code("final_answer(add(2, 40))")])
    assert result.status == "success" and result.output == 42 and stub.responses == [500, 503, 200]


def test_model_failure_ends_the_run_cleanly():
    result, _ = run_against([{"status": 400, "error": "context length exceeded"}])
    assert result.status == "failed" and "HTTP 400" in result.error and "context length" in result.error
    assert result.steps[0].error_kind == "model"


def test_endpoint_without_system_role_or_stop():
    replies = [code("final_answer(add(1, 2))") + "\nObservation: invented by the model"]
    result, stub = run_against(
        replies, stub_options={"system_role": False, "reject_stop": True},
        model_options={"system_role": False, "supports_stop": False},
    )
    assert result.status == "success" and result.output == 3
    body = stub.requests[0]
    assert "stop" not in body and [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"].startswith("You are an expert assistant")
    assert "invented" not in result.steps[0].model_output


def test_history_is_trimmed_to_the_budget():
    noisy = [code(f"print('{i}' * 3000)") for i in range(5)] + [code("final_answer('done')")]
    result, stub = run_against(noisy, max_context_tokens=3_000, max_observation_chars=2_000, max_steps=8)
    assert result.status == "success"
    for body in stub.requests:
        messages = body["messages"]
        assert sum(estimate_tokens(m["content"]) for m in messages) <= 3_000
        assert messages[0]["role"] == "system" and messages[1]["content"].startswith("Task:\nWhat is 2 + 40?")
    last = stub.requests[-1]["messages"]
    assert "were dropped from this conversation" in last[1]["content"]
    assert len(last) < 2 + 2 * 5  # some steps are gone...
    assert "4444" in last[-1]["content"]  # ...but the latest observation is there


def test_memory_trimming_unit():
    memory = Memory("S" * 400, "T" * 400)
    for i in range(10):
        memory.add_step(f"reply {i}", "O" * 2000)
    full = memory.messages(None)
    assert len(full) == 22 and memory.last_dropped == 0
    trimmed = memory.messages(1_000, note="last step")
    assert memory.last_dropped > 0 and trimmed[0]["content"] == "S" * 400
    assert trimmed[-1]["content"].endswith("last step")
    assert [m["role"] for m in trimmed] == ["system", "user"] + ["assistant", "user"] * ((len(trimmed) - 2) // 2)
    # a single huge observation is cut head+tail rather than dropped
    memory = Memory("S", "T")
    memory.add_step("r", "x" * 100_000)
    (*_, obs) = memory.messages(500)
    assert len(obs["content"]) < 2_000 and "characters omitted" in obs["content"]
    assert truncate_middle("abcdef", 10) == "abcdef"


def test_stream_yields_typed_events_as_ndjson():
    replies = [code("x = add(2, 40)\nprint(x)"), "no code here", code("final_answer(x)")]
    with OpenAIStub(replies) as stub:
        agent = CodeAgent(OpenAIModel("stub-model", base_url=stub.base_url, api_key="k"), tools=[add])
        events = list(agent.stream("What is 2 + 40?"))
        agent.close()
    lines = [e.to_json() for e in events]
    assert all("\n" not in line for line in lines)
    every = [json.loads(line) for line in lines]
    # the replies stream in as text deltas (the stub's chunks of 4 characters), each step's joined
    # deltas being its reply (the stop sequence cut), before its model_reply
    for step in (1, 2, 3):
        pieces = [d["text"] for d in every if d["type"] == "text_delta" and d["step"] == step]
        reply = next(d for d in every if d["type"] == "model_reply" and d["step"] == step)
        assert len(pieces) > 1 and "".join(pieces) == reply["text"]
        assert every.index(reply) > max(i for i, d in enumerate(every) if d["type"] == "text_delta" and d["step"] == step)
    decoded = [d for d in every if d["type"] != "text_delta"]
    assert [d["type"] for d in decoded] == [
        "run_start",
        "model_reply", "code_action", "observation",
        "model_reply", "error",
        "model_reply", "code_action", "observation", "final_answer",
        "run_end",
    ]
    assert len({d["run_id"] for d in decoded}) == 1
    assert decoded[0]["task"] == "What is 2 + 40?" and decoded[0]["tools"] == ["add"]
    assert decoded[3]["logs"] == "42\n" and decoded[5]["kind"] == "parse"
    assert decoded[-2]["output"] == 42 and decoded[-1]["status"] == "success" and decoded[-1]["steps"] == 3
    assert "result" not in decoded[-1]
    assert isinstance(events[-1], RunEnd) and events[-1].result.output == 42


def test_run_result_saves_loads_and_replays(tmp_path):
    replies = [code("x = add(2, 40)\nprint(x)"), code("final_answer({'sum': x, 'items': [1, 2]})")]
    result, _ = run_against(replies)
    path = result.save(tmp_path / "run.json")
    loaded = RunResult.load(path)
    assert loaded == result and loaded.output == {"sum": 42, "items": [1, 2]}
    replay_model = ScriptedModel.from_run(path)
    with CodeAgent(replay_model, tools=[add]) as agent:
        replayed = agent.run(result.task)
    assert replayed.status == "success" and replayed.output == result.output and replayed.scripted
    assert [s.code for s in replayed.steps] == [s.code for s in result.steps]
    assert [s.observation for s in replayed.steps] == [s.observation for s in result.steps]


def test_non_json_answers_travel_as_their_sandbox_repr(tmp_path):
    model = ScriptedModel([code("final_answer({1, 2})")])
    with CodeAgent(model) as agent:
        result = agent.run("a set please")
    assert result.output == {1, 2} and result.output_repr == "{1, 2}"
    saved = json.loads(result.to_json())
    assert saved["output"] is None and saved["output_repr"] == "{1, 2}"


def test_variables_and_state_between_runs():
    model = ScriptedModel([code("final_answer(n * 2)"), code("final_answer(n)")])
    with CodeAgent(model) as agent:
        assert agent.run("double n", variables={"n": 21}).output == 42
        assert "n (int)" in model.calls[0][1]["content"]
        second = agent.run("what is n?")  # a new run starts from a clean state
    assert second.status == "failed" and "ran out of replies" in second.error
    assert second.steps[0].error_kind == "execution" and "NameError" in second.steps[0].error


def test_scripted_runs_say_so_and_stop_at_the_closing_tag():
    model = ScriptedModel([code("final_answer(1)") + "\nObservation: hallucinated"])
    with CodeAgent(model) as agent:
        events = list(agent.stream("one"))
    assert events[0].scripted and events[-1].result.scripted
    assert model.stops[0][0] == "</code>"
    assert "hallucinated" not in events[-1].result.steps[0].model_output


def test_custom_executor_gets_the_tools():
    local = pytest.importorskip("executors.local")
    executor = local.LocalExecutor()
    model = ScriptedModel([code("final_answer(add(20, 22))")])
    with executor, CodeAgent(model, tools=[add], executor=executor) as agent:
        assert agent.run("sum").output == 42
        assert executor.execute("add(1, 1)").output == 2  # the agent does not close what it did not open


@pytest.mark.parametrize("place", ["local", "subprocess"])
def test_the_agent_hands_its_tools_to_any_executor(place):
    from codeagent.cli.main import make_executor

    executor = make_executor(place)
    replies = [code("add('x', 1)"), code("total = add(20, 22)\nprint(total)"), code("final_answer(total)")]
    with executor, CodeAgent(ScriptedModel(replies), tools=[add], executor=executor) as agent:
        result = agent.run("sum")
    assert result.status == "success" and result.output == 42
    assert "argument 'a' must be int" in result.steps[0].observation
    assert result.steps[1].logs == "42\n"


@settings(max_examples=60, deadline=None)
@given(
    observations=st.lists(st.text(max_size=6_000), max_size=12),
    budget=st.integers(min_value=800, max_value=6_000),
    note=st.sampled_from([None, LAST_STEP_NOTE]),
)
def test_trimmed_history_fits_the_budget_and_keeps_its_shape(observations, budget, note):
    memory = Memory("system " * 100, "Task:\n" + "do it " * 50)
    for i, obs in enumerate(observations):
        memory.add_step(code(f"print({i})"), "Observation:\n" + obs)
    messages = memory.messages(budget, note=note)
    assert sum(estimate_tokens(m["content"]) for m in messages) <= budget
    assert messages[0]["content"] == "system " * 100 and messages[1]["content"].startswith("Task:\n" + "do it " * 50)
    assert [m["role"] for m in messages[2:]] == ["assistant", "user"] * ((len(messages) - 2) // 2)
    if observations:  # the latest step is always there, whole or cut head+tail
        assert messages[-2]["content"] == code(f"print({len(observations) - 1})")
    kept = (len(messages) - 2) // 2
    assert memory.last_dropped == len(observations) - kept
    assert ("were dropped" in messages[1]["content"]) == (memory.last_dropped > 0)
    if note:
        assert messages[-1]["content"].endswith(note)


def test_observations_explain_refusals_limits_and_long_output():
    from executors import Limits

    replies = [
        code("x = 1\nx._secret"), code("y = 2\nwhile True:\n    pass"), code("print('a' * 50_000)"),
        code("final_answer(y)"),
    ]
    # no operation budget, so that the endless loop meets the deadline (not the budget) first
    with CodeAgent(ScriptedModel(replies), limits=Limits(timeout_s=0.5, max_operations=None),
                   max_observation_chars=3_000) as agent:
        result = agent.run("t")
    refused, slow, long, _ = (s.observation for s in result.steps)
    assert "PolicyError" in refused and "None of this code ran" in refused
    assert "TimeoutError" in slow and "Variables assigned before the error still exist" in slow
    assert len(long) <= 3_000 and "characters omitted" in long
    assert result.output == 2  # assigned before the timeout: still there


def test_printing_a_result_never_runs_model_code_on_the_host():
    reply = code("class Sneaky:\n    def __repr__(self):\n        return 'rendered in the sandbox'\nfinal_answer(Sneaky())")
    with CodeAgent(ScriptedModel([reply])) as agent:
        result = agent.run("t")
    assert result.output_repr == "rendered in the sandbox"
    assert "output=rendered in the sandbox" in repr(result)
    assert json.loads(result.to_json())["output"] is None

    class Boom:
        def __repr__(self):
            raise AssertionError("the host ran the answer's own __repr__")

    result.output = Boom()  # a stand-in that tells whether repr() reaches the object
    assert "output=rendered in the sandbox" in repr(result)
    assert json.loads(result.to_json())["output"] is None


def test_weak_model_habits_end_to_end():
    """Fenced code, a JSON tool call and a closing-tag-less reply all become actions."""
    replies = [
        "Let me add them.\n```python\nx = add(2, 40)\nprint(x)\n```",
        '{"name": "add", "arguments": {"a": 1, "b": 1}}',
        "Thought: done\n<code>\nfinal_answer(x)",
    ]
    result, _ = run_against(replies)
    assert result.status == "success" and result.output == 42
    assert result.steps[0].logs == "42\n" and "2" in (result.steps[1].output_repr or "")


def test_any_object_with_complete_is_a_model():
    from codeagent import ModelReply

    class EchoModel:
        model_id = "echo"

        def __init__(self):
            self.seen = []

        def complete(self, messages, stop=None):
            self.seen.append(stop)
            return ModelReply(text=code(f"final_answer({len(messages)})"))

    model = EchoModel()
    with CodeAgent(model) as agent:
        result = agent.run("count the messages")
    assert result.output == 2 and result.model == "echo" and not result.scripted
    assert model.seen == [agent.stop_sequences]
