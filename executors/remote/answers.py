"""The host's side of one step's messages: a worker's tool call answered by a host tool (its
arguments decoded, its result or failure encoded for the wire), and a worker's `Result` checked
and bounded into an ExecutionResult."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ..base import ExecutionError, ExecutionResult, Limits, ToolError, acall_tool, make_result
from ..worker.wire import truncate_text
from .protocol import (
    Result,
    ToolCall,
    ToolErrorReply,
    checked_attachments,
    decode_value,
    decode_values,
    encode_value,
    pack_frame,
)

__all__ = ["tool_reply", "atool_reply", "step_result"]


def tool_reply(tools: Mapping[str, Callable[..., Any]], msg: ToolCall, max_frame_bytes: int) -> bytes:
    """The frame that answers `msg`: the tool's result, or why there is none."""
    fn = tools.get(msg.name)
    if fn is None:
        return _no_tool(msg, max_frame_bytes)
    args, kwargs = _arguments(msg)
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:
        return _failed(msg, exc, max_frame_bytes)
    return _result(msg, value, max_frame_bytes)


async def atool_reply(tools: Mapping[str, Callable[..., Any]], msg: ToolCall, max_frame_bytes: int) -> bytes:
    """`tool_reply` for `aexecute`: the tool awaited on the running loop (`acall_tool`)."""
    fn = tools.get(msg.name)
    if fn is None:
        return _no_tool(msg, max_frame_bytes)
    args, kwargs = _arguments(msg)
    try:
        value = await acall_tool(fn, args, kwargs)
    except Exception as exc:
        return _failed(msg, exc, max_frame_bytes)
    return _result(msg, value, max_frame_bytes)


def _no_tool(msg: ToolCall, max_frame_bytes: int) -> bytes:
    reply = ToolErrorReply(call=msg.call, type="NameError", message=f"there is no tool named {msg.name!r}")
    return reply.frame(max_frame_bytes)


def _arguments(msg: ToolCall) -> tuple[list[Any], dict[str, Any]]:
    names = list(msg.kwargs)
    plain = decode_values([*msg.args, *(msg.kwargs[k] for k in names)], parsed=True)  # (one memo, one budget)
    return plain[:len(msg.args)], dict(zip(names, plain[len(msg.args):], strict=True))


def _failed(msg: ToolCall, exc: Exception, max_frame_bytes: int) -> bytes:
    kind = "ToolError" if isinstance(exc, ToolError) else type(exc).__name__
    return ToolErrorReply(call=msg.call, type=kind, message=_exc_text(exc)).frame(max_frame_bytes)


def _result(msg: ToolCall, value: Any, max_frame_bytes: int) -> bytes:
    try:
        # (a `ToolResult`, framed from its fields: the value is the codec's plain tree already)
        return pack_frame({"op": "tool_result", "call": msg.call, "value": encode_value(value)}, max_frame_bytes)
    except Exception as exc:
        return ToolErrorReply(
            call=msg.call, type=type(exc).__name__,
            message=f"its result cannot be sent to the sandbox: {_exc_text(exc)}",
        ).frame(max_frame_bytes)


def step_result(msg: Result, limits: Limits, started: float) -> ExecutionResult:
    """A worker's result as the host returns it: decoded (ProtocolError on a bad value) and cut
    to the limits."""
    limit = limits.max_output_chars
    output = None if msg.output is None else decode_value(msg.output, parsed=True)
    error = None
    if msg.error is not None:
        e = msg.error
        error = ExecutionError(e.type, truncate_text(e.message, 4000), e.lineno, None if e.line is None else e.line[:500])
    return make_result(
        output=output,
        logs=truncate_text(msg.logs, limit),
        is_final_answer=msg.is_final_answer,
        error=error,
        duration_s=time.perf_counter() - started,
        output_repr=None if msg.output_repr is None else truncate_text(msg.output_repr, limit),
        attachments=checked_attachments(msg, limits.max_attachment_bytes) if msg.attachments else (),
        operations=msg.operations,
    )


def _exc_text(exc: BaseException) -> str:
    try:
        return truncate_text(str(exc), 4000)
    except Exception:
        return f"<{type(exc).__name__} with an unprintable message>"
