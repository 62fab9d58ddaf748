"""The tool-call dialects: every row of the table, a corpus of real-shaped replies, the rule that
keeps data from becoming a call (a hypothesis property), and the three agents the table drives.

Examples per property: CODEAGENT_PARSING_EXAMPLES (default 100), as in test_parsing_properties.py.
"""

from __future__ import annotations

import ast
import json
import keyword
import os

import pytest
from dialect_corpus import CORPUS, TOOLS
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openai_stub import OpenAIStub

from codeagent import CodeAgent, OpenAIModel, ScriptedModel, SingleCallAgent, ToolCallingAgent, tool
from codeagent.models.constrain import to_call
from codeagent.parsing import DIALECTS, CodeParseError, UnknownToolError, parse_code
from codeagent.parsing.calls import ARGUMENT_KEYS, BOOKKEEPING, NAME_KEYS
from codeagent.parsing.json_calls import tool_calls_to_code
from executors import LocalExecutor

EXAMPLES = int(os.environ.get("CODEAGENT_PARSING_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# --- the table and the corpus --------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.name for d in DIALECTS])
def test_every_row_reads_its_example_and_names_its_source(dialect):
    assert parse_code(dialect.example) == dialect.call
    assert len(dialect.source) > 20  # who writes it, and where that is written down


def test_the_corpus_is_big_enough_and_covers_every_row():
    assert len(CORPUS) >= 60
    assert len({reply for _, reply, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("reply", "expected"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_every_corpus_reply_becomes_the_intended_call(reply, expected):
    assert parse_code(reply) == expected
    assert parse_code(reply, tools=TOOLS) == expected  # knowing the tools changes nothing here


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"name": "add", "arguments": {"a": 1}}', "add(a=1)"),
    ('{"tool": "add", "arguments": {"a": 1, "b": 2}}', "add(a=1, b=2)"),
    ('[TOOL_CALLS][{"name": "add", "arguments": {"a": 4, "b": 5}}]', "add(a=4, b=5)"),
    ('{"action": "add", "action_input": {"a": 1}}', "add(a=1)"),
    ('{"tool_name": "add", "tool_input": {"a": 1}}', "add(a=1)"),
    ('{"tool": "final_answer", "arguments": {"answer": "Paris"}}', "final_answer('Paris')"),
])
def test_the_issues_table(reply, expected):
    assert parse_code(reply) == expected


# --- data is never a call ----------------------------------------------------------------------------

# The marker of any row: a model's tool-call token vouches for what follows it wherever it stands,
# so data that holds one in a string is assumed away (as test_parsing_properties does for fences).
MARKERS = {m for d in DIALECTS for m in d.markers} | {"```", "~~~", "<code>", "<think>", "Action"}
CALL_WORDS = (*NAME_KEYS, *ARGUMENT_KEYS, *BOOKKEEPING, "tool_calls", "function_call", "tool_call",
              "functionCall", "role", "content")
identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))
scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8) | st.sampled_from(CALL_WORDS), inner, max_size=4),
                           max_leaves=12)


@st.composite
def calls(draw, name=None):
    """A call in any spelling of the rule: (the JSON object, its name, its keyword arguments)."""
    name = name or draw(st.sampled_from(["get_weather", "add", "search_docs", "lookup"]))
    arguments = draw(st.dictionaries(identifiers, json_values, max_size=3))
    assume(not (arguments.get("type") == "object" and isinstance(arguments.get("properties"), dict)))
    obj: dict = {draw(st.sampled_from(NAME_KEYS)): name}
    key = draw(st.sampled_from(ARGUMENT_KEYS))
    obj[key] = json.dumps(arguments) if draw(st.booleans()) and key not in ("tool_input", "action_input") else arguments
    if draw(st.booleans()):
        obj["id"] = draw(st.text("abc123", min_size=1, max_size=9))
    wrap = draw(st.sampled_from(["", "function", "tool_calls", "functionCall"]))
    if wrap == "function":
        obj = {"type": "function", "function": obj}
    elif wrap == "tool_calls":
        obj = {"role": "assistant", "content": None, "tool_calls": [obj]}
    elif wrap == "functionCall":
        obj = {"functionCall": obj}
    return obj, name, arguments


