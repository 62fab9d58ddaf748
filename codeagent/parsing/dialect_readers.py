"""The readers behind the dialect table: one function per way of writing a call in text.

A reader takes the reply and returns the calls it found (`calls.Call`, through `calls.calls_in`,
so every dialect obeys the one rule), or Python source when the dialect is Python already
(`<|python_tag|>` code, Llama 4's pythonic list), or None when its dialect is not there. Readers
never guess: each starts from its dialect's own marker, and values that are not calls are dropped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from .calls import Call, calls_in
from .jsonscan import DECODER, decode_at, values_after, values_in
from .syntax import looks_like_code, try_parse

__all__ = [
    "Reading", "json_after", "bare_json", "mistral", "python_tag", "pythonic_between", "function_tags",
    "glm", "deepseek", "named_json", "kimi", "harmony", "functionary", "function_gemma", "apertus", "react",
]

Reading = list[Call] | str  # calls, or Python source
Reader = Callable[[str], Reading | None]


def _collect(values: list[Any], marked: bool, into: list[Call]) -> None:
    for value in values:
        found = calls_in(value, marked)
        if found:
            into.extend(found)


def _call(name: str, arguments: Any) -> list[Call]:
    return calls_in({"name": name, "arguments": arguments}, marked=True) or []


def _bodies(text: str, opener: str, close: str):
    """What follows each `opener`, up to `close`, the next `opener` or the end, whichever comes
    first. Each search starts where the last one ended: many unclosed tags cost one pass."""
    close_at = -2  # not searched yet; -1: there is none after here
    i = text.find(opener)
    while i >= 0:
        start = i + len(opener)
        nxt = text.find(opener, start)
        if close_at != -1 and close_at < start:
            close_at = text.find(close, start)
        stops = [j for j in (close_at, nxt) if j >= 0]
        yield text[start : min(stops) if stops else len(text)]
        i = nxt


def _pairs(body: str, key_open: str, key_close: str, value_open: str, value_close: str) -> dict[str, Any]:
    """`<k>name</k><v>value</v>` pairs, in one pass of `find` (no regex to backtrack)."""
    out: dict[str, Any] = {}
    i = body.find(key_open)
    while i >= 0:
        k0 = i + len(key_open)
        k1 = body.find(key_close, k0)
        v0 = body.find(value_open, k1 + len(key_close)) if k1 >= 0 else -1
        v1 = body.find(value_close, v0 + len(value_open)) if v0 >= 0 else -1
        if v1 < 0:
            break
        out[body[k0:k1].strip()] = _text_value(body[v0 + len(value_open) : v1])
        i = body.find(key_open, v1)
    return out


def _occurrences(text: str, marker: str):
    """The position right after each occurrence of `marker`."""
    i = text.find(marker)
    while i >= 0:
        yield i + len(marker)
        i = text.find(marker, i + len(marker))


def json_after(*markers: str) -> Reader:
    """JSON calls right after a marker (`<tool_call>{...}`, `functools[...]`, `<|plugin|>{...}`)."""

    def read(text: str) -> Reading | None:
        calls: list[Call] = []
        for marker in markers:
            i = text.find(marker)
            while i >= 0:  # the hot loop of the most common dialects: no generator
                i += len(marker)
                _collect(values_after(text, i), True, calls)
                i = text.find(marker, i)
        return calls or None

    return read


def bare_json(text: str) -> Reading | None:
    """JSON calls with no marker, wherever they start (a line, a fence, mid-sentence)."""
    calls: list[Call] = []
    _collect(list(values_in(text)), False, calls)
    return calls or None


_NAME = r"[A-Za-z_][\w.\-]*"
_MISTRAL_NAMED = re.compile(rf"\s*({_NAME})(?:\[CALL_ID\][A-Za-z0-9_\-]*)?(?:\[ARGS\])?\s*(?=\{{)")


def mistral(text: str) -> Reading | None:
    """`[TOOL_CALLS][{...}]` (v3, Nemo), `[TOOL_CALLS]name{...}`, `[TOOL_CALLS]name[ARGS]{...}` (v11+)."""
    calls: list[Call] = []
    for pos in _occurrences(text, "[TOOL_CALLS]"):
        _collect(values_after(text, pos), True, calls)
        while (m := _MISTRAL_NAMED.match(text, pos)) is not None:  # name{args}, name{args}, ...
            got = decode_at(text, m.end())  # (once: the arguments, and where the next call starts)
            if got is None:
                break
            calls.extend(_call(m.group(1), got[0]))
            pos = got[1]
            while pos < len(text) and text[pos] in " \t\n,":
                pos += 1
    return calls or None


_LLAMA_END = ("<|eom_id|>", "<|eot_id|>", "<|python_end|>")


def python_tag(text: str) -> Reading | None:
    """Llama 3.x `<|python_tag|>`: JSON calls, a built-in `brave_search.call(query=...)`, or code."""
    pos = text.find("<|python_tag|>") + len("<|python_tag|>")
    calls: list[Call] = []
    _collect(values_after(text, pos), True, calls)
    if calls:
        return calls
    code = text[pos:]
    for end in _LLAMA_END:
        code = code.split(end, 1)[0]
    tree = try_parse(code.strip())
    if tree is None or not looks_like_code(tree):
        return None
    for stmt in tree.body:  # `brave_search.call(query="x")` is the tool brave_search
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "call" \
                and isinstance(value.func.value, ast.Name):
            value.func = value.func.value
    return ast.unparse(tree)


class _JsonConstants(ast.NodeTransformer):
    """Olmo 3 writes `true` / `false` / `null` in its Python calls."""

    VALUES = {"true": True, "false": False, "null": None}

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.VALUES:
            return ast.copy_location(ast.Constant(self.VALUES[node.id]), node)
        return node


def pythonic_between(open_tag: str, close_tag: str) -> Reader:
    """Python calls between two tags (`<|python_start|>[f(x=1)]<|python_end|>`), as code."""

    def read(text: str) -> Reading | None:
        blocks = []
        for body in _bodies(text, open_tag, close_tag):
            tree = try_parse(body.strip())
            if tree is not None and looks_like_code(tree):
                blocks.append(ast.unparse(_JsonConstants().visit(tree)))
        return "\n".join(blocks) or None

    return read


_FUNCTION_HEAD = re.compile(rf"(?:=|\s+name\s*=\s*\")({_NAME})\"?>")


def function_tags(text: str) -> Reading | None:
    """`<function=name>{...}</function>` (Llama 3.1 custom, functionary v3.1, Hermes) and
    `<function=name><parameter=k>v</parameter></function>` (Qwen3-Coder, Seed-OSS)."""
    calls: list[Call] = []
    for tag in _bodies(text, "<function", "</function>"):
        m = _FUNCTION_HEAD.match(tag)
        if m is None:
            continue
        body = tag[m.end() :]
        values = values_after(body, 0)
        if values:
            calls.extend(_call(m.group(1), values[0]))
        else:
            calls.extend(_call(m.group(1), _pairs(body, "<parameter=", ">", "", "</parameter>")))
    return calls or None


def _text_value(raw: str) -> Any:
    """An argument written as text in an XML-ish dialect: JSON when it decodes, else the text."""
    value = raw.removeprefix("\n").removesuffix("\n")
    try:
        return DECODER.decode(value)
    except (ValueError, RecursionError):
        return value


_GLM_HEAD = re.compile(rf"\s*({_NAME})\s*(?:<arg_key>|$)")


def glm(text: str) -> Reading | None:
    """GLM-4.5+: `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`."""
    calls: list[Call] = []
    for body in _bodies(text, "<tool_call>", "</tool_call>"):
        m = _GLM_HEAD.match(body)
        if m:
            calls.extend(_call(m.group(1), _pairs(body, "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")))
    return calls or None


_DEEPSEEK_SEP = "<｜tool▁sep｜>"


def deepseek(text: str) -> Reading | None:
    """DeepSeek V3 / R1: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>name\\n```json\\n{...}\\n```…`;
    V3.1: `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`."""
    calls: list[Call] = []
    for pos in _occurrences(text, _DEEPSEEK_SEP):
        sep = pos - len(_DEEPSEEK_SEP)
        start = max(0, sep - 200)  # a name is short: never scan far back
        k = text.rfind("｜>", start, sep)  # the end of the token before: <｜tool▁call▁begin｜>
        head = text[k + 2 if k >= 0 else start : sep].strip().rsplit("\n", 1)[-1]
        if head == "function":  # V3: the name is the rest of the line, a ```json fence follows
            nl = text.find("\n", pos)
            head, pos = text[pos : nl if nl >= 0 else len(text)].strip(), (nl if nl >= 0 else len(text))
        values = values_after(text, pos)
        if values:
            calls.extend(_call(head, values[0]))
    return calls or None


