"""codeagent.models.constrain: schemas, grammars, request fields, the probe and few-shot examples.

Laws (hypothesis):
- every JSON instance of a generated single-call schema becomes, through `to_call`, one Python call
  that parses, names a known tool (or final_answer) and whose arguments pass the tool's own
  pydantic validation; its spelling is the parser's JSON tier's;
- the grammar generated from that schema accepts every instance's JSON text and rejects the
  mutations a weak model makes (unknown tool, missing or extra argument, wrong type);
- the code-action grammar accepts exactly "Thought + block ending at the first closing tag".
Grammar acceptance here uses a small GBNF recognizer (below); llama.cpp's own parser checks the
same grammars in tests/constrain_grammar_check.py (run with the .models venv) and in the test at
the end when llama_cpp is importable.
"""

from __future__ import annotations

import ast
import enum
import json
import keyword
import sys
from contextlib import contextmanager
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from codeagent import tool
from codeagent.models.constrain import (
    PROBE_ORDER,
    SPELLINGS,
    arguments_schema,
    code_action_grammar,
    code_action_schema,
    code_action_text,
    example_arguments,
    fewshot_messages,
    fewshot_text,
    probe_constraint,
    request_fields,
    schema_to_gbnf,
    single_call_grammar,
    single_call_schema,
    to_call,
)
from codeagent.models.constrain.probe import PROBE_SCHEMA, probe_conforms, sdk_sender
from codeagent.models.constrain.schemas import python_literal
from codeagent.tools.tool import ToolArgumentError, tools_by_name

# -- tools with every kind of parameter the schemas must describe ------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    label: str
    weight: float = 1.0


class Meta(BaseModel):  # field names that are JSON-schema keywords
    properties: dict[str, int]
    default: int = 3


class Point(BaseModel):
    x: int
    y: int
    inner: Inner | None = None


def _other_inner():  # a second model named Inner: the $defs of two tools clash by name
    class Inner(BaseModel):
        count: int

    class Box(BaseModel):
        inner: Inner

    return Box


Box = _other_inner()


def _echo(**kwargs: Any) -> dict[str, Any]:
    return kwargs


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def scale(value: float, factor: float = 2.0, clamp: bool = False) -> float:
    """Scale a number."""
    return value * factor


@tool
def search(query: str, limit: int | None = None, tags: list[str] | None = None,
           mode: Literal["fast", "exact"] = "fast") -> list[str]:
    """Search the notes."""
    return [query]


@tool
def paint(color: Color, where: Point, meta: Meta | None = None) -> str:
    """Paint at a point."""
    return f"{color} {where}"


@tool
def pack(box: Box, pair: tuple[int, str], counts: dict[str, int]) -> str:
    """Pack a box."""
    return "ok"


@tool
def positional(x, /, y: int) -> int:
    """Positional-only first parameter, no annotation."""
    return y


@tool
def options(**extra: int) -> int:
    """Keyword arguments of one type."""
    return sum(extra.values())


@tool
def ping() -> str:
    """No arguments."""
    return "pong"


TOOLS = [add, scale, search, paint, pack, positional, options, ping]
BY_NAME = tools_by_name(TOOLS)
SCHEMA = single_call_schema(TOOLS)


@contextmanager
def deep_recursion(limit: int = 20000):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# -- a small GBNF recognizer (the subset the constrain module emits) ---------------------------


