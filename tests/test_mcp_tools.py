"""MCPTools: the tools of real MCP servers (a published one from PyPI, and one the tests write) as
codeagent Tools, called from model code in every executor, and how each failure reads."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from unavailable import IN_CI

from codeagent import CodeAgent, ScriptedModel, SingleCallAgent, ToolCallingAgent, tool
from codeagent.agent.tool_calling import tool_schema
from codeagent.mcp import MCPStartError, MCPTools
from codeagent.mcp.schema import python_name, signature_of
from codeagent.models.constrain.schemas import arguments_schema
from codeagent.models.replies import ModelReply, ToolCall
from codeagent.tools.tool import ToolArgumentError, ToolTimeoutError
from executors.base import ToolError

if importlib.util.find_spec("mcp") is None and not IN_CI:  # bootstrap.sh installs the mcp extra; CI must have it
    pytest.skip("the mcp package is not installed: scripts/bootstrap.sh installs it", allow_module_level=True)
pytestmark = pytest.mark.timeout(120)

import executors_under_test  # noqa: E402

make_executor = executors_under_test.make_executor

TOY = str(Path(__file__).parent / "mcp_servers" / "toy_server.py")
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"]}


def toy(*extra: str) -> dict:
    return {"command": sys.executable, "args": [TOY, *extra]}


@tool
def double(x: int) -> int:
    """Double an integer."""
    return 2 * x


@pytest.fixture(scope="module")
def servers():
    """The toy server and the published time server, one session each for the whole module."""
    with MCPTools(servers=[toy(), TIME], timeout_s=20) as toolset:
        yield toolset


def by_name(toolset: MCPTools) -> dict:
    return {t.name: t for t in toolset.tools}


def reply(code: str) -> str:
    return f"Thought: call them.\n<code>\n{code}\n</code>"


# -- the published server ----------------------------------------------------------------------


def test_a_published_server_from_pypi_gives_typed_tools(servers):
    tools = by_name(servers)
    now = tools["get_current_time"]
    assert now.signature_text() == "get_current_time(timezone: str) -> dict[str, Any]"
    assert "IANA timezone name" in now.render() and "Returns a dict with keys: timezone (string)" in now.render()
    answer = now("Asia/Tokyo")
    assert answer["timezone"] == "Asia/Tokyo" and answer["datetime"].endswith("+09:00")
    with pytest.raises(ToolError, match="get_current_time\\(\\) failed on the MCP server: .*Mars/Olympus"):
        now(timezone="Mars/Olympus")
    with pytest.raises(ToolArgumentError, match="argument 'timezone' must be str, got int 3"):
        now(timezone=3)
    with pytest.raises(ToolArgumentError, match="missing a required argument: 'timezone'"):
        now()


# -- one step, two MCP tools and a local one, in every executor ----------------------------------


def test_a_code_action_calls_two_mcp_tools_and_a_local_tool_in_one_step(servers, make_executor):
    executor = make_executor()
    code = ("s = add(2, 3)\nnow = get_current_time('Etc/UTC')\nw = word_count('a bb ccc', min_length=2)\n"
            "final_answer([double(s), now['timezone'], w])")
    agent = CodeAgent(ScriptedModel([reply(code)]), tools=[*servers.tools, double], executor=executor)
    result = agent.run("Add, then tell the time zone.")
    assert result.success, result.error
    assert result.output == [10, "Etc/UTC", {"words": 2, "characters": 8}]
    assert len(result.steps) == 1


def test_image_blocks_reach_a_vision_model_as_figures(servers, make_executor, tmp_path):
    model = ScriptedModel([reply("c = chart('sales')\nprint(c)"), reply("final_answer('seen')")], vision=True)
    agent = CodeAgent(model, tools=servers.tools, executor=make_executor(), output_dir=tmp_path)
    result = agent.run("Draw the chart.")
    assert result.success and result.steps[0].logs.startswith("chart of sales\n[1 image from chart")
    (figure,) = result.steps[0].attachments
    assert (figure.media_type, figure.width, figure.height) == ("image/png", 32, 16)
    second_call = model.calls[1]
    images = [p for m in second_call for p in (m["content"] if isinstance(m["content"], list) else [])
              if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_tool_calling_agent_gets_text_and_images(servers):
    calls = [ToolCall(id="c1", name="chart", arguments={"title": "q3"})]
    answer = [ToolCall(id="c2", name="final_answer", arguments={"answer": "drawn"})]
    model = ScriptedModel([ModelReply(text="", tool_calls=tuple(calls)), ModelReply(text="", tool_calls=tuple(answer))])
    result = ToolCallingAgent(model, tools=servers.tools).run("chart q3")
    assert result.success and result.output == "drawn"
    assert len(result.steps[0].attachments) == 1
    tool_message = next(m for m in model.calls[1] if m["role"] == "tool")
    assert "chart of q3" in tool_message["content"] and "chart image 1: 32×16 PNG" in tool_message["content"]


def test_single_call_agent_calls_an_mcp_tool(servers):
    model = ScriptedModel(["add(a=20, b=22)", "final_answer(42)"])
    result = SingleCallAgent(model, tools=servers.tools).run("Add 20 and 22.")
    assert result.success and result.output == 42 and "42" in result.steps[0].observation


def test_a_tool_with_its_own_timeout_still_hands_images_to_the_step():
    from codeagent.tools.tool import attach
    from executors.base import Attachment

    @tool(timeout_s=5)
    def picture() -> str:
        """Draw (on a thread of its own: it has a timeout)."""
        attach(Attachment("image/png", b"\x89PNG fake", "pic"))
        return "drawn"

    result = CodeAgent(ScriptedModel([reply("final_answer(picture())")]), tools=[picture]).run("draw")
    assert result.success and [a.name for a in result.steps[0].attachments] == ["pic"]


# -- schemas ------------------------------------------------------------------------------------


def test_an_input_schema_becomes_a_signature_pydantic_checks():
    schema = {"type": "object", "required": ["user-id", "mode"], "properties": {
        "user-id": {"type": "integer", "description": "who"},
        "mode": {"enum": ["fast", "slow"]},
        "from": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "filter": {"type": "object", "properties": {"x": {"type": "number"}}},
    }}
    params = signature_of(schema)
    annotations = {name: (p.annotation, p.default) for name, p in params.signature.parameters.items()}
    assert annotations == {"user_id": (int, inspect.Parameter.empty), "mode": (Literal["fast", "slow"], inspect.Parameter.empty),
                           "from_": (str | None, None), "tags": (list[str], []), "filter": (dict[str, Any] | None, None)}
    assert params.wire == {"user_id": "user-id", "mode": "mode", "from_": "from", "tags": "tags", "filter": "filter"}
    assert python_name("get-weather") == "get_weather" and python_name("final_answer") == "final_answer_"
    assert python_name("2fa") == "x2fa" and python_name("a", taken={"a"}) == "a_2"


def test_mcp_schemas_reach_constrained_decoding_and_function_calling(servers):
    count = by_name(servers)["word_count"]
    closed = arguments_schema(count)
    assert closed["required"] == ["text"] and closed["properties"]["text"] == {"type": "string"}
    assert tool_schema(count)["function"]["parameters"]["properties"]["min_length"] == {"type": "integer"}
    with pytest.raises(ToolArgumentError, match="word_count\\(\\) argument 'min_length' must be int"):
        count("a b", min_length="many")


def test_name_clashes_between_servers_get_the_server_as_prefix():
    with MCPTools(servers=[toy("--name", "north"), toy("--name", "south")]) as toolset:
        tools = by_name(toolset)
        assert {"north_add", "south_add", "north_word_count"} <= set(tools)
        assert tools["north_add"](1, 2) == 3 and tools["south_add"](b=2, a=2) == 4


# -- results and failures -----------------------------------------------------------------------


def test_a_tool_error_carries_the_servers_message(servers, make_executor):
    executor = make_executor(tools={"lookup": by_name(servers)["lookup"]})
    with executor:
        result = executor.execute("lookup('Atlantis')")
    assert result.error is not None and result.error.type == "ToolError"
    assert "lookup() failed on the MCP server" in result.error.message and "no such city: Atlantis" in result.error.message


def test_text_blocks_are_joined_and_structured_content_is_the_value(servers):
    tools = by_name(servers)
    assert tools["shout"]("hi") == "HI\n!"
    assert tools["add"](2, 3) == 5  # {"result": 5} unwrapped
    assert tools["word_count"]("one two") == {"words": 2, "characters": 7}
    assert tools["chart"]("x") == "chart of x\n[1 image from chart shown beside this result]"  # no step: no figures


def test_a_hanging_tool_times_out_and_the_server_keeps_serving(servers):
    hang, add = by_name(servers)["hang"], by_name(servers)["add"]
    servers.timeout_s = 1.0
    try:
        t0 = time.monotonic()
        with pytest.raises(ToolTimeoutError, match="hang\\(\\) did not return within its 1 s timeout"):
            hang()
        assert time.monotonic() - t0 < 10
    finally:
        servers.timeout_s = 20
    assert add(1, 1) == 2


def test_a_dead_server_is_one_clear_error_then_a_restart():
    with MCPTools(**toy(), timeout_s=10) as toolset:
        tools = by_name(toolset)
        first = tools["pid"]()
        with pytest.raises(ToolError, match="the MCP server .* stopped .*restarted at the next call"):
            tools["die"]()
        second = tools["pid"]()
        assert second != first and tools["add"](2, 2) == 4


def test_a_server_that_exits_at_start_says_why():
    t0 = time.monotonic()
    with pytest.raises(MCPStartError, match="(?s)closed the connection while starting.*missing configuration file toy.toml"):
        MCPTools(**toy("--exit-at-start")).open()
    assert time.monotonic() - t0 < 20


def test_a_server_that_never_answers_is_cut_at_the_start_timeout():
    t0 = time.monotonic()
    with pytest.raises(MCPStartError, match="(?s)did not answer within 1.5 s.*waiting forever"):
        MCPTools(**toy("--mute"), start_timeout_s=1.5).open()
    assert time.monotonic() - t0 < 15


def test_a_missing_command_is_a_start_error():
    with pytest.raises(MCPStartError, match="'no-such-mcp-server' was not found"):
        MCPTools(command="no-such-mcp-server").open()


@pytest.fixture
def toy_over_http():
    proc = subprocess.Popen([sys.executable, TOY, "--http"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()


def test_a_ten_megabyte_result_over_http_is_cut_with_a_note(toy_over_http):
    with MCPTools(url=toy_over_http, headers={"X-Test": "1"}, max_result_chars=50_000) as toolset:
        text = by_name(toolset)["big"](megabytes=10)
    assert text.startswith("[the result of big() was 10,000,000 characters, over the 50,000 kept")
    assert len(text) < 51_000 and "characters omitted" in text


def test_bad_settings_fail_at_construction():
    with pytest.raises(ValueError, match="exactly one of them|not both"):
        MCPTools(command="x", url="http://y")
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPTools(url="ftp://x")
    with pytest.raises(TypeError, match="args must be a list"):
        MCPTools(command="python", args="-m x")
    with pytest.raises(ValueError, match="unknown MCP server setting"):
        MCPTools(servers=[{"cmd": "x"}])
    with pytest.raises(RuntimeError, match="not open"):
        MCPTools(command="x").tools  # noqa: B018


def test_a_closed_toolset_leaves_no_server_running():
    with MCPTools(**toy()) as toolset:
        pid = by_name(toolset)["pid"]()
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower():
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the toy server {pid} still runs after close()")


# -- the command line ---------------------------------------------------------------------------


def codeagent_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "CODEAGENT_MODEL")}
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=Path(__file__).parents[1], env=env,
                          capture_output=True, text=True, timeout=120)


def test_run_takes_mcp_servers_from_the_command_line():
    from openai_stub import OpenAIStub

    toy_command = f"{sys.executable} {TOY}"
    with OpenAIStub([reply("final_answer(add(40, 2))")]) as stub:
        done = codeagent_cli("run", "Add 40 and 2.", "--model", "m", "--base-url", stub.base_url,
                             "--mcp-stdio", toy_command, "--json")
    assert done.returncode == 0, done.stderr
    assert '"output":42' in done.stdout.replace(" ", "")
    assert "def add(a: int, b: int) -> int:" in stub.requests[0]["messages"][0]["content"]
    broken = codeagent_cli("run", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                           "--mcp-stdio", f"{toy_command} --exit-at-start")
    assert broken.returncode == 2 and "missing configuration file toy.toml" in broken.stderr


def test_batch_workers_open_their_own_sessions(tmp_path):
    import json

    from openai_stub import OpenAIStub

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "task": "add", "expected": 3}) + "\n" for i in range(3)))
    with OpenAIStub([reply("final_answer(add(1, 2))")], repeat_last=True) as stub:
        done = codeagent_cli("batch", str(tasks), "--model", "m", "--base-url", stub.base_url, "--workers", "2",
                             "--mcp-stdio", f"{sys.executable} {TOY}", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 correct" in done.stdout
