"""The dialect table: every way we know that open models, and the servers in front of them, write
a tool call in text; each row names who writes it and carries an example the tests parse.

`tool_calls_to_code(text, tools)` (json_calls.py) runs the rows in order and turns the first that
finds calls into Python, one call a line. Rows whose dialect is Python already are read by an
earlier parser tier (`read=None`: the ```tool_code fence, the whole reply). What makes a JSON value
a call and not data is one rule for every row: `calls.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import dialect_readers as r

__all__ = ["Dialect", "DIALECTS", "might_hold_calls"]


@dataclass(frozen=True)
class Dialect:
    name: str
    markers: tuple[str, ...]  # text that must be in the reply for `read` to be tried; () always
    read: Callable[[str], r.Reading | None] | None  # None: an earlier tier reads it
    source: str  # who writes it, and where that is written down
    example: str  # a reply in this dialect...
    call: str  # ...and the Python it becomes


_HERMES = r.json_after("<tool_call>")
DIALECTS: tuple[Dialect, ...] = (
    Dialect("Hermes <tool_call>", ("<tool_call>",), _HERMES,
       "NousResearch Hermes 2 Pro / 3; Qwen2.5, Qwen3, QwQ (tokenizer_config.json chat templates); "
       "Granite 3.1+ (a JSON list); vLLM `hermes`, llama.cpp 'Hermes 2 Pro' parsers",
       '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>', "add(a=1, b=2)"),
    Dialect("<function=name> tags", ("<function=", "<function name="), r.function_tags,
       "Llama 3.1 custom tool format (model card), functionary v3.1: `{...}` inside; Qwen3-Coder "
       "(vLLM `qwen3_xml`), Seed-OSS: `<parameter=k>v</parameter>` inside",
       "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\n2\n</parameter>\n"
       "</function>\n</tool_call>", "add(a=1, b=2)"),
    Dialect("GLM <arg_key>", ("<tool_call>",), r.glm,
       "GLM-4.5 / 4.6 / 4.7 (zai-org chat template; vLLM `glm45`, sglang glm4_moe detector)",
       "<tool_call>add\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n<arg_key>b</arg_key>\n"
       "<arg_value>2</arg_value>\n</tool_call>", "add(a=1, b=2)"),
    Dialect("Mistral [TOOL_CALLS]", ("[TOOL_CALLS]",), r.mistral,
       "Mistral 7B v0.3, Mistral Nemo: `[TOOL_CALLS][{...}]`; v11+ tokenizers (Mistral Small 3.1+, "
       "Ministral 3, Devstral, Magistral): `[TOOL_CALLS]name[ARGS]{...}` (vLLM `mistral`, llama.cpp)",
       '[TOOL_CALLS][{"name": "add", "arguments": {"a": 4, "b": 5}}]', "add(a=4, b=5)"),
    Dialect("Llama <|python_tag|>", ("<|python_tag|>",), r.python_tag,
       "Llama 3.1 / 3.2 / 3.3 (Meta's prompt format: JSON `{\"name\", \"parameters\"}`, built-in "
       "`brave_search.call(query=...)`, code for the ipython environment); vLLM `llama3_json`",
       '<|python_tag|>{"name": "add", "parameters": {"a": 1, "b": 2}}<|eom_id|>', "add(a=1, b=2)"),
    Dialect("Llama 4 pythonic", ("<|python_start|>",), r.pythonic_between("<|python_start|>", "<|python_end|>"),
       "Llama 4 Scout / Maverick (vLLM `llama4_pythonic`)",
       "<|python_start|>[add(a=1, b=2)]<|python_end|>", "[add(a=1, b=2)]"),
    Dialect("Olmo <function_calls>", ("<function_calls>",), r.pythonic_between("<function_calls>", "</function_calls>"),
       "Olmo 3 (vLLM `olmo3`: one Python call a line, JSON true/false/null allowed)",
       "<function_calls>add(a=1, b=2)\nnegate(flag=true)</function_calls>", "add(a=1, b=2)\nnegate(flag=True)"),
    Dialect("functools[...]", ("functools",), r.json_after("functools"),
       "Phi-4-mini (vLLM `phi4_mini_json`, Foundry Local template), Firefunction v2 (llama.cpp)",
       'functools[{"name": "add", "arguments": {"a": 1, "b": 2}}]', "add(a=1, b=2)"),
    Dialect("Granite <|tool_call|>", ("<|tool_call|>",), r.json_after("<|tool_call|>"),
       "IBM Granite 3.0 (vLLM `granite`)",
       '<|tool_call|>[{"name": "add", "arguments": {"a": 1, "b": 2}}]', "add(a=1, b=2)"),
    Dialect("<function_call>", ("<function_call>",), r.json_after("<function_call>"),
       "IBM granite-20b-functioncalling (vLLM `granite-20b-fc`); Hermes variants (llama.cpp)",
       '<function_call> {"name": "add", "arguments": {"a": 1, "b": 2}}', "add(a=1, b=2)"),
    Dialect("InternLM <|plugin|>", ("<|plugin|>",), r.json_after("<|plugin|>"),
       "InternLM 2 / 2.5 chat (vLLM `internlm`)",
       '<|action_start|><|plugin|>\n{"name": "add", "parameters": {"a": 1, "b": 2}}<|action_end|>', "add(a=1, b=2)"),
    Dialect("<tool_calls> block", ("<tool_calls>",), r.json_after("<tool_calls>"),
       "AI21 Jamba 1.5 (vLLM `jamba`), MiniMax-M1 (one object a line), Hunyuan-A13B",
       '<tool_calls>[{"name": "add", "arguments": {"a": 1, "b": 2}}]</tool_calls>', "add(a=1, b=2)"),
    Dialect("Command <|START_ACTION|>", ("<|START_ACTION|>",), r.json_after("<|START_ACTION|>"),
       "Cohere Command R7B, Command A (llama.cpp 'Command R7B': tool_name + parameters)",
       '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "add", "parameters": {"a": 1, "b": 2}}]<|END_ACTION|>',
       "add(a=1, b=2)"),
    Dialect("Action: JSON", ("Action:",), r.json_after("Action:"),
       "Cohere Command-R / R+ tool-use template (Action: ```json [...]```); LangChain structured chat "
       "agent ({\"action\", \"action_input\"} after Action:)",
       'Action: ```json\n[{"tool_name": "add", "parameters": {"a": 1, "b": 2}}]\n```', "add(a=1, b=2)"),
    Dialect("ReAct Action / Action Input", ("Action Input", "✿FUNCTION✿"), r.react,
       "LangChain ReAct (hwchase17/react prompt), Qwen-Agent ReAct and its ✿FUNCTION✿ / ✿ARGS✿ prompt, "
       "GLM-4 and other ReAct-prompted models",
       'Thought: I need the sum.\nAction: add\nAction Input: {"a": 1, "b": 2}\nObservation:', "add(a=1, b=2)"),
    Dialect("DeepSeek tool tokens", ("<｜tool▁sep｜>",), r.deepseek,
       "DeepSeek V2.5 / V3 / R1 (`function<｜tool▁sep｜>name` + ```json), V3.1+ (`name<｜tool▁sep｜>{...}`); "
       "vLLM `deepseek_v3` / `deepseek_v31`, llama.cpp 'DeepSeek R1'",
       '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>add\n```json\n{"a": 1, "b": 2}\n'
       "```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", "add(a=1, b=2)"),
    Dialect("Kimi tool tokens", ("<|tool_call_begin|>",), r.kimi,
       "Moonshot Kimi K2 (vLLM `kimi_k2`)",
       '<|tool_calls_section_begin|><|tool_call_begin|>functions.add:0<|tool_call_argument_begin|>'
       '{"a": 1, "b": 2}<|tool_call_end|><|tool_calls_section_end|>', "add(a=1, b=2)"),
    Dialect("harmony to=functions", ("to=functions.",), r.harmony,
       "OpenAI gpt-oss 20b / 120b (harmony format; vLLM `openai`), when a server returns it as text",
       '<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 1, "b": 2}<|call|>',
       "add(a=1, b=2)"),
    Dialect("functionary >>>", (">>>",), r.functionary,
       "MeetKai functionary v3.2 (llama.cpp 'Functionary v3.2')",
       '>>>add\n{"a": 1, "b": 2}', "add(a=1, b=2)"),
    Dialect("FunctionGemma call:", ("<start_function_call>",), r.function_gemma,
       "Google FunctionGemma 270M (vLLM `functiongemma`)",
       "<start_function_call>call:greet{name:<escape>Ada<escape>,times:2}<end_function_call>",
       "greet(name='Ada', times=2)"),
    Dialect("Apertus <|tools_prefix|>", ("<|tools_prefix|>",), r.apertus,
       "Swiss AI Apertus 8B / 70B (vLLM `apertus`: objects keyed by the tool's name)",
       '<|tools_prefix|>[{"add": {"a": 1, "b": 2}}]<|tools_suffix|>', "add(a=1, b=2)"),
    Dialect("```tool_code fence", (), None,
       "Gemma 2 / 3 and Gemini (Google's function-calling guide): Python in a ```tool_code fence, "
       "read by the fence tier", "```tool_code\nadd(a=1, b=2)\n```", "add(a=1, b=2)"),
    Dialect("pythonic list", (), None,
       "Llama 3.2 1B / 3B, ToolACE (vLLM `pythonic`): a Python list of calls, read by the whole-reply "
       "tier (single-call mode takes it as a bundle)", "[add(a=1, b=2), negate(flag=True)]",
       "[add(a=1, b=2), negate(flag=True)]"),
    Dialect("JSON {name, arguments|parameters}", (), r.bare_json,
       "Llama 3.1-3.3 JSON tool calling (`parameters`), Gemma 3 and most small models prompted for JSON, "
       "xLAM (a list), Phi-4 (in a ```json fence); llama.cpp generic `{\"tool_call\"|\"tool_calls\"}`",
       'Calling it now:\n```json\n{"name": "add", "parameters": {"a": 1, "b": 2}}\n```', "add(a=1, b=2)"),
    Dialect("OpenAI-shaped JSON", (), r.bare_json,
       "OpenAI `tool_calls` / legacy `function_call`, written as text by servers and fine-tunes: "
       "`{\"type\": \"function\", \"function\": {\"name\", \"arguments\": \"<JSON string>\"}}`",
       '{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "add", '
       '"arguments": "{\\"a\\": 1, \\"b\\": 2}"}}]}', "add(a=1, b=2)"),
    Dialect("JSON {tool|tool_name|action|function, ...}", (), r.bare_json,
       "constrain.schemas' `{\"tool\"}`, LangChain `{\"action\", \"action_input\"}`, `{\"tool_name\", "
       "\"tool_input\"}`, Anthropic-style `{\"type\": \"tool_use\", \"name\", \"input\"}`, Gemini "
       "`{\"functionCall\": {\"name\", \"args\"}}`",
       '{"action": "add", "action_input": {"a": 1, "b": 2}}', "add(a=1, b=2)"),
)

# One of these is in every reply any row can read: the cheap test before any row is tried.
_ANY_DIALECT = ("{", "[", "<", "Action", "✿")


def might_hold_calls(text: str) -> bool:
    return any(c in text for c in _ANY_DIALECT)
