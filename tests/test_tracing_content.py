"""What spans say about content and model requests: nothing of the conversation unless the user opts
in, in the conventions' shape in force, truncated; never a secret; `chat` spans of a real HTTP
model (request settings, usage, errors, retries, empty replies)."""

from __future__ import annotations

import json

import pytest
from openai_stub import OpenAIStub
from tracing_support import Tree, global_provider, spans  # noqa: F401  (the fixture)

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, tool
from codeagent.tracing import configure
from codeagent.tracing.content import CAPTURE_ENV, MAX_CHARS_ENV, OPT_IN_ENV

SECRET_KEY = "sk-test-" + "9" * 32
PASSWORD = "hunter2-very-secret"


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


@pytest.fixture(autouse=True)
def _environment(monkeypatch):
    for name in (CAPTURE_ENV, OPT_IN_ENV, MAX_CHARS_ENV):
        monkeypatch.delenv(name, raising=False)
    yield
    configure()  # back to the environment's settings


def test_no_content_by_default(spans):  # noqa: F811
    agent = CodeAgent(ScriptedModel([code("x = echo('PLUMBUS')\nprint(x)\n1 / 0"), code("final_answer(x)")]),
                      tools=[echo])
    assert agent.run("say the word PLUMBUS").output == "PLUMBUS"
    tree = Tree(spans.get_finished_spans())
    assert not any("PLUMBUS" in v for v in tree.values()), tree.values()
    assert not any(e.name.startswith("gen_ai.") for s in tree.all for e in s.events)
    failed = tree.named("execute_code")[0]
    assert failed.status.description == "ZeroDivisionError"  # the type, not the message