class Gbnf:
    """Parse a GBNF grammar and tell whether it derives a text (memoized, no left recursion)."""

    def __init__(self, text: str) -> None:
        self.rules: dict[str, Any] = {}
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                name, body = line.split("::=", 1)
                self.rules[name.strip()] = self._parse(body.strip())

    # parsing: alt := seq ("|" seq)*; seq := item*; item := atom [?*+]
    def _parse(self, body: str) -> Any:
        self.src, self.pos = body, 0
        node = self._alt()
        assert self.pos == len(self.src), f"trailing grammar text: {self.src[self.pos:]!r}"
        return node

    def _ws(self) -> None:
        while self.pos < len(self.src) and self.src[self.pos] == " ":
            self.pos += 1

    def _alt(self) -> Any:
        seqs = [self._seq()]
        while self.pos < len(self.src) and self.src[self.pos] == "|":
            self.pos += 1
            seqs.append(self._seq())
        return ("alt", seqs)

    def _seq(self) -> Any:
        items = []
        while True:
            self._ws()
            if self.pos >= len(self.src) or self.src[self.pos] in "|)":
                return ("seq", items)
            atom = self._atom()
            self._ws()
            if self.pos < len(self.src) and self.src[self.pos] in "?*+":
                atom = (self.src[self.pos], atom)
                self.pos += 1
            items.append(atom)

    def _char(self) -> str:
        c = self.src[self.pos]
        if c != "\\":
            self.pos += 1
            return c
        e = self.src[self.pos + 1]
        self.pos += 2
        if e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            code = int(self.src[self.pos:self.pos + width], 16)
            self.pos += width
            return chr(code)
        return {"n": "\n", "r": "\r", "t": "\t"}.get(e, e)

    def _atom(self) -> Any:
        c = self.src[self.pos]
        if c == '"':
            self.pos += 1
            out = []
            while self.src[self.pos] != '"':
                out.append(self._char())
            self.pos += 1
            return ("lit", "".join(out))
        if c == "[":
            self.pos += 1
            negated = self.src[self.pos] == "^"
            self.pos += negated
            ranges = []
            while self.src[self.pos] != "]":
                lo = self._char()
                hi = lo
                if self.src[self.pos] == "-" and self.src[self.pos + 1] != "]":
                    self.pos += 1
                    hi = self._char()
                ranges.append((lo, hi))
            self.pos += 1
            return ("cls", negated, tuple(ranges))
        if c == "(":
            self.pos += 1
            node = self._alt()
            assert self.src[self.pos] == ")"
            self.pos += 1
            return node
        start = self.pos
        while self.pos < len(self.src) and (self.src[self.pos].isalnum() or self.src[self.pos] in "-_"):
            self.pos += 1
        assert self.pos > start, f"unexpected {self.src[self.pos:]!r}"
        return ("ref", self.src[start:self.pos])

    # recognizing: the set of end positions each node can reach from a start position
    def accepts(self, text: str) -> bool:
        self.text, self.memo = text, {}
        with deep_recursion():
            return len(text) in self._ends(("ref", "root"), 0)

    def _ends(self, node: Any, pos: int) -> frozenset[int]:
        kind = node[0]
        if kind == "ref":
            key = (node[1], pos)
            if key not in self.memo:
                self.memo[key] = frozenset()  # no left recursion: a re-entry at pos derives nothing
                self.memo[key] = self._ends(self.rules[node[1]], pos)
            return self.memo[key]
        if kind == "lit":
            return frozenset({pos + len(node[1])}) if self.text.startswith(node[1], pos) else frozenset()
        if kind == "cls":
            if pos >= len(self.text):
                return frozenset()
            ch = self.text[pos]
            inside = any(lo <= ch <= hi for lo, hi in node[2])
            return frozenset({pos + 1}) if inside != node[1] else frozenset()
        if kind == "alt":
            return frozenset().union(*(self._ends(s, pos) for s in node[1]))
        if kind == "seq":
            here = frozenset({pos})
            for item in node[1]:
                here = frozenset().union(*(self._ends(item, p) for p in here)) if here else here
            return here
        inner = node[1]
        if kind == "?":
            return frozenset({pos}) | self._ends(inner, pos)
        seen, frontier = set(), {pos} if kind == "*" else set(self._ends(inner, pos))
        while frontier:
            seen |= frontier
            frontier = {e for p in frontier for e in self._ends(inner, p)} - seen
        return frozenset(seen)


GRAMMAR = Gbnf(schema_to_gbnf(SCHEMA, use_llama_cpp=False))


JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


