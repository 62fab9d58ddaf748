"""JSON schemas that make a weak model's wrong answers impossible to write.

`single_call_schema(tools)`: one object per reply, `{"name": <tool>, "arguments": {...}}`, as a
`oneOf` with one branch per tool (and one for `final_answer`); each branch pins the name with
`const` and closes the arguments to that tool's signature. A flat schema (a name enum beside free
arguments) was measured not to help SmolLM2-135M; per-tool branches do (see
benchmarks/constrained_probe.py).

`to_call(instance)` renders a reply that fits the schema as the one line of Python the agent runs:
the object is read by the parser's one rule for calls (`codeagent.parsing.calls`, so `{"tool": ...}`
and the other spellings of the dialect table are read too) and spelled as the parser spells it.

`code_action_schema()` / `code_action_text(instance)`: `{"thought": str, "code": str}` for the
CodeAgent, rendered back into the usual "Thought + tagged code block" text so that the code still
goes through `parse_code` and the executor's policy.

Pure functions over `Tool`'s public attributes (name, signature); nothing here calls a model.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter

from ...parsing.calls import calls_in, json_source, render_call
from ...tools.tool import Tool, tools_by_name

__all__ = [
    "FINAL_ANSWER",
    "SCALAR_ANSWER_SCHEMA",
    "NAME_KEY",
    "ARGUMENTS_KEY",
    "parameter_schema",
    "arguments_schema",
    "single_call_schema",
    "code_action_schema",
    "code_action_text",
    "final_answer_arguments",
    "to_call",
    "render_call",
    "python_literal",
]

FINAL_ANSWER = "final_answer"
# "name" + "arguments": the spelling function-calling models are trained on, and the one the
# parser's JSON tier already reads, so a constrained reply needs no new parsing path.
NAME_KEY = "name"
ARGUMENTS_KEY = "arguments"
_ANY: dict[str, Any] = {}
# A final answer a weak model can write: text, a number or a yes/no. With any JSON value allowed,
# SmolLM2-135M answers `{"hello": "world"}` or `{}` (measured: benchmarks/constrained_probe.py).
SCALAR_ANSWER_SCHEMA: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}


def parameter_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema of one annotation (pydantic's), `{}` (any JSON value) when it has none.

    Nested models keep their `$defs` (`arguments_schema` hoists them to the top) and are closed
    to undeclared keys.
    """
    if annotation is inspect.Parameter.empty or isinstance(annotation, str):
        return dict(_ANY)
    try:
        schema = TypeAdapter(annotation).json_schema()
    except Exception:  # an annotation pydantic cannot describe: leave the value open
        return dict(_ANY)
    schema.pop("title", None)
    return _closed(schema)


