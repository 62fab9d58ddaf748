"""A tool call read from any dialect: the rule that tells a call from data, and its Python spelling.

The dialect readers (`dialects.py`) hand decoded JSON values here; `calls_in` says whether a value
is one call, several, or data. THE RULE (tests/test_dialects.py holds it with a hypothesis
property: no JSON document that is data ever becomes a call):

  An object is a call only when every one of its keys says so:
    - exactly one name key (`NAME_KEYS`) whose value is a string naming a Python identifier
      (a "functions." prefix is dropped; "Final Answer" and its spellings are `final_answer`);
    - at most one arguments key (`ARGUMENT_KEYS`) holding an object, a JSON string of an object,
      or null; ReAct's "action_input" / "tool_input" may hold any other value, which becomes the
      one positional argument. Arguments that are a JSON schema ({"type": "object",
      "properties": {...}}) are a tool's definition pasted back, not a call;
    - otherwise only bookkeeping (`BOOKKEEPING`): an id, an index, a thought in words, and
      "type" with a call's type ("function", "tool_use", ...).
  Bare JSON (anywhere in a reply) must have its arguments key: `{"name": "Paris"}` is data. Behind
  a dialect's marker (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, ...: the model's own
  tool-call tokens, which it writes only to call a tool) a missing arguments key means none.
  Wrappers hold calls: {"function": call}, {"function_call": call}, {"tool_call": call},
  {"functionCall": call}, and {"tool_calls": [calls]} (an assistant message written as text, with
  "role" / "content" beside it); a list is calls only when it is not empty and every item is one.
  Anything else is data, and nothing inside data is looked at: a quoted document, a dict given as
  an answer, a list of records never becomes a call, whatever its values hold.
"""

from __future__ import annotations

import difflib
import keyword
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from executors.base import FINAL_ANSWER_NAME

from .jsonscan import DECODER

__all__ = [
    "Call", "calls_in", "one_call", "call_name", "render_call", "json_source", "closest_name",
    "NAME_KEYS", "ARGUMENT_KEYS", "POSITIONAL_KEYS", "BOOKKEEPING",
]

# The keys that name the tool, and those that hold its arguments, in every spelling we know.
NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "action_input")
POSITIONAL_KEYS = frozenset({"tool_input", "action_input"})  # ReAct: "action_input": "Paris"
CALL_TYPES = frozenset({"function", "tool_use", "tool_call", "function_call"})
# key -> does this value fit? Keys that say nothing about what the call does.
BOOKKEEPING: dict[str, Callable[[Any], bool]] = {
    "type": lambda v: isinstance(v, str) and v in CALL_TYPES,
    "id": lambda v: isinstance(v, (str, int)),
    "index": lambda v: isinstance(v, int),
    "call_id": lambda v: isinstance(v, str),
    "tool_call_id": lambda v: isinstance(v, (str, int)),
    "thought": lambda v: isinstance(v, str),
    "reasoning": lambda v: isinstance(v, str),
}
# Wrapper key -> what sits beside it. {"tool_calls": [...]} is a message, with role and content.
_ONE_CALL_WRAPPERS = ("function", "function_call", "tool_call", "functionCall")
_WRAPPERS = frozenset((*_ONE_CALL_WRAPPERS, "tool_calls"))
_NAME_SET, _ARGUMENT_SET = frozenset(NAME_KEYS), frozenset(ARGUMENT_KEYS)
_MESSAGE_KEYS: dict[str, Callable[[Any], bool]] = {
    **BOOKKEEPING,
    "role": lambda v: isinstance(v, str) and v == "assistant",
    "content": lambda v: v is None or isinstance(v, str),
}


class Call(NamedTuple):
    """One tool call: its name, keyword arguments (decoded JSON) and positional ones."""

    name: str
    kwargs: Mapping[str, Any] = MappingProxyType({})
    args: tuple[Any, ...] = ()

    def source(self) -> str:
        """The call as one line of Python (the parser's spelling: keywords, repr'd literals)."""
        return render_call(self.name, self.kwargs, args=self.args)


def call_name(value: Any) -> str | None:
    """The tool a name value means, or None: `functions.add` is add, "Final Answer" final_answer."""
    if not isinstance(value, str):
        return None
    if value.isidentifier() and not keyword.iskeyword(value) and value[:1] not in "Ff":
        return value  # the common case, in one test
    name = value.strip().removeprefix("functions.")
    if name.replace(" ", "_").replace("-", "_").lower() == FINAL_ANSWER_NAME:
        return FINAL_ANSWER_NAME
    if not name.isidentifier() or keyword.iskeyword(name):
        return None
    return name


