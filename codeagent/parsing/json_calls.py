"""Turn JSON tool calls into Python calls, so a model trained on function calling still acts.

Accepted shapes (alone, in a list, several in a row, or in `<tool_call>…</tool_call>`):
  {"name": "add", "arguments": {"a": 1}}            arguments may also be a JSON string,
  {"name": "add", "parameters": {"a": 1}}           or be called "args" / "input"
  {"type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}}
  {"tool_calls": [...]}
"""

from __future__ import annotations

import json
import keyword

from executors.base import FINAL_ANSWER_NAME


class _NonFinite(float):
    """NaN/Infinity from JSON, spelled so that its repr is valid Python."""

    def __repr__(self) -> str:
        return f"float({float.__repr__(self)!r})"


# repr() of what this decoder returns is a Python literal, containers included.
_DECODER = json.JSONDecoder(parse_constant=lambda s: _NonFinite(s.replace("Infinity", "inf")))
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_TOOL_CALL_OPEN = "<tool_call>"
_TOOL_CALL_CLOSE = "</tool_call>"


def tool_calls_to_code(text: str) -> str | None:
    """Python code for the JSON tool calls in `text` (one call a line), or None."""
    calls: list[str] = []
    for value in _json_values(text):
        _collect(value, calls)
    if not calls:
        for value in _inline_objects(text):  # "I will call {"name": ...}" mid-sentence
            _collect(value, calls)
    return "\n".join(calls) if calls else None


def _inline_objects(text: str, limit: int = 50):
    """Objects starting anywhere in a line: the first `limit` braces that decode."""
    pos, tries = text.find("{"), 0
    while pos >= 0 and tries < limit:
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            end = pos + 1
        else:
            yield value
        pos = text.find("{", end)


def _json_values(text: str):
    """JSON objects/arrays that start a line (or a <tool_call> block); a linear scan."""
    if _TOOL_CALL_OPEN in text:
        chunks = []
        pos = 0
        while (i := text.find(_TOOL_CALL_OPEN, pos)) >= 0:
            start = i + len(_TOOL_CALL_OPEN)
            j = text.find(_TOOL_CALL_CLOSE, start)
            chunks.append(text[start : j if j >= 0 else len(text)])
            pos = j + len(_TOOL_CALL_CLOSE) if j >= 0 else len(text)
    else:
        chunks = [text]
    for chunk in chunks:
        pos, n = 0, len(chunk)
        while pos < n:
            # next candidate: the first non-blank character of a line
            while pos < n and chunk[pos] in " \t\n":
                pos += 1
            if pos >= n:
                break
            if chunk[pos] in "{[":
                try:
                    value, end = _DECODER.raw_decode(chunk, pos)
                except json.JSONDecodeError as err:
                    pos = max(pos, err.pos)  # what starts inside a broken value is part of it
                except (ValueError, RecursionError):
                    pass
                else:
                    yield value
                    pos = end
                    continue
            nl = chunk.find("\n", pos)
            if nl < 0:
                break
            pos = nl + 1


def _collect(value, calls: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _collect(item, calls)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("tool_calls"), list):
        _collect(value["tool_calls"], calls)
        return
    if isinstance(value.get("function"), dict):
        value = value["function"]
    call = _render_call(value)
    if call:
        calls.append(call)


def _render_call(obj: dict) -> str | None:
    name = obj.get("name")
    if not isinstance(name, str):
        return None
    name = name.removeprefix("functions.")
    if not name.isidentifier() or keyword.iskeyword(name):
        return None
    args = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    if isinstance(args, str):
        try:
            args = _DECODER.decode(args) if args.strip() else {}
        except ValueError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    try:
        if name == FINAL_ANSWER_NAME and len(args) == 1:
            return f"{FINAL_ANSWER_NAME}({_literal(next(iter(args.values())))})"
        plain, odd = [], {}
        for key, value in args.items():
            if key.isidentifier() and not keyword.iskeyword(key):
                plain.append(f"{key}={value!r}")
            else:
                odd[key] = value
        if odd:  # keys that are not identifiers ("first-name", "class") still reach the tool
            plain.append(f"**{_literal(odd)}")
    except RecursionError:
        return None
    return f"{name}({', '.join(plain)})"


def _literal(value) -> str:
    """Python source for a decoded JSON value (true→True, null→None, NaN→float('nan'))."""
    return repr(value)