def _closed(node: Any) -> Any:
    """Objects with declared properties take no other keys (pydantic would drop them anyway):
    a weak model must not spend its tokens on keys nothing reads."""
    if isinstance(node, list):
        return [_closed(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):  # maps of name -> schema
            out[key] = {name: _closed(sub) for name, sub in value.items()}
        elif key in ("const", "enum", "default", "examples"):  # values, not schemas
            out[key] = value
        else:
            out[key] = _closed(value)
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def arguments_schema(tool: Tool, defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A closed object schema for the keyword arguments of `tool`.

    Required: the parameters without a default. `*args` cannot be written as keywords and is left
    out; `**kwargs` opens the object to extra keys of its value type. Nested `$defs` go into `defs`
    (renamed on a clash, with their `$ref`s rewritten), or stay inline when `defs` is None.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra: Any = False
    for p in tool.signature.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            continue
        schema = parameter_schema(p.annotation)
        if defs is not None:
            schema = _hoist_defs(schema, defs, prefix=tool.name)
        if p.kind is p.VAR_KEYWORD:
            extra = schema or True
            continue
        properties[p.name] = schema
        if p.default is p.empty:
            required.append(p.name)
    out: dict[str, Any] = {"type": "object", "properties": properties, "required": required,
                           "additionalProperties": extra}
    return out


def _branch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {NAME_KEY: {"const": name}, ARGUMENTS_KEY: arguments},
        "required": [NAME_KEY, ARGUMENTS_KEY],
        "additionalProperties": False,
    }


def final_answer_arguments(answer_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    answer = dict(answer_schema) if answer_schema is not None else dict(_ANY)
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"],
            "additionalProperties": False}


def single_call_schema(
    tools: Iterable[Any] | Mapping[str, Any],
    *,
    answer_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`{"oneOf": [one branch per tool, final_answer]}` (plus `$defs` when a tool needs them).

    answer_schema: what `final_answer`'s `answer` may be; default any JSON value.
    """
    defs: dict[str, Any] = {}
    branches = [_branch(t.name, arguments_schema(t, defs)) for t in tools_by_name(tools).values()]
    branches.append(_branch(FINAL_ANSWER, final_answer_arguments(answer_schema)))
    schema: dict[str, Any] = {"oneOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def code_action_schema() -> dict[str, Any]:
    """The CodeAgent's reply as JSON: a thought, then the code (one string each)."""
    return {
        "type": "object",
        "properties": {"thought": {"type": "string"}, "code": {"type": "string"}},
        "required": ["thought", "code"],
        "additionalProperties": False,
    }


def code_action_text(instance: Any, tags: tuple[str, str] = ("<code>", "</code>")) -> str:
    """A `code_action_schema` reply as the text the CodeAgent's parser reads (Thought + tagged block)."""
    if not isinstance(instance, Mapping) or not isinstance(instance.get("code"), str):
        raise ValueError('the reply must be a JSON object {"thought": "...", "code": "..."}')
    thought = str(instance.get("thought") or "").strip()
    open_tag, close_tag = tags
    head = f"Thought: {thought}\n" if thought else ""
    return f"{head}{open_tag}\n{instance['code'].strip(chr(10))}\n{close_tag}"


def to_call(instance: Any, tools: Iterable[Any] | Mapping[str, Any] | None = None) -> str:
    """One single-call reply (`{"name": ..., "arguments": {...}}`) as a line of Python.

    Any spelling of one call that the parser reads is accepted (`{"tool": ...}`, `{"action",
    "action_input"}`, ...). The spelling is the parser's JSON tier's: keyword arguments
    `k=repr(v)`, and `final_answer`'s one argument positional. With `tools`, positional-only
    parameters are passed by position (a keyword would not bind). Raises ValueError, with a message
    for the model, on any other shape.
    """
    if isinstance(instance, str):
        try:
            instance = json.loads(instance)
        except ValueError:
            raise ValueError(_SHAPE_LESSON) from None
    calls = calls_in(dict(instance), marked=True) if isinstance(instance, Mapping) else None
    if not calls or len(calls) != 1:
        arguments = instance.get(ARGUMENTS_KEY) if isinstance(instance, Mapping) else None
        if isinstance(instance, Mapping) and ARGUMENTS_KEY in instance and not isinstance(arguments, Mapping):
            raise ValueError(f'"{ARGUMENTS_KEY}" must be a JSON object of the arguments of the tool.')
        raise ValueError(_SHAPE_LESSON)
    (call,) = calls
    positional: tuple[str, ...] = ()
    if tools is not None:
        tool = tools_by_name(tools).get(call.name)
        if tool is not None:
            positional = tuple(p.name for p in tool.signature.parameters.values()
                               if p.kind is p.POSITIONAL_ONLY)
    return render_call(call.name, call.kwargs, positional, call.args)


_SHAPE_LESSON = (
    f'Reply with one JSON object: {{"{NAME_KEY}": "<tool name>", "{ARGUMENTS_KEY}": {{...}}}}, '
    f'or {{"{NAME_KEY}": "{FINAL_ANSWER}", "{ARGUMENTS_KEY}": {{"answer": ...}}}} when you know the answer.'
)


def _hoist_defs(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Move `schema`'s `$defs` into `defs`; a name already taken by another schema gets a prefix."""
    local = schema.pop("$defs", None)
    if not local:
        return schema
    renames: dict[str, str] = {}
    for key, value in local.items():
        new = key
        if key in defs and defs[key] != value:
            new = f"{prefix}__{key}"
            while new in defs and defs[new] != value:
                new += "_"
        renames[key] = new
    for key, value in local.items():
        defs[renames[key]] = _rewrite_refs(value, renames)
    return _rewrite_refs(schema, renames)


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                v = "#/$defs/" + renames.get(v[len("#/$defs/"):], v[len("#/$defs/"):])
            out[k] = _rewrite_refs(v, renames)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v, renames) for v in node]
    return node


def python_literal(value: Any) -> str:
    """A decoded JSON value as a Python literal with double-quoted strings (`city="Paris"`): the
    spelling the single-call prompt's examples and its grammar use."""
    return json_source(value, _double_quoted)


def _double_quoted(value: Any) -> str:
    if value is True or value is False or value is None:
        return repr(value)
    return json.dumps(value, ensure_ascii=False)