@st.composite
def data_documents(draw):
    """JSON that is data by the rule, whatever call-shaped objects it holds inside."""
    nested_call = calls().map(lambda c: c[0])
    value = json_values | nested_call
    kind = draw(st.sampled_from(["foreign key", "list with a non-call", "bad name", "no arguments",
                                 "arguments not an object", "a tool's definition", "scalar"]))
    if kind == "foreign key":  # a call's keys and one key no call has
        doc = draw(st.dictionaries(st.sampled_from(CALL_WORDS), value, max_size=4))
        foreign = draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in CALL_WORDS))
        doc[foreign] = draw(value)
    elif kind == "list with a non-call":
        doc = draw(st.lists(nested_call, max_size=3)) + [draw(scalars | st.lists(scalars, max_size=2))]
    elif kind == "bad name":  # not a string naming an identifier
        bad = draw(st.text(max_size=12).filter(lambda s: not s.strip().isidentifier()) | st.integers() | st.none())
        doc = {draw(st.sampled_from(NAME_KEYS)): bad, "arguments": draw(st.dictionaries(identifiers, json_values, max_size=2))}
    elif kind == "no arguments":  # {"name": "Paris"}: bare JSON must carry its arguments
        doc = {draw(st.sampled_from(NAME_KEYS)): draw(identifiers), **draw(st.sampled_from([{}, {"id": "x1"}]))}
    elif kind == "arguments not an object":
        doc = {draw(st.sampled_from(NAME_KEYS)): draw(identifiers),
               draw(st.sampled_from(["arguments", "parameters", "args", "input"])):
                   draw(st.integers() | st.booleans() | st.lists(scalars, max_size=2))}
    elif kind == "a tool's definition":
        doc = {"name": draw(identifiers), "parameters": {"type": "object", "properties": draw(
            st.dictionaries(identifiers, st.just({"type": "string"}), max_size=2))}}
    else:
        doc = draw(scalars)
    return doc


FRAMES = [("", ""), ("Here is the data:\n", "\nThat is all."), ("The result was ", "."),
          ("```json\n", "\n```"), ("<think>no tool needed</think>\n", ""), ("Final Answer: ", "")]


@SETTINGS
@given(doc=data_documents(), frame=st.sampled_from(FRAMES), indent=st.sampled_from([None, 2]))
def test_a_json_document_that_is_data_never_becomes_a_call(doc, frame, indent):
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    assume(not any(m in text for m in MARKERS))
    assert tool_calls_to_code(text) is None
    reply = frame[0] + text + frame[1]
    try:
        code = parse_code(reply, tools=["get_weather", "add"])
    except CodeParseError:
        return
    assert not any(isinstance(node, ast.Call) for node in ast.walk(ast.parse(code))), (reply, code)


MARKED = [("<tool_call>\n", "\n</tool_call>"), ("[TOOL_CALLS]", ""), ("<|python_tag|>", "<|eom_id|>"),
          ("functools[", "]"), ("Action:\n```json\n", "\n```")]


@SETTINGS
@given(call=calls(), frame=st.sampled_from(FRAMES[:5] + MARKED), indent=st.sampled_from([None, 2]))
def test_a_call_in_any_spelling_is_that_call(call, frame, indent):
    obj, name, arguments = call
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    assume(not any(m in text for m in MARKERS))
    code = parse_code(frame[0] + text + frame[1])
    (stmt,) = ast.parse(code).body
    assert isinstance(stmt.value, ast.Call) and stmt.value.func.id == name  # type: ignore[attr-defined]
    got = {}
    for kw in stmt.value.keywords:  # type: ignore[attr-defined]
        value = ast.literal_eval(kw.value)
        got.update(value if kw.arg is None else {kw.arg: value})
    assert json.dumps(got, sort_keys=True) == json.dumps(arguments, sort_keys=True)


PIECES = sorted(MARKERS) + ["{", "}", "[", "]", '"name": ', '"arguments": ', '"add"', "\n", ":", ",", "<|", "|>",
                            "call:", "<escape>", "<arg_key>", "</arg_value>", "<parameter=", ">>>", "Input: "]


@SETTINGS
@given(pieces=st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=30))
def test_any_mix_of_markers_and_json_is_read_or_refused_never_a_crash(pieces):
    reply = "".join(pieces)
    try:
        code = parse_code(reply, tools=["add"])
    except CodeParseError:
        return
    assert isinstance(code, str) and code


# --- what the agents do with it ------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return {"paris": "sunny"}.get(city.lower(), "cloudy")


@tool
def capital_of(country: str) -> str:
    """The capital of a country."""
    return {"france": "Paris"}.get(country.lower(), "?")


def test_code_agent_teaches_an_unknown_tool_and_lists_the_tools():
    with pytest.raises(UnknownToolError) as info:
        parse_code('{"name": "get_wether", "arguments": {"city": "Paris"}}', tools=["get_weather"])
    assert info.value.name == "get_wether" and "Did you mean get_weather?" in info.value.message
    replies = ['<tool_call>\n{"name": "get_wether", "arguments": {"city": "Paris"}}\n</tool_call>',
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
               '{"name": "final_answer", "arguments": {"answer": "sunny"}}']
    with CodeAgent(ScriptedModel(replies), tools=[get_weather], executor=LocalExecutor()) as agent:
        result = agent.run("Weather in Paris?")
    first = result.steps[0]
    assert first.error_kind == "parse" and "nothing was called" in first.observation
    assert "The tools are: get_weather, final_answer." in first.observation
    assert result.steps[1].code == "get_weather(city='Paris')" and "sunny" in result.steps[1].observation
    assert result.status == "success" and result.output == "sunny"