def named_json(pattern: re.Pattern[str], skip: frozenset[str] = frozenset()) -> Reader:
    """A name the pattern captures, then the JSON arguments right after the match."""

    def read(text: str) -> Reading | None:
        calls: list[Call] = []
        for m in pattern.finditer(text):
            values = values_after(text, m.end()) if m.group(1) not in skip else None
            if values:
                calls.extend(_call(m.group(1), values[0]))
        return calls or None

    return read


# Kimi K2: `<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{...}<|tool_call_end|>`.
kimi = named_json(re.compile(rf"<\|tool_call_begin\|>\s*({_NAME})(?::\d+)?\s*<\|tool_call_argument_begin\|>"))
# gpt-oss (harmony): `<|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|>`.
harmony = named_json(re.compile(rf"to=functions\.({_NAME})[\s\S]{{0,80}}?<\|message\|>"))
# functionary v3.2: `>>>name\n{...}` (the first call may come without `>>>`; `>>>all\n` is text).
functionary = named_json(re.compile(rf"(?:\A|>>>)({_NAME})\n(?=\s*\{{)"), skip=frozenset({"all"}))


def function_gemma(text: str) -> Reading | None:
    """FunctionGemma: `<start_function_call>call:name{k:<escape>text<escape>,n:3}<end_function_call>`."""
    calls: list[Call] = []
    for body in _bodies(text, "<start_function_call>", "<end_function_call>"):
        body = body.strip()
        name, brace, rest = body.removeprefix("call:").partition("{")
        if body.startswith("call:") and brace and rest.rstrip().endswith("}"):
            calls.extend(_call(name.strip(), _gemma_arguments(rest.rstrip()[:-1])))
    return calls or None