def instances(schema: Any, root: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Every JSON instance of `schema`, for the subset the constraint schemas use.

    (hypothesis-jsonschema would do this, but its 0.23 release breaks on current hypothesis.)
    """
    root = schema if root is None else root
    if schema is True or schema == {}:
        return JSON_VALUES
    if "$ref" in schema:
        return st.deferred(lambda: instances(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([instances(s, root) for s in schema[key]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(max_size=20)
    if kind == "integer":
        return st.integers(-10**12, 10**12) | st.integers()
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**6, 10**6)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        if "prefixItems" in schema:
            return st.tuples(*(instances(s, root) for s in schema["prefixItems"])).map(list)
        return st.lists(instances(schema.get("items", {}), root), max_size=4)
    if kind == "object" or "properties" in schema:
        return _objects(schema, root)
    raise AssertionError(f"schema outside the tested subset: {schema}")


def _objects(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    required = set(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    fixed = st.fixed_dictionaries(
        {k: instances(v, root) for k, v in props.items() if k in required},
        optional={k: instances(v, root) for k, v in props.items() if k not in required},
    )
    # keys in the schema's order: the order a grammar (and the model under it) writes them in
    fixed = fixed.map(lambda d: {k: d[k] for k in props if k in d})
    if extra is False:
        return fixed
    keys = st.text(max_size=8).filter(lambda k: k not in props)
    more = st.dictionaries(keys, instances({} if extra is True else extra, root), max_size=3)
    return st.tuples(fixed, more).map(lambda pair: {**pair[0], **pair[1]})


def _instances(schema: dict[str, Any] = SCHEMA) -> st.SearchStrategy[Any]:
    return instances(schema)


# -- schemas -------------------------------------------------------------------------------------


def test_each_tool_is_one_branch_that_pins_its_name():
    names = [b["properties"]["name"]["const"] for b in SCHEMA["oneOf"]]
    assert names == [*BY_NAME, "final_answer"]
    for branch in SCHEMA["oneOf"]:
        assert branch["required"] == ["name", "arguments"]
        assert branch["additionalProperties"] is False
    add_args = arguments_schema(add)
    assert add_args == {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"], "additionalProperties": False}


def test_clashing_nested_models_keep_apart():
    defs = SCHEMA["$defs"]
    inner_schemas = [v for k, v in defs.items() if k.endswith("Inner")]
    assert len(inner_schemas) == 2 and inner_schemas[0] != inner_schemas[1]
    assert "pack__Inner" in defs  # the second one was renamed, and its reference follows
    pack_branch = next(b for b in SCHEMA["oneOf"] if b["properties"]["name"]["const"] == "pack")
    assert json.dumps(pack_branch).count('"#/$defs/pack__Inner"') == 1
    assert '"#/$defs/Inner"' not in json.dumps(pack_branch)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=_instances())
def test_every_schema_instance_is_a_valid_call(instance):
    from codeagent.parsing.json_calls import tool_calls_to_code

    code = to_call(instance, TOOLS)
    tree = ast.parse(code)
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)
    call = tree.body[0].value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    args = [ast.literal_eval(a) for a in call.args]
    kwargs = {}
    for kw in call.keywords:
        value = ast.literal_eval(kw.value)
        kwargs.update(value if kw.arg is None else {kw.arg: value})
    name = call.func.id
    if name == "final_answer":
        assert args == [instance["arguments"]["answer"]] and not kwargs
        return
    assert name in BY_NAME
    try:
        BY_NAME[name](*args, **kwargs)
    except ToolArgumentError as exc:  # the law: the schema admits nothing the tool would refuse
        pytest.fail(f"{code} fails validation: {exc}")
    if name != "positional":  # the parser's JSON tier spells calls the same way
        assert tool_calls_to_code(json.dumps(instance)) == code


def test_to_call_reads_the_tool_spelling_and_refuses_other_shapes():
    assert to_call({"tool": "add", "arguments": {"a": 1, "b": 2}}) == "add(a=1, b=2)"
    assert to_call('{"name": "final_answer", "arguments": {"answer": "Tokyo"}}') == "final_answer('Tokyo')"
    assert to_call({"name": "final_answer", "arguments": {"answer": 1e400}}) == "final_answer(float('inf'))"
    assert to_call({"name": "positional", "arguments": {"x": 1, "y": 2}}, TOOLS) == "positional(1, y=2)"
    for bad in ("prose", [], {"name": "import os"}, {"name": "add", "arguments": [1, 2]}, {"arguments": {}}):
        with pytest.raises(ValueError, match="JSON object"):
            to_call(bad)


def test_code_action_text_reaches_the_parser():
    from codeagent.parsing import parse_code

    text = code_action_text({"thought": "add them", "code": "final_answer(add(2, 40))"})
    assert text == "Thought: add them\n<code>\nfinal_answer(add(2, 40))\n</code>"
    assert parse_code(text) == "final_answer(add(2, 40))"
    assert code_action_schema()["required"] == ["thought", "code"]
    with pytest.raises(ValueError, match="thought"):
        code_action_text({"thought": "no code"})


# -- grammars ------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=_instances(), ascii_only=st.booleans())
def test_grammar_accepts_every_instance(instance, ascii_only):
    text = json.dumps(instance, ensure_ascii=ascii_only)
    assert GRAMMAR.accepts(text), text


def _mutations(instance: dict[str, Any]) -> list[dict[str, Any]]:
    name, arguments = instance["name"], instance["arguments"]
    out = [{"name": "no_such_tool", "arguments": arguments}, {**instance, "extra": 1},
           {"name": name, "arguments": {**arguments, "not_a_parameter": 1}}]
    if name == "options":
        out = out[:2] + [{"name": name, "arguments": {**arguments, "n": "text"}}]
    schema = arguments_schema(BY_NAME[name]) if name in BY_NAME else {"required": ["answer"]}
    for key in schema["required"]:
        out.append({"name": name, "arguments": {k: v for k, v in arguments.items() if k != key}})
    if name == "add":
        out.append({"name": name, "arguments": {**arguments, "a": str(arguments["a"])}})
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=_instances())
def test_grammar_rejects_what_a_weak_model_gets_wrong(instance):
    for wrong in _mutations(instance):
        assert not GRAMMAR.accepts(json.dumps(wrong)), wrong
    assert not GRAMMAR.accepts(to_call(instance))  # Python, not JSON
    assert not GRAMMAR.accepts(json.dumps(instance, indent=2))  # newlines: at most one space


def test_grammar_rejects_prose_and_the_copied_signature():
    for text in ("The capital of Japan is Tokyo.", 'capital(country: "Japan")', "", "{}",
                 '{"name": "add", "arguments": {"a": 1, "b": 2}} trailing'):
        assert not GRAMMAR.accepts(text)


@pytest.mark.parametrize("tags", [("<code>", "</code>"), ("```python", "```"), ("<<", "<<>")])
@settings(max_examples=80, deadline=None)
@given(thought=st.text(min_size=1).filter(lambda t: "\n" not in t), code=st.text())
def test_code_grammar_is_thought_then_one_block_ending_at_the_first_close(tags, thought, code):
    grammar = Gbnf(code_action_grammar(tags))
    open_tag, close_tag = tags
    reply = f"Thought: {thought}\n{open_tag}\n{code}{close_tag}"
    assert grammar.accepts(reply) == (close_tag not in code + close_tag[:-1])
    assert not grammar.accepts(reply + "more")
    assert not grammar.accepts(f"{open_tag}\n{code}{close_tag}")  # the thought is not optional


PY_GRAMMAR = Gbnf(single_call_grammar(TOOLS))


def _python_call(instance: dict[str, Any]) -> str:
    name, arguments = instance["name"], instance["arguments"]
    if name == "options":  # **kwargs: the grammar spells ASCII identifiers as extra keywords
        arguments = {k: v for k, v in arguments.items()
                     if k.isascii() and k.isidentifier() and not keyword.iskeyword(k)}
    if name == "final_answer":
        return f"final_answer({python_literal(arguments['answer'])})"
    positional = [python_literal(arguments["x"])] if name == "positional" else []
    keywords = [f"{k}={python_literal(v)}" for k, v in arguments.items() if not (name == "positional" and k == "x")]
    return f"{name}({', '.join(positional + keywords)})"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=_instances())
def test_single_call_grammar_accepts_every_call_and_each_is_a_valid_call(instance):
    call = _python_call(instance)
    assert PY_GRAMMAR.accepts(f"<code>{call}</code>"), call
    node = ast.parse(call).body[0].value
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    if instance["name"] == "final_answer":
        assert args == [instance["arguments"]["answer"]]
    else:
        BY_NAME[instance["name"]](*args, **kwargs)
    if instance["name"] != "options":  # any keyword is one of its parameters
        mutated = call.replace("(", "(zz=1, ", 1) if not call.endswith("()") else call[:-1] + "zz=1)"
        assert not PY_GRAMMAR.accepts(f"<code>{mutated}</code>")
    assert not PY_GRAMMAR.accepts(call)  # the tags are part of the format
    assert not PY_GRAMMAR.accepts(f"<code>x = {call}</code>")


def test_single_call_grammar_rejects_the_measured_mistakes():
    grammar = Gbnf(single_call_grammar([capital_of], tags=("", "")))
    assert grammar.accepts('capital_of(country="Japan")')
    assert grammar.accepts('final_answer("Tokyo")')
    for text in ('capital(country: "Japan")', "capital_of(country='Japan')", "The capital is Tokyo.",
                 'def capital_of(country: str) -> str:', 'capital_of(country="Japan")\ncapital_of(country="Peru")'):
        assert not grammar.accepts(text), text


SMALL_PAIRS = st.tuples(st.integers(-10**4, 10**4), st.integers(-10**4, 10**4)).map(lambda p: {"a": p[0], "b": p[1]})


@settings(max_examples=60, deadline=None)
@given(refused=SMALL_PAIRS, other=SMALL_PAIRS | SMALL_PAIRS.map(lambda p: {"a": p["a"], "b": p["a"]}),
       city=st.text(st.characters(min_codepoint=0x20, blacklist_characters='"\\'), max_size=8),
       other_city=st.text(st.characters(min_codepoint=0x20, blacklist_characters='"\\'), max_size=8))
def test_forbidding_a_refused_call_excludes_exactly_that_call(refused, other, city, other_city):
    @tool
    def weather(city: str) -> str:
        """Weather."""
        return city

    grammar = Gbnf(single_call_grammar([add, weather], tags=("", ""),
                                       forbid={"add": refused, "weather": {"city": city}}))
    spell = lambda name, args: f"{name}({', '.join(f'{k}={python_literal(v)}' for k, v in args.items())})"  # noqa: E731
    assert not grammar.accepts(spell("add", refused))
    assert grammar.accepts(spell("add", other)) == (other != refused)
    assert not grammar.accepts(spell("weather", {"city": city}))
    assert grammar.accepts(spell("weather", {"city": other_city})) == (other_city != city)
    assert grammar.accepts('final_answer("done")')


def test_code_grammar_accepts_the_text_code_action_text_renders():
    grammar = Gbnf(code_action_grammar())
    text = code_action_text({"thought": "compute", "code": "x = 17 * 23\nfinal_answer(x)"})
    assert grammar.accepts(text)


# -- request fields ------------------------------------------------------------------------------


def test_request_fields_per_spelling():
    schema = single_call_schema([add])
    assert request_fields(None, schema=schema) == {}
    assert request_fields("json_schema", schema=schema) == {
        "response_format": {"type": "json_schema", "json_schema": {"name": "action", "schema": schema, "strict": False}}}
    assert request_fields("json_object", schema=schema) == {"response_format": {"type": "json_object", "schema": schema}}
    assert request_fields("guided_json", schema=schema) == {"guided_json": schema}
    assert request_fields("grammar", grammar="root ::= \"x\"") == {"grammar": 'root ::= "x"'}
    assert request_fields("guided_grammar", grammar="root ::= \"x\"") == {"guided_grammar": 'root ::= "x"'}
    derived = request_fields("grammar", schema=schema)["grammar"]
    assert derived.startswith("root ::=") and '"\\"add\\""' in derived
    with pytest.raises(ValueError, match="one of"):
        request_fields("regex", schema=schema)
    with pytest.raises(ValueError, match="needs a JSON schema"):
        request_fields("json_object")
    assert set(PROBE_ORDER) <= set(SPELLINGS)


# -- the probe -----------------------------------------------------------------------------------


def test_probe_conformance_check():
    assert probe_conforms('{"animal": "zebra", "legs": 4}')
    assert probe_conforms(' {"animal":"zebra","legs":-1}\n')
    for text in ("The sea is blue.", '{"animal": "zebra"}', '{"animal": "zebra", "legs": true}',
                 '{"animal": "horse", "legs": 4}', '{"animal": "zebra", "legs": 4, "x": 1}'):
        assert not probe_conforms(text)
    assert Gbnf(schema_to_gbnf(PROBE_SCHEMA, use_llama_cpp=False)).accepts('{"animal": "zebra", "legs": 4}')


def test_probe_over_http_falls_back_in_order_and_says_why():
    import openai
    from openai_stub import OpenAIStub

    replies = [
        {"status": 400, "error": "Unsupported parameter: response_format.type json_schema"},
        "The sea is wide and blue.",  # json_object: the server ignored the field
        '{"animal": "zebra", "legs": 4}',  # grammar: honoured
    ]
    with OpenAIStub(replies) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=3)
        result = probe_constraint(sdk_sender(client, "m"))
        bodies = stub.requests
    assert result.spelling == "grammar"
    assert [s for s, _ in result.rejected] == ["json_schema", "json_object"]
    assert "HTTP 400" in result.rejected[0][1] and "json_schema" in result.rejected[0][1]
    assert "ignored" in result.rejected[1][1]
    assert "constrain='grammar'" in result.describe()
    # each request carries its spelling's fields exactly, and nothing of the others
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert bodies[0]["response_format"]["json_schema"]["schema"] == PROBE_SCHEMA
    assert bodies[1]["response_format"] == {"type": "json_object", "schema": PROBE_SCHEMA}
    assert "response_format" not in bodies[2] and bodies[2]["grammar"].startswith("root ::=")
    assert all("grammar" not in b for b in bodies[:2]) and len(bodies) == 3  # a 400 is not retried


def test_probe_does_not_retry_a_server_error():
    """llama-cpp-python answers json_schema with HTTP 500; the SDK would retry a 5xx, the probe must not."""
    import openai
    from openai_stub import OpenAIStub

    replies = [{"status": 500, "error": "Input should be 'text' or 'json_object'"}, '{"animal": "zebra", "legs": 4}']
    with OpenAIStub(replies) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=3)
        result = probe_constraint(sdk_sender(client, "m"))
        assert stub.responses == [500, 200]
    assert result.spelling == "json_object"
    assert result.rejected == (("json_schema", "HTTP 500: Input should be 'text' or 'json_object'"),)


def test_probe_that_finds_nothing_says_so():
    def send(messages, fields):
        return (500, "Internal Server Error") if "response_format" in fields else (200, "Waves.")

    result = probe_constraint(send)
    assert result.spelling is None
    assert [s for s, _ in result.rejected] == list(PROBE_ORDER)
    assert result.describe().startswith("no constraint spelling works")


# -- few-shot ------------------------------------------------------------------------------------


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return "Paris"


def test_fewshot_uses_a_real_tool_with_typed_arguments():
    assert example_arguments(add) == {"a": 3, "b": 5}
    assert example_arguments(capital_of) == {"country": "Canada"}
    assert set(example_arguments(paint)) == {"color", "where"}
    messages = fewshot_messages([capital_of, add], style="json")
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    call = json.loads(messages[1]["content"])
    assert call == {"name": "capital_of", "arguments": {"country": "Canada"}}
    final = json.loads(messages[3]["content"])
    assert final["name"] == "final_answer"
    assert messages[2]["content"] == f"Observation: {final['arguments']['answer']!r}"


@pytest.mark.parametrize("tools", [TOOLS, [capital_of], []])
def test_every_example_call_fits_the_schema_and_the_tool(tools):
    grammar = Gbnf(schema_to_gbnf(single_call_schema(tools), use_llama_cpp=False))
    by_name = tools_by_name(tools)
    for message in fewshot_messages(tools, style="json"):
        if message["role"] == "assistant":
            assert grammar.accepts(message["content"]), message["content"]
            code = to_call(message["content"], tools)
            tree = ast.parse(code).body[0].value
            if tree.func.id != "final_answer":
                by_name[tree.func.id](**{k.arg: ast.literal_eval(k.value) for k in tree.keywords})
    call_lines = [m["content"] for m in fewshot_messages(tools, style="call") if m["role"] == "assistant"]
    assert all(isinstance(ast.parse(line).body[0].value, ast.Call) for line in call_lines)
    code_text = fewshot_text(tools, style="code")
    assert code_text.startswith("Example:\nTask: ") and "<code>" in code_text


# -- llama.cpp's own parser, where llama-cpp-python is installed ----------------------------------


def test_grammars_load_in_llama_cpp():
    pytest.importorskip("llama_cpp")
    import constrain_grammar_check

    if not constrain_grammar_check.DEFAULT_MODEL.is_file():
        pytest.skip("no .models/ GGUF here (scripts/weak-model-e2e fetches it)")
    assert constrain_grammar_check.main([]) == 0


def test_to_call_takes_any_mapping():
    from types import MappingProxyType

    from codeagent.models.constrain.schemas import to_call

    assert to_call(MappingProxyType({"name": "add", "arguments": {"a": 1}})) == "add(a=1)"