def test_single_call_agent_answers_in_the_tool_spelling():
    replies = ['{"tool": "capital_of", "arguments": {"country": "France"}}',
               '{"tool": "final_answer", "arguments": {"answer": "Paris"}}']
    with SingleCallAgent(ScriptedModel(replies), tools=[capital_of], executor=LocalExecutor()) as agent:
        result = agent.run("Capital of France?")
    assert result.status == "success" and result.output == "Paris" and len(result.steps) == 2


@pytest.mark.parametrize("reply", [
    '[TOOL_CALLS][{"name": "capital_of", "arguments": {"country": "France"}}, '
    '{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    '[capital_of(country="France"), get_weather(city="Paris")]',  # Llama 3.2 pythonic
])
def test_several_calls_in_one_reply_go_through_bundleable(reply):
    answer = '{"name": "final_answer", "arguments": {"answer": "Paris"}}'
    with SingleCallAgent(ScriptedModel([reply, answer]), tools=[capital_of, get_weather],
                         bundleable=["capital_of", "get_weather"], executor=LocalExecutor()) as agent:
        result = agent.run("Capital of France, and its weather?")
    assert "'Paris'" in result.steps[0].observation and "'sunny'" in result.steps[0].observation
    with SingleCallAgent(ScriptedModel([reply, answer]), tools=[capital_of, get_weather],
                         executor=LocalExecutor()) as agent:
        refused = agent.run("Capital of France, and its weather?")
    assert refused.steps[0].error_kind == "invalid_action" and "make exactly one call per reply" in refused.steps[0].observation


def test_tool_calling_agent_reads_calls_a_server_returns_as_text():
    replies = ['Let me look.[TOOL_CALLS][{"name": "capital_of", "arguments": {"country": "France"}}]',
               '<tool_call>\n{"name": "final_answer", "arguments": {"answer": "Paris"}}\n</tool_call>']
    with OpenAIStub(replies) as stub:
        model = OpenAIModel("stub", base_url=stub.base_url, api_key="k", max_retries=0)
        result = ToolCallingAgent(model, tools=[capital_of]).run("Capital of France?")
    assert result.steps[0].observation == "capital_of(country='France') -> 'Paris'"
    assert result.status == "success" and result.output == "Paris"


def test_to_call_reads_every_spelling_of_one_call():
    assert to_call({"action": "capital_of", "action_input": {"country": "France"}}) == "capital_of(country='France')"
    assert to_call({"tool_name": "final_answer", "tool_input": {"answer": 3}}) == "final_answer(3)"
    with pytest.raises(ValueError, match="JSON object"):
        to_call({"name": "capital_of", "arguments": {"country": "France"}, "extra": 1})


def test_a_long_argument_is_read_whole():
    text = "x" * 50_000 + "\\u00e9\"quoted\""
    call = json.dumps({"name": "add", "arguments": {"note": text, "n": [1] * 3000}})
    for reply in (call, f"<tool_call>\n{call}\n</tool_call>", f"I will call {call} now."):
        (stmt,) = ast.parse(parse_code(reply)).body
        assert ast.literal_eval(stmt.value.keywords[0].value) == text  # type: ignore[attr-defined]


@pytest.mark.parametrize("piece", sorted({m + t for d in DIALECTS for m in d.markers for t in ("", "{", "x")}
                                         | {"[{", '"{', "{", "[x", '{"name": "add", "arguments": {'}))
def test_a_reply_made_of_one_broken_piece_costs_one_pass(piece, monkeypatch):
    """json reports an error's line by counting from the start of the text it was given, so
    decoding each brace of a long reply against the whole reply would take its length squared
    (seconds at 100 kB). What json counts, summed over every error, must stay linear."""
    counted: list[int] = []
    original = json.JSONDecodeError.__init__

    def counting(self, msg, doc, pos):
        counted.append(pos)
        original(self, msg, doc, pos)

    monkeypatch.setattr(json.JSONDecodeError, "__init__", counting)
    reply = piece * (100_000 // len(piece))
    try:
        parse_code(reply, tools=["add"])
    except CodeParseError:
        pass
    assert sum(counted) <= 1100 * len(reply)  # at most a window (1 kB) per brace, not the reply


def test_a_python_block_that_starts_with_a_bracket_stays_code():
    """Only a block that is one JSON value whole is read as a call: Python that starts with a list
    and builds a call-shaped dict further down is the code it is (even with tools given)."""
    block = '[1, 2]\nx = {"name": "add", "arguments": {"a": 1}}\nprint(x)'
    assert parse_code(f"<code>\n{block}\n</code>") == block
    assert parse_code(f"<code>\n{block}\n</code>", tools=["search"]) == block
    assert parse_code('<code>[{"name": "add", "arguments": {"a": 1}}]</code>') == "add(a=1)"
