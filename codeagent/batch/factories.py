"""The agent factory behind `codeagent batch`: builds one agent per task from plain JSON options.

    codeagent batch tasks.jsonl --model qwen2.5-coder --base-url http://localhost:8000/v1 --mode code
    ≡ run_batch("codeagent.batch.factories:cli_agent", "tasks.jsonl", executor="local",
                options={"model": "qwen2.5-coder", "base_url": "http://localhost:8000/v1", "mode": "code"})

The API key never travels in the options (they are saved in batch.json): `api_key_env` names the
environment variable each worker reads it from (OPENAI_API_KEY when unset).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from codeagent.tools.tool import load_tools

__all__ = ["cli_agent", "load_tools", "AGENT_MODES"]

AGENT_MODES = ("code", "single_call", "tool_calling", "auto")
# mode picked by auto_agent's probes, once per worker for each endpoint (not once per task)
_AUTO_CHOICE: dict[tuple[str, str | None], str] = {}


def cli_agent(
    *,
    model: str,
    base_url: str | None = None,
    mode: str = "code",
    tools: Sequence[str] = (),
    max_steps: int = 10,
    api_key_env: str | None = None,
    system_role: bool = True,
    supports_stop: bool = True,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    authorized_imports: Sequence[str] | None = None,
    executor: Any = None,
    mcp: Sequence[dict[str, Any]] = (),
) -> Any:
    """A CodeAgent, SingleCallAgent or ToolCallingAgent (by `mode`) for one task.

    `executor` is the worker's warm executor (run_batch's `executor=`); None gives each agent its
    own in-process executor. `mcp`: MCP servers (MCPTools' `servers=` entries) whose tools join
    `tools`; each worker process opens its sessions once, for all its tasks. With mode "auto" the
    first task in each worker probes the endpoint (codeagent.auto_agent) and the worker's later
    tasks reuse that choice.
    """
    from codeagent import OpenAIModel, auto_agent

    if mode not in AGENT_MODES:
        raise ValueError(f"mode must be one of {', '.join(AGENT_MODES)}, got {mode!r}")
    request_options: dict[str, Any] = {}
    if temperature is not None:
        request_options["temperature"] = temperature
    if max_tokens is not None:
        request_options["max_tokens"] = max_tokens
    endpoint: dict[str, Any] = {}  # the request timeout and the SDK's retries, when set
    if timeout is not None:
        endpoint["timeout"] = timeout
    if max_retries is not None:
        endpoint["max_retries"] = max_retries
    llm = OpenAIModel(model, base_url=base_url, api_key=os.environ.get(api_key_env or "OPENAI_API_KEY"),
                      system_role=system_role, supports_stop=supports_stop, request_options=request_options,
                      **endpoint)
    agent_tools = load_tools(tools)
    if mcp:
        from codeagent.mcp.cli import process_toolset

        agent_tools += process_toolset(list(mcp)).tools
    options: dict[str, Any] = {"max_steps": max_steps}
    if executor is not None:
        options["executor"] = executor
    elif authorized_imports is not None:
        options["authorized_imports"] = list(authorized_imports)
    if mode == "single_call":  # batch tools are the user's: bundling is not assumed safe
        options["bundleable"] = ()
    key = (model, base_url)
    chosen = _AUTO_CHOICE.get(key) if mode == "auto" else mode
    agent = auto_agent(llm, agent_tools, mode=chosen, **options)
    if mode == "auto":
        _AUTO_CHOICE[key] = agent.auto_choice.mode
    return agent
