"""Traces of agent runs (codeagent.tracing): the span tree of a scripted run in each agent mode and
each executor, read back from the SDK's in-memory exporter.

The scripted run: a first step whose action is refused, a second whose code calls three tools (one
fails) and gives the final answer. Names, parents, kinds, attributes and statuses are checked;
with no provider, nothing is imported or recorded at all.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import executors_under_test
from tracing_support import Tree, spans  # noqa: F401  (the fixture)

from codeagent import CodeAgent, ScriptedModel, SingleCallAgent, ToolCallingAgent, tool
from codeagent.batch.testing import add, boom  # add(a, b); boom(message) raises RuntimeError
from codeagent.models.replies import ModelReply, ToolCall

make_executor = executors_under_test.make_executor  # the fixture: every place code can run
ROOT = Path(__file__).resolve().parents[1]


SECOND_STEP = ("a = add(1, 2)\nb = add(a, 4)\ntry:\n    boom('no luck')\nexcept Exception as e:\n"
               "    print('caught', e)\nfinal_answer(a + b)")


def code(body: str) -> str:
    return f"Thought: go.\n<code>\n{body}\n</code>"


def attrs(span) -> dict:
    return dict(span.attributes)


def status(span) -> str:
    return span.status.status_code.name


def check_tools(tree: Tree, parent, failing_type: str = "RuntimeError") -> list:
    tools = tree.children(parent)
    assert [t.name for t in tools] == ["execute_tool add", "execute_tool add", "execute_tool boom"], tree.outline()
    for t in tools:
        assert t.kind.name == "INTERNAL"
        assert attrs(t)["gen_ai.operation.name"] == "execute_tool" and attrs(t)["gen_ai.tool.type"] == "function"
        assert attrs(t)["gen_ai.tool.name"] == t.name.split()[-1]
    assert [status(t) for t in tools] == ["UNSET", "UNSET", "ERROR"]
    assert attrs(tools[2])["error.type"] == failing_type
    return tools


def check_run(tree: Tree, agent: str, mode: str, steps: int):
    run = tree.one(f"invoke_agent {agent}")
    assert run.parent is None and run.kind.name == "INTERNAL" and status(run) == "UNSET", tree.outline()
    a = attrs(run)
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == agent
    assert a["codeagent.mode"] == mode and a["codeagent.status"] == "success" and a["codeagent.steps"] == steps
    assert a["gen_ai.request.model"] == "scripted" and a["gen_ai.system"] == "codeagent.scripted"
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    kids = tree.children(run)
    assert [k.name for k in kids] == [f"step {n}" for n in range(1, steps + 1)], tree.outline()
    for step in kids:
        chats = tree.children(step, "chat scripted")
        assert len(chats) == 1 and attrs(chats[0])["gen_ai.operation.name"] == "chat"
        assert chats[0].kind.name == "INTERNAL"  # a scripted model runs in process
        assert attrs(chats[0])["gen_ai.usage.input_tokens"] > 0
    return run, kids


def refused_code(executor) -> tuple[str, str, str | None]:
    """An action refused before it runs: (code, the step's error kind, the execution's error type).
    The restricted policy refuses it in the executor; under the open policy the agent refuses code
    that does not parse (no execution at all)."""
    if getattr(executor, "policy", "restricted") == "restricted":
        return "().__class__.__bases__", "execution", "PolicyError"
    return "x = (1 +", "parse", None


def test_code_agent_span_tree_in_every_executor(spans, make_executor):  # noqa: F811
    executor = make_executor()
    refused, step_error, refusal_type = refused_code(executor)
    model = ScriptedModel([code(refused), code(SECOND_STEP)])
    result = CodeAgent(model, tools=[add, boom], executor=executor).run("add things")
    assert result.status == "success" and result.output == 10, result
    tree = Tree(spans.get_finished_spans())
    run, (first, second) = check_run(tree, "CodeAgent", "code", 2)
    assert attrs(run)["codeagent.executor"] == type(executor).__name__
    assert status(first) == "ERROR" and attrs(first)["error.type"] == step_error
    executions = tree.children(first, "execute_code")
    assert [attrs(e)["error.type"] for e in executions] == ([refusal_type] if refusal_type else [])
    assert all(status(e) == "ERROR" and not tree.children(e) for e in executions)
    assert status(second) == "UNSET" and attrs(second)["codeagent.final_answer"] is True
    (ran,) = tree.children(second, "execute_code")
    a = attrs(ran)
    assert a["codeagent.executor"] == type(executor).__name__ and a["codeagent.final_answer"] is True
    assert a["codeagent.policy"] in ("restricted", "open") and a["codeagent.isolation"]
    assert a["codeagent.attachments"] == 0 and a["codeagent.execution.duration_s"] > 0
    assert status(ran) == "UNSET"
    check_tools(tree, ran)
    # nothing else: no stray spans, and content stays out unless asked for
    assert len(tree.all) == 1 + 2 + 2 + len(executions) + 1 + 3
    assert "codeagent.code" not in a and "codeagent.task" not in attrs(run)


def test_single_call_agent_span_tree_in_every_executor(spans, make_executor):  # noqa: F811
    model = ScriptedModel([code("x = 1"), code("add(1, 2)\nadd(3, 4)\nboom('no luck')"), code("final_answer(10)")])
    agent = SingleCallAgent(model, tools=[add, boom], executor=make_executor(), bundleable=["add", "boom"])
    result = agent.run("add things")
    assert result.status == "success" and result.output == 10, result
    tree = Tree(spans.get_finished_spans())
    run, (first, second, third) = check_run(tree, "SingleCallAgent", "single_call", 3)
    assert attrs(run)["codeagent.action_format"] == "SingleCall"
    assert attrs(first)["error.type"] == "invalid_action" and not tree.children(first, "execute_code")
    (bundle,) = tree.children(second, "execute_code")
    assert status(bundle) == "ERROR" and attrs(bundle)["error.type"] == "ToolError"
    assert attrs(second)["error.type"] == "execution"
    check_tools(tree, bundle)
    (answer,) = tree.children(third, "execute_code")
    assert status(answer) == "UNSET" and status(third) == "UNSET"


def test_tool_calling_agent_span_tree(spans):  # noqa: F811
    calls = (ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
             ToolCall(id="c2", name="add", arguments={"a": 3, "b": 4}),
             ToolCall(id="c3", name="boom", arguments={"message": "no luck"}),
             ToolCall(id="c4", name="final_answer", arguments={"answer": 10}))
    model = ScriptedModel([ModelReply(text="Let me think about it."), ModelReply(text="", tool_calls=calls)])
    result = ToolCallingAgent(model, tools=[add, boom]).run("add things")
    assert result.status == "success" and result.output == 10, result
    tree = Tree(spans.get_finished_spans())
    run, (first, second) = check_run(tree, "ToolCallingAgent", "tool_calling", 2)
    assert attrs(run)["codeagent.action_format"] == "tool_calls"
    assert attrs(first)["error.type"] == "parse" and len(tree.children(first)) == 1  # its chat only
    assert status(second) == "ERROR" and attrs(second)["error.type"] == "tool"  # one call failed
    tools = tree.children(second, None)[1:]  # after its chat
    assert sorted(attrs(t)["gen_ai.tool.call.id"] for t in tools) == ["c1", "c2", "c3"]
    by_id = {attrs(t)["gen_ai.tool.call.id"]: t for t in tools}
    assert status(by_id["c3"]) == "ERROR" and attrs(by_id["c3"])["error.type"] == "RuntimeError"
    assert status(by_id["c1"]) == status(by_id["c2"]) == "UNSET"


def test_parallel_tool_calls_nest_under_their_own_step(spans):  # noqa: F811
    barrier = threading.Barrier(3, timeout=20)  # the three calls of a step must run at once

    @tool
    def meet(n: int) -> int:
        """Wait for the other calls of this step."""
        barrier.wait()
        return n

    def turn(step: int) -> ModelReply:
        return ModelReply(text="", tool_calls=tuple(
            ToolCall(id=f"s{step}-{i}", name="meet", arguments={"n": i}) for i in range(3)))

    final = ModelReply(text="", tool_calls=(ToolCall(id="end", name="final_answer", arguments={"answer": "ok"}),))
    result = ToolCallingAgent(ScriptedModel([turn(1), turn(2), final]), tools=[meet], max_parallel=3).run("meet")
    assert result.status == "success", result
    tree = Tree(spans.get_finished_spans())
    steps = tree.children(tree.one("invoke_agent ToolCallingAgent"))
    for number, step in enumerate(steps[:2], 1):
        tools = tree.children(step, "execute_tool meet")
        assert sorted(attrs(t)["gen_ai.tool.call.id"] for t in tools) == [f"s{number}-{i}" for i in range(3)]
        assert all(status(t) == "UNSET" for t in tools)
        # they overlapped: each started before any of them ended
        assert max(t.start_time for t in tools) < min(t.end_time for t in tools)


def test_no_provider_means_no_opentelemetry_import_and_no_spans():
    """Tracing off costs an import of nothing: a run with no provider never loads OpenTelemetry."""
    program = (
        "import sys\n"
        "from codeagent import CodeAgent, ScriptedModel, tool\n"
        "@tool\ndef add(a: int, b: int) -> int:\n    'Add.'\n    return a + b\n"
        "r = CodeAgent(ScriptedModel(['<code>final_answer(add(1, 2))</code>']), tools=[add]).run('t')\n"
        "assert r.output == 3, r\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_api_loaded_without_a_provider_records_nothing():
    from opentelemetry import trace

    from codeagent.tracing.otel import tracer

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert tracer() is None
    result = CodeAgent(ScriptedModel([code("final_answer(add(1, 2))")]), tools=[add]).run("t")
    assert result.output == 3


def test_a_dropped_stream_ends_its_spans(spans):  # noqa: F811
    agent = CodeAgent(ScriptedModel([code("x = add(1, 2)"), code("final_answer(x)")]), tools=[add])
    events = agent.stream("t")
    for event in events:
        if event.type == "observation":
            break
    events.close()
    tree = Tree(spans.get_finished_spans())
    run = tree.one("invoke_agent CodeAgent")
    assert status(run) == "ERROR" and attrs(run)["error.type"] == "cancelled"
    assert [s.name for s in tree.children(run)] == ["step 1"]


def test_operations_used_reach_the_execute_code_span(spans):  # noqa: F811
    from executors import Limits, LocalExecutor

    with LocalExecutor(limits=Limits(max_operations=10_000)) as executor:  # (a budget: counted)
        agent = CodeAgent(ScriptedModel([code("t = 0\nfor i in range(50):\n    t += i\nfinal_answer(t)")]),
                          executor=executor)
        assert agent.run("t").output == 1225
    ran = Tree(spans.get_finished_spans()).one("execute_code")
    assert attrs(ran)["codeagent.execution.operations"] >= 50


def test_execution_result_counts_operations_in_every_executor(make_executor):
    """ExecutionResult.operations: the restricted budget used, over the wire too; None when open,
    and None without a budget (loops then run unmetered: nothing counts them)."""
    from executors import Limits

    executor = make_executor(limits=Limits(max_operations=10_000))
    result = executor.execute("t = 0\nfor i in range(50):\n    t += i\nt")
    assert result.output == 1225
    if getattr(executor, "policy", "restricted") == "restricted":
        assert isinstance(result.operations, int) and result.operations >= 50
    else:
        assert result.operations is None
    unbudgeted = make_executor()
    assert unbudgeted.execute("t = 0\nfor i in range(50):\n    t += i\nt").operations is None
