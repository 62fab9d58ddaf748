"""Tier 4 of the parser: a tool call written in any dialect of the table becomes Python.

    tool_calls_to_code(text, tools=None) -> str | None

The rows of `dialects.DIALECTS` are tried in order; the first that finds calls wins, and they
become one Python call a line (`calls.render_call`), or the Python a pythonic dialect already is.
Given the tool names, a call of any other tool raises `UnknownToolError`: the model is told which
tools there are instead of watching its call fail.
"""

from __future__ import annotations

from collections.abc import Collection

from executors.base import FINAL_ANSWER_NAME

from .calls import Call, closest_name, render_call
from .dialects import DIALECTS, might_hold_calls
from .lesson import UnknownToolError

__all__ = ["tool_calls_to_code", "read_tool_calls"]


def read_tool_calls(text: str) -> list[Call] | str | None:
    """The calls in `text` (or Python source, for a pythonic dialect), by the first row that finds any."""
    if not might_hold_calls(text):
        return None
    tried = set()
    for dialect in DIALECTS:
        if dialect.read is None or dialect.read in tried:
            continue
        if dialect.markers and not any(m in text for m in dialect.markers):
            continue
        tried.add(dialect.read)
        found = dialect.read(text)
        if found:
            return found
    return None


def tool_calls_to_code(text: str, tools: Collection[str] | None = None) -> str | None:
    """Python code for the tool calls in `text` (one call a line), or None.

    tools: the names the model may call (final_answer is always one); None accepts any name.
    """
    found = read_tool_calls(text)
    if found is None or isinstance(found, str):
        return found
    if tools is not None:
        for call in found:
            if call.name != FINAL_ANSWER_NAME and call.name not in tools:
                raise unknown_tool(call.name, tools, text)
    try:
        return "\n".join([render_call(call.name, call.kwargs, (), call.args) for call in found])
    except RecursionError:  # arguments nested too deep to write out
        return None


def unknown_tool(name: str, tools: Collection[str], reply: str) -> UnknownToolError:
    names = [*tools, FINAL_ANSWER_NAME]
    close = closest_name(name, names)
    hint = f" Did you mean {close}?" if close else ""
    return UnknownToolError(
        f"`{name}` is not one of the tools, so nothing was called.{hint} The tools are: {', '.join(names)}.",
        name=name, reply=reply,
    )
