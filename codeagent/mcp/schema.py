"""An MCP tool's JSON schemas as a Python signature: what the model reads, and what pydantic checks.

`signature_of(input_schema)` turns the tool's `inputSchema` into an `inspect.Signature` whose
annotations are real types (`str`, `int | None`, `list[str]`, `Literal["a", "b"]`, ...), so the
`Tool` machinery validates the arguments with pydantic before the call, renders the stub in the
prompt, and derives the constrained-decoding and function-calling schemas, as for a typed Python
function. Property names that are not Python identifiers (`user-id`, `from`) become ones
(`user_id`, `from_`); `Parameter.wire` maps them back for the call.

Nested objects become `dict[str, Any]` (their shape is in the description instead) and anything
this mapping does not know becomes `Any`: the server validates again and answers with an error
the model reads, so a schema feature left open costs a round trip, never a wrong call.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from dataclasses import dataclass
from typing import Any, Literal, Union

__all__ = ["Parameters", "signature_of", "python_name", "returns_of", "describe", "unwrapped_result"]

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
_MAX_DEPTH = 8  # $ref chains and nesting deeper than this are left open (Any)
_MAX_SHOWN = 300  # characters of a nested schema shown in the description


def python_name(name: str, *, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """`name` as a public Python identifier: `get-weather` -> `get_weather`, `from` -> `from_`."""
    text = re.sub(r"\W", "_", name).strip("_") or "x"
    if text[0].isdigit():
        text = f"x{text}"
    if keyword.iskeyword(text) or keyword.issoftkeyword(text) or text == "final_answer":
        text += "_"
    base, n = text, 2
    while text in taken:
        text, n = f"{base}_{n}", n + 1
    return text


@dataclass(frozen=True)
class Parameters:
    """A tool's signature, and the wire name of each parameter (python name -> schema name)."""

    signature: inspect.Signature
    wire: dict[str, str]
    schemas: dict[str, dict[str, Any]]  # python name -> its property schema (for the description)


def signature_of(input_schema: Any, returns: Any = inspect.Signature.empty) -> Parameters:
    """The Python signature of an `inputSchema`: required properties first, in the schema's order,
    then the optional ones with their schema default (None when it has none)."""
    schema = input_schema if isinstance(input_schema, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or ()) & set(properties)
    wire: dict[str, str] = {}
    schemas: dict[str, dict[str, Any]] = {}
    first: list[inspect.Parameter] = []
    rest: list[inspect.Parameter] = []
    for prop, sub in properties.items():
        sub = sub if isinstance(sub, dict) else {}
        name = python_name(str(prop), taken=set(wire))
        wire[name] = str(prop)
        schemas[name] = sub
        annotation = type_of(sub, schema)
        if prop in required:
            first.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation))
        else:
            default = sub.get("default")
            optional = annotation if default is not None or _allows_none(annotation) else annotation | None
            rest.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                          annotation=optional))
    return Parameters(inspect.Signature([*first, *rest], return_annotation=returns), wire, schemas)


def _allows_none(annotation: Any) -> bool:
    return annotation is Any or annotation is type(None) or type(None) in getattr(annotation, "__args__", ())


def type_of(schema: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """The Python type of one JSON schema (see the module docstring for what stays open)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return Any
    if "$ref" in schema:
        return type_of(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema and _literal_ok(schema["const"]):
        return Literal[schema["const"]]  # type: ignore[valid-type]
    if isinstance(schema.get("enum"), list) and schema["enum"] and all(_literal_ok(v) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]  # type: ignore[valid-type]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _union([type_of(s, root, depth + 1) for s in schema[key]])
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([type_of({**schema, "type": k}, root, depth + 1) for k in kind])
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return list[type_of(items, root, depth + 1)] if isinstance(items, dict) and items else list[Any]
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra and not schema.get("properties"):
            return dict[str, type_of(extra, root, depth + 1)]  # type: ignore[misc]
        return dict[str, Any]
    return Any


def _literal_ok(value: Any) -> bool:
    return type(value) in (str, int, bool) or value is None


def _union(types: list[Any]) -> Any:
    if Any in types:
        return Any
    unique = list(dict.fromkeys(types))
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007 (a runtime tuple)


def _resolve(ref: Any, root: dict[str, Any]) -> Any:
    """A local `#/$defs/Name` (or `#/definitions/...`) reference; anything else stays open."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return {}
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict):
            return {}
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node if isinstance(node, dict) else {}


def unwrapped_result(output_schema: Any) -> bool:
    """Whether structured results come as `{"result": value}`: how the SDK's servers wrap a tool
    that returns a scalar or a list (an object schema whose one required property is `result`)."""
    if not isinstance(output_schema, dict):
        return False
    props = output_schema.get("properties")
    return isinstance(props, dict) and list(props) == ["result"] and output_schema.get("required") == ["result"]


def returns_of(output_schema: Any) -> Any:
    """The return annotation the prompt shows: the structured type, else str (the joined text)."""
    if not isinstance(output_schema, dict) or not output_schema:
        return str
    if unwrapped_result(output_schema):
        return type_of(output_schema["properties"]["result"], output_schema)
    return type_of({**output_schema, "type": output_schema.get("type", "object")}, output_schema)


def describe(description: str, params: Parameters, output_schema: Any) -> str:
    """The tool's docstring: the server's description, then one line per argument (its own
    description, and the schema of the nested ones), then the keys of a structured result."""
    lines = [description.strip() or "(no description)"]
    args = []
    for name, sub in params.schemas.items():
        text = str(sub.get("description") or "").strip()  # a title ("Min Length") says nothing new
        if _nested(sub):
            shape = json.dumps({k: v for k, v in sub.items() if k not in ("description", "title")})
            text = f"{text} Schema: {shape[:_MAX_SHOWN]}{'...' if len(shape) > _MAX_SHOWN else ''}".strip()
        if text:
            args.append(f"    {name}: {' '.join(text.split())}")
    if args:
        lines += ["", "Args:", *args]
    keys = _result_keys(output_schema)
    if keys:
        lines += ["", f"Returns a dict with keys: {keys}."]
    return "\n".join(lines)


def _nested(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    return kind == "object" and bool(schema.get("properties")) or kind == "array" and items.get("type") == "object" \
        or "$ref" in schema or "$ref" in items


def _result_keys(output_schema: Any) -> str:
    if not isinstance(output_schema, dict) or unwrapped_result(output_schema):
        return ""
    props = output_schema.get("properties")
    if not isinstance(props, dict) or not props:
        return ""
    return ", ".join(f"{k} ({_kind(v)})" for k, v in props.items())


def _kind(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("$ref"), str):
        return f"{schema['$ref'].rsplit('/', 1)[-1]} object"
    return str(schema.get("type", "any"))
