"""GBNF grammars (llama.cpp's grammar format) for constrained decoding.

`schema_to_gbnf(schema)`: a grammar whose every sentence is a JSON text of the schema, for the
subset the constraint schemas use: objects with fixed keys (required ones first, in order, then
the optional ones, in order), strings, integers, numbers, booleans, null, `enum` / `const`, arrays
(`items`, `prefixItems`), `oneOf` / `anyOf`, `type` lists, `$ref` into `$defs`, and `{}` (any JSON
value). What it does not know (string formats, numeric bounds, `minItems`, `pattern`, `allOf`)
makes the grammar *looser*, never stricter: the reply is still validated after decoding. When
llama-cpp-python is importable, its own converter (`llama_cpp.llama_grammar.json_schema_to_gbnf`,
llama.cpp's json-schema-to-grammar) is used instead, unless `use_llama_cpp=False`.

`code_action_grammar(...)`: "Thought: <one line>", then one code block between the agent's tags,
where the block ends at the first closing tag (nothing can follow it).

Whitespace between JSON tokens is at most one space: small models otherwise pad with newlines
until `max_tokens` runs out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_to_gbnf", "single_call_grammar", "code_action_grammar", "gbnf_literal", "JSON_VALUE_RULES"]

_PRIMITIVES: dict[str, str] = {
    "space": '" "?',
    "char": r'[^"\\\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
    "string": r'"\"" char* "\"" space',
    "integral-part": '"0" | [1-9] [0-9]*',
    "integer": '"-"? integral-part space',
    "number": '"-"? integral-part ("." [0-9]+)? ([eE] [-+]? [0-9]+)? space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" space (string ":" space value ("," space string ":" space value)*)? "}" space',
    "array": '"[" space (value ("," space value)*)? "]" space',
}
# the rules each primitive needs besides itself
_NEEDS: dict[str, tuple[str, ...]] = {
    "string": ("char", "space"),
    "integer": ("integral-part", "space"),
    "number": ("integral-part", "space"),
    "boolean": ("space",),
    "null": ("space",),
    "value": ("object", "array", "string", "number", "boolean", "null"),
    "object": ("string", "value", "space"),
    "array": ("value", "space"),
}
JSON_VALUE_RULES = _PRIMITIVES  # exposed for tests and for grammars built on top of these

# The same values written as Python literals (for a one-line call in the agent's own format):
# True/False/None, and strings in double quotes whose escapes JSON and Python share.
_PY_PRIMITIVES: dict[str, str] = {
    **_PRIMITIVES,
    "boolean": '("True" | "False") space',
    "null": '"None" space',
    # no `\/`: Python keeps that backslash
    "char": r'[^"\\\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
}


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable():  # controls, and line breaks such as U+0085 and U+2028
            out.append(_class_char(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _class_char(ch: str) -> str:
    """One character inside a [...] class: letters and digits as is, anything else escaped by code."""
    if ch.isascii() and ch.isalnum():
        return ch
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


class _Converter:
    primitives = _PRIMITIVES

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.root = schema
        self.rules: dict[str, str] = {}
        self.names_by_body: dict[str, str] = {}
        self.refs: dict[str, str] = {}

    def need(self, name: str) -> str:
        if name not in self.rules:
            self.rules[name] = self.primitives[name]
            for dep in _NEEDS.get(name, ()):
                self.need(dep)
        return name

    def add(self, hint: str, body: str) -> str:
        """A rule for `body` (shared when the same body comes again); its name."""
        if body in self.names_by_body:
            return self.names_by_body[body]
        base = "".join(c if c.isalnum() else "-" for c in hint).strip("-") or "rule"
        name, n = base, 1
        while name in self.rules or name in _PRIMITIVES:
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        self.names_by_body[body] = name
        return name

    def visit(self, schema: Any, hint: str) -> str:
        """An expression (usually a rule name) that matches the JSON texts of `schema`."""
        if schema is True or schema == {} or not isinstance(schema, Mapping):
            return self.need("value")
        if "$ref" in schema:
            return self.ref(schema["$ref"])
        if "const" in schema:
            return self.add(hint + "-const", self.constant(schema["const"]))
        if "enum" in schema:
            alts = " | ".join(self.constant(v) for v in schema["enum"]) or self.need("value")
            return self.add(hint + "-enum", alts)
        for key in ("oneOf", "anyOf"):
            if key in schema and isinstance(schema[key], list) and schema[key]:
                alts = [self.visit(s, f"{hint}-{i}") for i, s in enumerate(schema[key])]
                return self.add(hint, " | ".join(alts))
        kind = schema.get("type")
        if isinstance(kind, list):
            alts = [self.visit({**schema, "type": k}, f"{hint}-{k}") for k in kind]
            return self.add(hint, " | ".join(alts)) if alts else self.need("value")
        if kind == "object" or (kind is None and "properties" in schema):
            return self.object(schema, hint)
        if kind == "array":
            return self.array(schema, hint)
        if kind in ("string", "integer", "number", "boolean", "null"):
            return self.need(kind)
        return self.need("value")

    def constant(self, value: Any) -> str:
        self.need("space")
        return f"{gbnf_literal(self.literal(value))} space"

    def literal(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    def ref(self, ref: str) -> str:
        if ref in self.refs:
            return self.refs[ref]
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref is supported, got {ref!r}")
        target: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise ValueError(f"$ref {ref!r} points nowhere in the schema")
            target = target[part]
        # reserve the name first: a recursive definition refers to itself
        name = self.add("ref-" + ref.rsplit("/", 1)[-1], f"__pending {ref}")
        self.refs[ref] = name
        body = self.visit(target, name + "-body")
        self.names_by_body.pop(f"__pending {ref}", None)
        self.rules[name] = body
        return name

    def object(self, schema: Mapping[str, Any], hint: str) -> str:
        self.need("space")
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = [k for k in props if k in set(schema.get("required") or ())]
        optional = [k for k in props if k not in required]
        pair = {k: f'{gbnf_literal(json.dumps(k, ensure_ascii=False))} space ":" space '
                   f'{self.visit(props[k], f"{hint}-{k}")}' for k in props}
        extra = schema.get("additionalProperties")
        if not props and extra not in (None, False):
            value = self.need("value") if extra is True else self.visit(extra, hint + "-value")
            self.need("string")
            entry = f'string ":" space {value}'
            return self.add(hint, f'"{{" space ({entry} ("," space {entry})*)? "}}" space')
        body = ' "," space '.join(pair[k] for k in required)
        if optional:
            tail = self.optional_chain([pair[k] for k in optional], leading_comma=bool(required))
            body = f"{body} {tail}" if body else tail
        return self.add(hint, f'"{{" space {body} "}}" space' if body else '"{" space "}" space')

    def optional_chain(self, pairs: list[str], leading_comma: bool, sep: str = '"," space') -> str:
        """Any in-order subset of `pairs`, `sep`-separated (after a required part when leading_comma)."""
        if leading_comma:
            return " ".join(f"({sep} {p})?" for p in pairs)
        alts = []
        for i, first in enumerate(pairs):
            rest = " ".join(f"({sep} {p})?" for p in pairs[i + 1:])
            alts.append(f"{first} {rest}".strip())
        return "(" + " | ".join(alts) + ")?"

    def array(self, schema: Mapping[str, Any], hint: str) -> str:
        self.need("space")
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            parts = [self.visit(s, f"{hint}-{i}") for i, s in enumerate(prefix)]
            return self.add(hint, '"[" space ' + ' "," space '.join(parts) + ' "]" space')
        item = self.visit(schema.get("items", {}), hint + "-item")
        return self.add(hint, f'"[" space ({item} ("," space {item})*)? "]" space')

    def grammar(self, root_expr: str) -> str:
        lines = [f"root ::= {root_expr}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items() if name != "root"]
        return "\n".join(lines) + "\n"


def schema_to_gbnf(schema: Mapping[str, Any], *, use_llama_cpp: bool = True) -> str:
    """A GBNF grammar for the JSON texts of `schema` (see the module doc for the subset)."""
    if use_llama_cpp:
        try:
            from llama_cpp.llama_grammar import json_schema_to_gbnf
        except Exception:  # not installed (the usual case for a client): ours below
            pass
        else:
            return json_schema_to_gbnf(json.dumps(schema))
    converter = _Converter(schema)
    return converter.grammar(converter.visit(schema, "root-value"))


class _PythonConverter(_Converter):
    """Values as Python literals; `call()` spells a tool call with keyword arguments."""

    primitives = _PY_PRIMITIVES

    def literal(self, value: Any) -> str:
        from .schemas import python_literal

        return python_literal(value)

    def call(self, name: str, arguments: Mapping[str, Any], positional: tuple[str, ...] = (),
             forbid: Mapping[str, Any] | None = None) -> str:
        """`name(k=v, ...)`: required arguments in order, then any in-order subset of the optional;
        positional-only parameters by position (they are always first, and have no keyword).
        forbid: the arguments of a refused call; the call must then differ in a required one."""
        props: Mapping[str, Any] = arguments.get("properties") or {}
        required = [k for k in props if k in set(arguments.get("required") or ())]
        optional = [k for k in props if k not in required]
        pair = {k: ("" if k in positional else f'"{k}=" ') + self.visit(props[k], f"{name}-{k}") for k in props}
        body = ' ", " '.join(pair[k] for k in required)
        if forbid is not None and set(forbid) == set(required) and required:
            differ = [(k, _not_value(self, forbid[k])) for k in required]
            if all(expr for _, expr in differ):  # else the value cannot be excluded: no restriction
                alts = []
                for k, expr in differ:
                    key = "" if k in positional else f'"{k}=" '
                    alts.append(' ", " '.join(key + expr if j == k else pair[j] for j in required))
                body = self.add(f"{name}-not-refused", " | ".join(f"({a})" for a in alts))
        if optional:
            chain = self.optional_chain([pair[k] for k in optional], leading_comma=bool(required), sep='", "')
            body = f"{body} {chain}" if body else chain
        extra = arguments.get("additionalProperties")
        if extra not in (None, False):  # **kwargs: more keywords (identifiers only) of its value type
            value = self.need("value") if extra is True else self.visit(extra, f"{name}-extra")
            self.rules.setdefault("identifier", "[a-zA-Z_] [a-zA-Z0-9_]*")
            item = f'identifier "=" {value}'
            more = f'(", " {item})*' if body else f"({item} (\", \" {item})*)?"
            body = f"{body} {more}" if body else more
        return self.add(f"call-{name}", f'"{name}(" {body} ")"' if body else f'"{name}()"')


def _not_value(conv: _Converter, value: Any) -> str | None:
    """A grammar expression for the literals of value's type that differ from it (str without
    characters that need escaping, int); None for other values."""
    if isinstance(value, str) and not any(c in value for c in '"\\') and all(ord(c) >= 0x20 for c in value):
        conv.need("string")
        other = "[^" + "".join(_class_char(c) for c in '"\\') + "\\x00-\\x1F{}]"
        alts = [f"{gbnf_literal(value[:i])} {other.format(_class_char(value[i]))} char*" for i in range(len(value))]
        alts += [f"{gbnf_literal(value[:i])} [\\\\] char*" for i in range(len(value))]  # an escape there
        alts += [gbnf_literal(value[:i]) for i in range(len(value))]  # a proper prefix ("" included)
        alts.append(f"{gbnf_literal(value)} char char*")  # longer
        return conv.add("not-" + value[:20], '"\\"" (' + " | ".join(alts) + ') "\\"" space')
    if isinstance(value, int) and not isinstance(value, bool):
        conv.need("integer")
        digits = str(abs(value))
        sign = '"-" integral-part' if value >= 0 else "integral-part"  # the other sign
        same = '"-" ' if value < 0 else ""
        alts = [sign]
        if digits == "0":
            alts.append(f"{same}[1-9] [0-9]*")
        else:
            first = "".join(d for d in "123456789" if d != digits[0])  # another leading digit
            alts += [f'{same}"0"', f"{same}[{first}] [0-9]*"]
            for i in range(1, len(digits)):
                other = "[" + "".join(d for d in "0123456789" if d != digits[i]) + "]"
                alts.append(f"{same}{gbnf_literal(digits[:i])} {other} [0-9]*")
                alts.append(f"{same}{gbnf_literal(digits[:i])}")
            alts.append(f"{same}{gbnf_literal(digits)} [0-9] [0-9]*")
        return conv.add(f"not-{value}".replace("-", "-minus-"), "(" + " | ".join(alts) + ") space")
    return None


def single_call_grammar(
    tools: Any,
    tags: tuple[str, str] = ("<code>", "</code>"),
    *,
    answer_schema: Mapping[str, Any] | None = None,
    forbid: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """One call of one tool, in the single-call agent's own format: `<code>name(k=v, ...)</code>`.

    Values are Python literals of the parameter types (JSON-like, with True/False/None); the
    final answer is `final_answer(<value>)`. The tags may be empty strings for a bare call.
    forbid: {tool name: arguments} of a call the agent just refused as a repeat; the grammar then
    requires another value in one of its required arguments (for str and int values; others are
    not excluded).
    """
    from ...tools.tool import tools_by_name
    from .schemas import FINAL_ANSWER, arguments_schema

    defs: dict[str, Any] = {}
    branches = [(t.name, arguments_schema(t, defs),
                 tuple(p.name for p in t.signature.parameters.values() if p.kind is p.POSITIONAL_ONLY))
                for t in tools_by_name(tools).values()]
    converter = _PythonConverter({"$defs": defs})
    forbid = forbid or {}
    alts = [converter.call(name, args, positional, forbid.get(name)) for name, args, positional in branches]
    answer = converter.visit(dict(answer_schema) if answer_schema is not None else {}, "answer")
    alts.append(converter.add("call-final-answer", f'"{FINAL_ANSWER}(" {answer} ")"'))
    open_tag, close_tag = tags
    head = f"{gbnf_literal(open_tag)} " if open_tag else ""
    tail = f" {gbnf_literal(close_tag)}" if close_tag else ""
    return converter.grammar(f"{head}({' | '.join(alts)}){tail}")


def code_action_grammar(
    tags: tuple[str, str] = ("<code>", "</code>"),
    thought_prefix: str = "Thought: ",
) -> str:
    """'Thought: <one line>\\n<open>\\n<code>' up to and including the first `close` tag.

    The code may hold anything but the closing tag; the grammar ends right after it, so a server
    honouring the agent's stop sequence returns exactly what the parser expects.
    """
    open_tag, close_tag = tags
    if not close_tag:
        raise ValueError("the closing tag must not be empty")
    lines = [
        f'root ::= {gbnf_literal(thought_prefix)} thought "\\n" {gbnf_literal(open_tag)} "\\n" code-0',
        'thought ::= [^\\n] [^\\n]*',
    ]
    lines += _until_first(close_tag, "code")
    return "\n".join(lines) + "\n"


def _until_first(stop: str, prefix: str) -> list[str]:
    """Rules `{prefix}-i`: any text that ends with the first occurrence of `stop` (a KMP automaton).

    State i = how much of `stop` the text now ends with. A character that completes `stop` ends the
    sentence; every other one moves to the state the failure function gives.
    """
    n = len(stop)
    fail = [0] * n
    k = 0
    for i in range(1, n):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        if stop[i] == stop[k]:
            k += 1
        fail[i] = k

    def step(state: int, ch: str) -> int:
        while state and stop[state] != ch:
            state = fail[state - 1]
        return state + 1 if stop[state] == ch else 0

    alphabet = sorted(set(stop))
    rules = []
    for state in range(n):
        moves = {ch: step(state, ch) for ch in alphabet}
        special = [ch for ch in alphabet if moves[ch] != 0]  # the rest go back to state 0
        alts = ["[^" + "".join(_class_char(c) for c in special) + f"] {prefix}-0"]
        for ch in special:
            lit = gbnf_literal(ch)
            alts.append(lit if moves[ch] == n else f"{lit} {prefix}-{moves[ch]}")
        rules.append(f"{prefix}-{state} ::= " + " | ".join(alts))
    return rules
