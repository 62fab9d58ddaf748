"""auto_agent: pick code actions, single-call or native tool calls from what the endpoint can do.

The rule (first that applies wins):

1. A configured mode always wins, and nothing is probed: `mode=` ("code", "single_call",
   "tool_calling"), else the environment variable `CODEAGENT_AGENT_MODE`.
2. Code probe: one request asking for a tiny Python action (compute 17 * 23, answer with
   `final_answer`). If the reply parses and running it gives 391, the model writes usable code:
   **code** (a CodeAgent: the most done per model call).
3. Tool probe: one request carrying a `multiply` tool (OpenAI `tools`). If the reply holds a native
   `tool_calls` entry for it with the arguments 17 and 23: **tool_calling** (a ToolCallingAgent).
4. Otherwise (a weak model, or an endpoint without function calling): **single_call**
   (a SingleCallAgent: one literal call per turn, the easiest format to get right), constrained
   when the endpoint can constrain decoding: a model that can (`OpenAIModel`) and has no
   `constrain` setting is switched to constrain="auto", which probes which spelling the endpoint
   honours (a grammar or a JSON schema; the spelling is in the reason). A weak model is where a
   constraint helps most: measured with SmolLM2-135M, see benchmarks/weak_model_e2e.py.

A probe that fails with HTTP 400 (say, `tools` not supported) counts as "no"; any other model
error (unreachable endpoint, bad key) is raised, since no mode would work. The choice and why are
kept on the agent as `agent.auto_choice`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..models.openai_model import Model, ModelError

__all__ = ["auto_agent", "choose_mode", "AutoChoice", "MODES", "MODE_ENV"]

Mode = Literal["code", "single_call", "tool_calling"]
MODES: tuple[str, ...] = ("code", "single_call", "tool_calling")
MODE_ENV = "CODEAGENT_AGENT_MODE"

CODE_PROBE_SYSTEM = (
    "You solve tasks by writing Python code between <code> and </code>. "
    "Call final_answer(value) in the code to give the answer."
)
CODE_PROBE_TASK = "Task: compute 17 * 23 with Python and give the result with final_answer."
CODE_PROBE_ANSWER = 391
TOOL_PROBE_TASK = "Use the multiply tool to compute 17 * 23."
TOOL_PROBE_SCHEMA = {
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiply two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


@dataclass(frozen=True)
class AutoChoice:
    mode: str
    reason: str
    writes_code: bool | None = None  # None: not probed
    native_tools: bool | None = None
    constrain: str | None = None  # the constraint spelling the model uses (None: none)


def _is_bad_request(exc: ModelError) -> bool:
    return exc.status == 400


def probe_code(model: Model) -> bool:
    """True if the model answers a tiny task with code that runs and gives the right answer."""
    from executors.local import LocalExecutor

    from ..parsing import CodeParseError
    from .formats import CodeBlock

    messages = [{"role": "system", "content": CODE_PROBE_SYSTEM}, {"role": "user", "content": CODE_PROBE_TASK}]
    try:
        reply = model.complete(messages, stop=["</code>"])
        code = CodeBlock().extract(reply.text)
    except CodeParseError:
        return False
    except ModelError as exc:
        if _is_bad_request(exc):
            return False
        raise
    with LocalExecutor() as ex:
        result = ex.execute(code)
    return bool(result.is_final_answer) and result.output in (CODE_PROBE_ANSWER, str(CODE_PROBE_ANSWER))


def probe_native_tools(model: Model) -> bool:
    """True if the endpoint answers a request carrying a tool with a correct native tool call."""
    import inspect

    try:
        if "tools" not in inspect.signature(model.complete).parameters:
            return False
    except (TypeError, ValueError):
        return False
    messages = [{"role": "user", "content": TOOL_PROBE_TASK}]
    try:
        reply = model.complete(messages, stop=None, tools=[TOOL_PROBE_SCHEMA])  # type: ignore[call-arg]
    except ModelError as exc:
        if _is_bad_request(exc):
            return False
        raise
    for call in reply.tool_calls:
        args = call.arguments
        if call.name == "multiply" and isinstance(args, Mapping) and sorted(map(str, args.values())) == ["17", "23"]:
            return True
    return False


def choose_mode(model: Model, mode: str | None = None) -> AutoChoice:
    """Apply the rule in this module's docstring; at most two probe requests."""
    configured = mode or os.environ.get(MODE_ENV) or None
    if configured:
        if configured not in MODES:
            where = "mode=" if mode else f"${MODE_ENV}"
            raise ValueError(f"{where} must be one of {', '.join(MODES)}; got {configured!r}")
        return AutoChoice(configured, f"configured ({'mode=' if mode else MODE_ENV})")
    if probe_code(model):
        return AutoChoice("code", "the code probe ran and gave the right answer", writes_code=True)
    if probe_native_tools(model):
        return AutoChoice(
            "tool_calling", "no usable code, but a correct native tool call", writes_code=False, native_tools=True
        )
    spelling, why = constrain_for_single_call(model)
    return AutoChoice(
        "single_call", f"neither usable code nor a native tool call: one call per turn, {why}",
        writes_code=False, native_tools=False, constrain=spelling,
    )


def constrain_for_single_call(model: Model) -> tuple[str | None, str]:
    """The constraint spelling a single-call agent on `model` gets, and a phrase that says why.

    A model that can constrain (has `set_constrain`) and has no setting is switched to "auto"; when
    the probe finds no spelling, constrained requests go out unconstrained (the probe's reasons are
    in the model's adaptations, and so in the run's events).
    """
    from ..models.constrain.request import model_spelling

    setting = getattr(model, "constrain", None)
    if setting is None and callable(getattr(model, "set_constrain", None)):
        model.set_constrain("auto")  # type: ignore[attr-defined]
        setting = "auto"
    if setting is None:
        return None, "unconstrained (the model has no constrain setting)"
    spelling = model_spelling(model)
    if spelling is None:
        return None, "unconstrained (no constraint spelling works on this endpoint)"
    how = "probed" if setting == "auto" else "configured"
    return spelling, f"constrained with constrain={spelling!r} ({how})"


def auto_agent(
    model: Model, tools: Iterable[Any] | Mapping[str, Any] = (), mode: str | None = None, **options: Any
) -> Any:
    """An agent for `model` in the mode the rule picks (`mode=` or $CODEAGENT_AGENT_MODE override it).

    `options` go to the agent's constructor (max_steps, instructions, ...); `bundleable` only
    matters in single-call mode and executor options only for the code-writing agents.
    Returns a CodeAgent, SingleCallAgent or ToolCallingAgent with `.auto_choice` set.
    """
    choice = choose_mode(model, mode)
    if choice.mode == "code":
        from .code_agent import CodeAgent

        options.pop("bundleable", None)
        agent: Any = CodeAgent(model, tools, **options)
    elif choice.mode == "single_call":
        from .single_call import SingleCallAgent

        agent = SingleCallAgent(model, tools, **options)
    else:
        from .tool_calling import ToolCallingAgent

        for name in ("bundleable", "executor", "authorized_imports", "limits", "code_tags"):
            options.pop(name, None)
        agent = ToolCallingAgent(model, tools, **options)
    agent.auto_choice = choice
    return agent
