"""The single-call shape: one call of a known tool with literal arguments, checked with `ast`.

What `SingleCall` (formats.py) accepts: `check_single_call` turns a reply's code into the calls
it holds or refuses it with a lesson written for the model (the closest tool name, the line to
send instead, the fix for `name(arg: value)`); `bound_arguments` / `call_fingerprint` spot a call
repeated unchanged; `render_tool_line` and the examples are how tools are shown to the model.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from executors.base import FINAL_ANSWER_NAME

from ..parsing.calls import closest_name
from ..runs.record import ActionRefused, ErrorKind
from ..tools.tool import Tool

__all__ = ["ParsedCall", "check_single_call", "call_fingerprint", "bound_arguments", "colon_call_fix",
           "render_tool_line"]

@dataclass(frozen=True)
class ParsedCall:
    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    source: str  # the call, re-spelled canonically by ast.unparse


def _required(tool: Tool) -> list[str]:
    return [p.name for p in tool.signature.parameters.values() if p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def example_call(tools: Mapping[str, Tool], name: str | None = None) -> str:
    """A call the model can copy: the tool with its parameters as keyword placeholders."""
    tool = tools.get(name) if name else next(iter(tools.values()), None)
    if tool is None:
        return 'final_answer("...")'
    return f'{tool.name}({", ".join(f"{p}=..." for p in _required(tool))})'


def json_example_call(tools: Mapping[str, Tool]) -> str:
    """`example_call` as the JSON the constrained single-call prompt asks for."""
    tool = next(iter(tools.values()), None)
    if tool is None:
        return '{"name": "final_answer", "arguments": {"answer": "..."}}'
    arguments = ", ".join(f'"{p}": ...' for p in _required(tool))
    return f'{{"name": "{tool.name}", "arguments": {{{arguments}}}}}'


def with_note(observation: str, note: str | None) -> str:
    return f"{observation}\n{note}" if note else observation


def render_tool_line(tool: Tool) -> str:
    """One line per tool: the call signature and the first line of its doc (no `def` to copy)."""
    doc = (tool.description or "").strip().splitlines()
    return f"{tool.signature_text()}  # {doc[0]}" if doc else tool.signature_text()


def tool_names(tools: Mapping[str, Tool]) -> str:
    return ", ".join([*tools, FINAL_ANSWER_NAME])


def _literal(node: ast.expr) -> Any:
    return ast.literal_eval(node)


def check_single_call(code: str, tools: Mapping[str, Tool], bundleable: Iterable[str] = ()) -> list[ParsedCall]:
    """The calls in `code` if it is one allowed call (or an allowed bundle); else ActionRefused.

    Every message is written for the model: what is wrong, and the line it should send instead.
    """
    bundleable = frozenset(bundleable)
    example = example_call(tools)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ActionRefused(
            ErrorKind.INVALID_ACTION,
            f"Your line is not valid Python ({exc.msg}). Reply with one tool call on one line, like {example}.",
        ) from None
    if not tree.body:
        raise ActionRefused(ErrorKind.INVALID_ACTION, f"Your reply has no call. Reply with one tool call, like {example}.")
    calls: list[ParsedCall] = []
    for stmt in _unpacked(tree.body):
        calls.append(_check_statement(stmt, tools, example))
    if len(calls) > 1:
        outside = sorted({c.name for c in calls if c.name not in bundleable})
        if outside:
            allowed = (
                f" Only these tools may be combined in one reply: {', '.join(sorted(bundleable))}."
                if bundleable else ""
            )
            raise ActionRefused(
                ErrorKind.INVALID_ACTION,
                f"Your reply has {len(calls)} calls; make exactly one call per reply "
                f"({', '.join(outside)} cannot be combined with other calls).{allowed} "
                f"Send the first call alone now: {calls[0].source}",
            )
    return calls


def _unpacked(body: list[ast.stmt]) -> list[ast.stmt]:
    """A reply that is one list of calls (`[a(x=1), b(y=2)]`: Llama 3.2 / 4, ToolACE) is those calls."""
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, (ast.List, ast.Tuple)):
        items = body[0].value.elts
        if items and all(isinstance(e, ast.Call) for e in items):
            return [ast.Expr(e) for e in items]
    return body


def _check_statement(stmt: ast.stmt, tools: Mapping[str, Tool], example: str) -> ParsedCall:
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.value, ast.Call):
        call_text = ast.unparse(stmt.value)
        raise ActionRefused(
            ErrorKind.INVALID_ACTION,
            f"Do not assign the result to a variable: there are no variables in this mode. Write just the "
            f"call, {call_text}, and its result will be shown to you.",
        )
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        known = stmt.name if stmt.name in tools else None
        raise ActionRefused(
            ErrorKind.INVALID_ACTION,
            f"Do not define functions: the tools already exist. Call one, like {example_call(tools, known)}, "
            "with the values written out.",
        )
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        raise ActionRefused(
            ErrorKind.INVALID_ACTION,
            f"Reply with exactly one tool call on one line, like {example}. Assignments, loops, imports "
            f"and other statements are not available in this mode. Tools: {tool_names(tools)}.",
        )
    call = stmt.value
    func = call.func
    name = func.id if isinstance(func, ast.Name) else ast.unparse(func)
    if name not in tools and name != FINAL_ANSWER_NAME:
        inner = [a for a in call.args if isinstance(a, ast.Call)]
        close = _closest_tool(name, tools)
        if name == "print" and len(inner) == 1:
            hint = f" Write just {ast.unparse(inner[0])}: its result is shown to you without print."
        elif close:
            hint = f" Did you mean {example_call(tools, close)}?"
        else:
            hint = ""
        raise ActionRefused(
            ErrorKind.INVALID_ACTION, f"`{name}` is not a tool you can call.{hint} The tools are: {tool_names(tools)}."
        )
    args: list[Any] = []
    for i, node in enumerate(call.args, 1):
        if isinstance(node, ast.Starred):
            raise ActionRefused(ErrorKind.INVALID_ACTION, f"Write the arguments of {name}() one by one, without *.")
        args.append(_literal_argument(name, f"argument {i}", node))
    kwargs: list[tuple[str, Any]] = []
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionRefused(ErrorKind.INVALID_ACTION, f"Write the arguments of {name}() one by one, without **.")
        kwargs.append((kw.arg, _literal_argument(name, f"argument {kw.arg}=", kw.value)))
    return ParsedCall(name=name, args=tuple(args), kwargs=tuple(kwargs), source=ast.unparse(call))


def _closest_tool(name: str, tools: Mapping[str, Tool]) -> str | None:
    """The tool a misspelled or shortened name most likely meant (`capital` -> `capital_of`)."""
    return closest_name(name, [*tools, FINAL_ANSWER_NAME])


# `tool(country: "Japan")`: weak models copy the signature's colon into the call.
_COLON_KWARG = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()\n]*\b[A-Za-z_]\w*\s*:[^()\n]*)\)")
_COLON = re.compile(r"\b([A-Za-z_]\w*)\s*:\s*")


def colon_call_fix(text: str, tools: Mapping[str, Tool]) -> str | None:
    """`tool(key: value)` in `text`, rewritten as a valid call of a known tool, else None."""
    # short lines only: the pattern backtracks, and a call is one short line anyway
    lines = [line for line in text.splitlines()[:50] if len(line) <= 300]
    for m in (m for line in lines for m in _COLON_KWARG.finditer(line)):
        name = m.group(1) if m.group(1) in tools or m.group(1) == FINAL_ANSWER_NAME else _closest_tool(m.group(1), tools)
        if name is None:
            continue
        fixed = f"{name}({_COLON.sub(lambda k: k.group(1) + '=', m.group(2))})"
        try:
            check_single_call(fixed, tools)
        except ActionRefused:
            continue
        return fixed
    return None


def _literal_argument(name: str, where: str, node: ast.expr) -> Any:
    try:
        return _literal(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ActionRefused(
            ErrorKind.INVALID_ACTION,
            f"The {where} of {name}() is `{ast.unparse(node)}`, which is not a literal value. There are no "
            "variables or expressions in this mode: write the value itself (a number, a string in quotes, "
            "a list), copied from an earlier observation.",
        ) from None


def bound_arguments(call: ParsedCall, tools: Mapping[str, Tool]) -> dict[str, Any]:
    """The call's arguments by parameter name (defaults applied); {"args", "kwargs"} when the call
    does not bind (the call itself will fail with the tool's own message)."""
    tool = tools.get(call.name)
    if tool is not None:
        try:
            bound = tool.signature.bind(*call.args, **dict(call.kwargs))
            bound.apply_defaults()
            return dict(bound.arguments)
        except TypeError:
            pass
    return {"args": list(call.args), "kwargs": dict(call.kwargs)}


def call_fingerprint(call: ParsedCall, tools: Mapping[str, Tool]) -> str:
    """Tool name + arguments bound to the signature, as canonical JSON (quotes/keywords don't matter)."""
    return json.dumps([call.name, bound_arguments(call, tools)], sort_keys=True, default=repr)
