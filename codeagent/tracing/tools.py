"""`execute_tool {tool}` spans, opened by codeagent's `Tool` wrapper around every call.

Why the wrapper and not a hook in `executors`: every executor calls tools on the host, on the
thread that called `execute()` (in process through the runtime's proxy; for the subprocess and
Docker workers, the host side of the tool channel answers each `tool_call` frame there), so the
`execute_code` span made current around `execute()` is the parent with no help from the executor.
`executors` stays free of codeagent and of OpenTelemetry, any executor (a third-party one too)
gets the spans, and ToolCallingAgent's calls, which run without an executor, get the same span
from the same place. The tool-call id of a native call comes in through a context variable.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from executors.base import ToolError

from .content import render, settings
from .otel import otel_trace, set_error

__all__ = ["traced_call", "atraced_call", "tool_call_id", "error_type"]

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("codeagent_tool_call_id", default=None)


@contextmanager
def tool_call_id(call_id: str | None) -> Iterator[None]:
    """Calls made inside carry `gen_ai.tool.call.id` = call_id (a native tool call's id)."""
    token = _CALL_ID.set(call_id)
    try:
        yield
    finally:
        _CALL_ID.reset(token)


def error_type(exc: BaseException) -> str:
    """The low-cardinality type of a tool failure: the tool's own exception for a wrapped one."""
    if type(exc) is ToolError and exc.__cause__ is not None:
        return type(exc.__cause__).__name__
    return type(exc).__name__


def traced_call(tool: Any, tracer: Any, call: Callable[..., Any], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """`call(*args, **kwargs)` inside an `execute_tool {tool.name}` span (child of the current)."""
    with _tool_span(tool, tracer, args, kwargs) as done:
        return done(call(*args, **kwargs))


async def atraced_call(tool: Any, tracer: Any, call: Callable[..., Any], args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
    """`await call(*args, **kwargs)` inside an `execute_tool {tool.name}` span."""
    with _tool_span(tool, tracer, args, kwargs) as done:
        return done(await call(*args, **kwargs))


@contextmanager
def _tool_span(tool: Any, tracer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[Callable[[Any], Any]]:
    """The span of one call; the block passes the call's value through `done(value)`."""
    api = otel_trace()
    s = settings()
    attributes = _attributes(tool)
    call_id = _CALL_ID.get()
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    with tracer.start_as_current_span(f"execute_tool {tool.name}", kind=api.SpanKind.INTERNAL, attributes=attributes,
                                      record_exception=False, set_status_on_exception=False) as span:
        if s.capture:
            span.set_attribute("gen_ai.tool.call.arguments", render(_arguments(tool, args, kwargs), s))

        def done(value: Any) -> Any:
            if s.capture:
                span.set_attribute("gen_ai.tool.call.result", render(value, s))
            return value

        try:
            yield done
        except BaseException as exc:
            kind = error_type(exc)
            set_error(span, kind, s.describe(kind, _text(exc) if s.capture else None))
            raise


def _attributes(tool: Any) -> dict[str, Any]:
    """The span attributes every call of `tool` shares (made once per tool and name)."""
    cached = getattr(tool, "_span_attributes", None)
    if cached is not None and cached["gen_ai.tool.name"] == tool.name:
        return dict(cached)
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name,
                                  "gen_ai.tool.type": "function"}
    description = (tool.description or "").strip().split("\n", 1)[0]
    if description:
        attributes["gen_ai.tool.description"] = description[:300]
    try:
        tool._span_attributes = attributes
    except AttributeError:  # a tool that takes no attributes: made anew each call
        pass
    return dict(attributes)


def _text(exc: BaseException) -> str | None:
    try:  # a tool's exception may hold anything: its text is taken as the executors take it
        text = str(exc)
    except Exception:
        return None
    return text if type(text) is str else None


def _arguments(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The call's arguments by parameter name (binding reads no value), else as given."""
    try:
        return dict(tool.signature.bind(*args, **kwargs).arguments)
    except TypeError:
        return {"args": list(args), **kwargs} if args else dict(kwargs)