def _gemma_arguments(body: str) -> dict[str, Any]:
    """`k:<escape>text<escape>,n:3`: text between <escape> marks as it is, other values as JSON."""
    out: dict[str, Any] = {}
    i, n, mark = 0, len(body), "<escape>"
    while (colon := body.find(":", i)) >= 0:
        key, j = body[i:colon].strip(), colon + 1
        if body.startswith(mark, j):
            close = body.find(mark, j + len(mark))
            if close < 0:
                break
            value: Any = body[j + len(mark) : close]
            i = close + len(mark)
        else:
            comma = body.find(",", j)
            i = n if comma < 0 else comma
            value = _text_value(body[j:i].strip())
        if key:
            out[key] = value
        i = body.find(",", i)
        if i < 0:
            break
        i += 1
    return out


def apertus(text: str) -> Reading | None:
    """Apertus: `<|tools_prefix|>[{"name": {arguments}}, ...]<|tools_suffix|>`, one key per object."""
    calls: list[Call] = []
    for pos in _occurrences(text, "<|tools_prefix|>"):
        for value in values_after(text, pos):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict) and len(item) == 1:
                    ((name, arguments),) = item.items()
                    calls.extend(_call(name, arguments))
    return calls or None


_REACT = re.compile(
    r"^[ \t]*(?:Action|✿FUNCTION✿)[ \t]*:[ \t]*[`'\"]?([^\n`'\"]+?)[`'\"]?[ \t]*\n"
    r"[ \t]*(?:Action[ \t]+Input|✿ARGS✿)[ \t]*:[ \t]*", re.M)


def react(text: str) -> Reading | None:
    """ReAct text (LangChain, Qwen-Agent): `Action: name` then `Action Input: {...}` or text;
    Qwen-Agent's `✿FUNCTION✿: name` / `✿ARGS✿: {...}`."""
    calls: list[Call] = []
    for m in _REACT.finditer(text):
        values = values_after(text, m.end())
        if values:
            value: Any = values[0]
        else:
            nl = text.find("\n", m.end())
            line = text[m.end() : nl if nl >= 0 else len(text)].strip()
            value = _text_value(line) if line[:1] == '"' else (line or None)
            if value in ("None", "none", "{}"):
                value = None
        calls.extend(calls_in({"action": m.group(1), "action_input": value}, marked=True) or ())
    return calls or None