def test_latest_shape_records_messages_code_and_tool_content_as_json(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(OPT_IN_ENV, "http,gen_ai_latest_experimental")
    monkeypatch.setenv(CAPTURE_ENV, "SPAN_ONLY")
    agent = CodeAgent(ScriptedModel([code("x = echo('PLUMBUS')\nfinal_answer(x)")]), tools=[echo])
    assert agent.run("say the word PLUMBUS").output == "PLUMBUS"
    tree = Tree(spans.get_finished_spans())
    run = tree.one("invoke_agent CodeAgent")
    assert run.attributes["gen_ai.provider.name"] == "codeagent.scripted" and "gen_ai.system" not in run.attributes
    assert run.attributes["codeagent.final_answer"] == "'PLUMBUS'"
    assert json.loads(run.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == "say the word PLUMBUS"
    chat = tree.one("chat scripted")
    system = json.loads(chat.attributes["gen_ai.system_instructions"])
    assert system[0]["type"] == "text" and "final_answer" in system[0]["content"]
    messages = json.loads(chat.attributes["gen_ai.input.messages"])
    assert messages[-1]["role"] == "user" and "PLUMBUS" in messages[-1]["parts"][0]["content"]
    (output,) = json.loads(chat.attributes["gen_ai.output.messages"])
    assert output["role"] == "assistant" and "echo('PLUMBUS')" in output["parts"][0]["content"]
    executed = tree.one("execute_code")
    assert executed.attributes["codeagent.code"] == "x = echo('PLUMBUS')\nfinal_answer(x)"
    call = tree.one("execute_tool echo")
    assert json.loads(call.attributes["gen_ai.tool.call.arguments"]) == {"text": "PLUMBUS"}
    assert call.attributes["gen_ai.tool.call.result"] == "PLUMBUS"


def test_old_shape_records_content_as_span_events(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(CAPTURE_ENV, "true")
    agent = CodeAgent(ScriptedModel([code("final_answer(echo('PLUMBUS'))")]), tools=[echo])
    assert agent.run("say the word PLUMBUS").output == "PLUMBUS"
    tree = Tree(spans.get_finished_spans())
    chat = tree.one("chat scripted")
    names = [e.name for e in chat.events]
    assert names[0] == "gen_ai.system.message" and "gen_ai.user.message" in names and names[-1] == "gen_ai.choice"
    assert all(e.attributes["gen_ai.system"] == "codeagent.scripted" for e in chat.events)
    assert "gen_ai.input.messages" not in chat.attributes
    run = tree.one("invoke_agent CodeAgent")
    assert [e.name for e in run.events] == ["gen_ai.user.message", "gen_ai.choice"]


def test_captured_content_is_cut_to_the_limit(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(CAPTURE_ENV, "true")
    monkeypatch.setenv(MAX_CHARS_ENV, "300")
    long_text = "A" * 5000
    agent = CodeAgent(ScriptedModel([code(f"final_answer(echo('{long_text}'))")]), tools=[echo])
    assert agent.run("repeat " + long_text).output == long_text
    tree = Tree(spans.get_finished_spans())
    for value in tree.values(skip=("codeagent.isolation",)):  # (what isolates the code is not content)
        assert len(value) <= 400, value[:80]
    assert "characters omitted" in tree.one("execute_tool echo").attributes["gen_ai.tool.call.result"]


def test_configure_overrides_the_environment(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(CAPTURE_ENV, "true")
    configure(capture_content=False)
    CodeAgent(ScriptedModel([code("final_answer(echo('PLUMBUS'))")]), tools=[echo]).run("PLUMBUS")
    assert not any("PLUMBUS" in v for v in Tree(spans.get_finished_spans()).values())
    with pytest.raises(ValueError, match="max_chars"):
        configure(max_chars=5)


def test_tool_arguments_that_are_not_plain_data_are_named_not_rendered(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(CAPTURE_ENV, "true")

    class Opaque:
        def __repr__(self) -> str:  # a host object whose repr must not be what the span shows
            raise AssertionError("repr ran")

    @tool(name="take")
    def take(value: object) -> object:
        """Take anything."""
        return Opaque()

    assert type(take(Opaque())) is Opaque
    call = Tree(spans.get_finished_spans()).one("execute_tool take")
    assert json.loads(call.attributes["gen_ai.tool.call.arguments"]) == {"value": "<Opaque object>"}
    assert call.attributes["gen_ai.tool.call.result"] == "<Opaque object>"


def test_chat_spans_of_an_http_model_carry_settings_usage_and_no_secret(spans, monkeypatch):  # noqa: F811
    monkeypatch.setenv(CAPTURE_ENV, "true")  # even with content on, no key and no password
    replies = [{"text": code("final_answer(42)"), "usage": {"prompt_tokens": 120, "completion_tokens": 7}}]
    with OpenAIStub(replies) as stub:
        port = int(stub.base_url.rsplit(":", 1)[1].split("/")[0])
        base = stub.base_url.replace("http://", f"http://user:{PASSWORD}@")
        model = OpenAIModel("qwen-test", base_url=base, api_key=SECRET_KEY,
                            request_options={"temperature": 0.2, "max_tokens": 256, "extra_headers": {"X": SECRET_KEY}})
        assert CodeAgent(model).run("answer").output == 42
    tree = Tree(spans.get_finished_spans())
    chat = tree.one("chat qwen-test")
    a = dict(chat.attributes)
    assert chat.kind.name == "CLIENT" and a["gen_ai.system"] == "openai" and a["gen_ai.request.model"] == "qwen-test"
    assert a["server.address"] == "127.0.0.1" and a["server.port"] == port
    assert a["gen_ai.request.temperature"] == 0.2 and a["gen_ai.request.max_tokens"] == 256
    assert a["gen_ai.usage.input_tokens"] == 120 and a["gen_ai.usage.output_tokens"] == 7
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    values = tree.values()
    assert not any(SECRET_KEY in v or PASSWORD in v for v in values)


def test_a_failing_endpoint_sets_the_status_code_as_error_type(spans):  # noqa: F811
    with OpenAIStub([{"status": 404, "error": "no such model"}]) as stub:
        model = OpenAIModel("missing", base_url=stub.base_url, max_retries=0)
        result = CodeAgent(model).run("answer")
    assert result.status == "failed"
    tree = Tree(spans.get_finished_spans())
    chat = tree.one("chat missing")
    assert chat.status.status_code.name == "ERROR" and chat.attributes["error.type"] == "404"
    run = tree.one("invoke_agent CodeAgent")
    assert run.status.status_code.name == "ERROR" and run.attributes["error.type"] == "model"


def test_empty_replies_and_endpoint_retries_are_events(spans):  # noqa: F811
    with OpenAIStub(["", code("final_answer(1)")], reject_stop=True) as stub:
        model = OpenAIModel("weak", base_url=stub.base_url, max_retries=0)
        assert CodeAgent(model).run("answer").output == 1
    tree = Tree(spans.get_finished_spans())
    first, second = tree.named("chat weak")
    assert [e.name for e in first.events] == ["codeagent.empty_reply", "codeagent.retry"]
    assert "stop" in first.events[1].attributes["codeagent.reason"]
    assert first.attributes["codeagent.attempt"] == 1 and second.attributes["codeagent.attempt"] == 2
    assert tree.parent(first) is tree.parent(second)  # both requests of the same step


@pytest.fixture
def metrics_reader():
    from opentelemetry import metrics
    from opentelemetry.metrics import _internal
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    with global_provider(_internal, "_METER_PROVIDER", metrics.set_meter_provider, MeterProvider(metric_readers=[reader])):
        yield reader


def test_token_and_duration_histograms_of_the_conventions(spans, metrics_reader):  # noqa: F811
    replies = [{"text": code("final_answer(1)"), "usage": {"prompt_tokens": 120, "completion_tokens": 7}}]
    with OpenAIStub(replies) as stub:
        assert CodeAgent(OpenAIModel("m", base_url=stub.base_url)).run("answer").output == 1
    found = {m.name: m for rm in metrics_reader.get_metrics_data().resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics}
    tokens = {p.attributes["gen_ai.token.type"]: p for p in found["gen_ai.client.token.usage"].data.data_points}
    assert tokens["input"].sum == 120 and tokens["output"].sum == 7
    assert tokens["input"].attributes["gen_ai.request.model"] == "m"
    assert found["gen_ai.client.token.usage"].unit == "{token}"
    (duration,) = found["gen_ai.client.operation.duration"].data.data_points
    assert duration.count == 1 and duration.sum > 0 and duration.attributes["gen_ai.operation.name"] == "chat"