def calls_in(value: Any, marked: bool = False) -> list[Call] | None:
    """The calls `value` (decoded JSON) is, by the rule above; None when it is data."""
    if isinstance(value, dict):
        if not _WRAPPERS.isdisjoint(value):
            for key in _ONE_CALL_WRAPPERS:
                inner = value.get(key)
                if isinstance(inner, dict) and _only(value, key, BOOKKEEPING):
                    return calls_in(inner, marked=True)  # the wrapper says "call" as a marker does
            if isinstance(value.get("tool_calls"), list):
                return calls_in(value["tool_calls"], marked=True) if _only(value, "tool_calls", _MESSAGE_KEYS) else None
        call = one_call(value, marked)  # {"function": "add", "args": ...} names, not wraps
        return [call] if call else None
    if isinstance(value, list):
        calls: list[Call] = []
        for item in value:
            found = calls_in(item, marked)
            if not found:
                return None
            calls.extend(found)
        return calls or None
    return None


def _only(obj: dict, key: str, allowed: Mapping[str, Callable[[Any], bool]]) -> bool:
    """Is every key of `obj` but `key` an allowed one, with a fitting value?"""
    return all(k == key or (k in allowed and allowed[k](v)) for k, v in obj.items())


def one_call(obj: dict, marked: bool) -> Call | None:
    """The call `obj` is, when it is one call itself (not a wrapper of calls); else None."""
    name_key = key = None
    for k, v in obj.items():  # one name key, at most one arguments key, else bookkeeping
        if k in _NAME_SET:
            if name_key is not None:
                return None
            name_key = k
        elif k in _ARGUMENT_SET:
            if key is not None:
                return None
            key = k
        elif (check := BOOKKEEPING.get(k)) is None or not check(v):
            return None
    if name_key is None or (key is None and not marked):
        return None
    name = call_name(obj[name_key])
    if name is None:
        return None
    if key is None:
        return Call(name)
    arguments = obj[key]
    if isinstance(arguments, str):  # a JSON string of the arguments: "{\"a\": 1}"
        decoded = _decoded(arguments) if arguments.strip() else None
        if isinstance(decoded, dict) or decoded is None:
            arguments = decoded
        elif key not in POSITIONAL_KEYS:  # ReAct keeps its text input as it is
            return None
    if arguments is None:
        return Call(name)
    if isinstance(arguments, dict):
        if "properties" in arguments and _is_schema(arguments):
            return None  # {"name": "add", "parameters": {"type": "object", "properties": ...}}
        return Call(name, arguments)
    if key in POSITIONAL_KEYS:
        return Call(name, args=(arguments,))
    return None


def _decoded(text: str) -> Any:
    try:
        return DECODER.decode(text)
    except (ValueError, RecursionError):
        return text


def _is_schema(arguments: dict) -> bool:
    return arguments.get("type") == "object" and isinstance(arguments.get("properties"), dict)


def render_call(name: str, arguments: Mapping[str, Any], positional: Iterable[str] = (),
                args: tuple[Any, ...] = ()) -> str:
    """`name(k=v, ...)` from decoded JSON arguments: the one spelling of a call read from JSON.

    `final_answer`'s one argument goes by position; `positional`: parameter names passed by
    position (positional-only parameters); `args`: values passed by position before them. Keys
    that are not identifiers ("first-name", "class") still reach a `**kwargs` tool.
    """
    if name == FINAL_ANSWER_NAME and not args and len(arguments) == 1:
        return f"{FINAL_ANSWER_NAME}({json_source(next(iter(arguments.values())))})"
    parts = [json_source(a) for a in args] if args else []
    if positional := tuple(positional):
        parts += [json_source(arguments[p]) for p in positional if p in arguments]
    odd: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in positional:
            continue
        if key.isidentifier() and not keyword.iskeyword(key):
            kind = type(value)  # str and int inline: this loop is most of the JSON tier's time
            parts.append(f"{key}={repr(value) if kind is str or kind is int else json_source(value)}")
        else:
            odd[key] = value
    if odd:
        parts.append(f"**{json_source(odd)}")
    return f"{name}({', '.join(parts)})"


def json_source(value: Any, scalar: Callable[[Any], str] = repr) -> str:
    """A decoded JSON value as Python source (true→True, null→None, NaN→float('nan')); `scalar`
    writes strings, numbers, booleans and None."""
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool:
        return scalar(value)
    if kind is float and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(json_source(v, scalar) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json_source(k, scalar)}: {json_source(v, scalar)}" for k, v in value.items()) + "}"
    return scalar(value)


def closest_name(name: str, names: Collection[str]) -> str | None:
    """The name a misspelled or shortened one most likely meant (`capital` -> `capital_of`)."""
    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    if found:
        return found[0]
    prefixed = [n for n in names if name and (n.startswith(name) or name.startswith(n))]
    return prefixed[0] if len(prefixed) == 1 else None
