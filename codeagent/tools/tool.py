"""Tools: plain typed Python functions the model's code can call by name.

`@tool` wraps a function in a `Tool`: its signature and docstring are rendered into the system
prompt, and every call validates the arguments against the type hints with pydantic before the
function runs. Whatever goes wrong inside a call comes back as `executors.ToolError` with a
message written for the model (which argument, which type, which tool), never as a crash.

A tool whose result includes images (an MCP server's image blocks, say) hands them to the agent
with `attach(...)`: the step that called it shows them to the model like the step's own figures.
The value the tool returns stays plain data for the sandbox.

A coroutine function is a tool too: the model's code calls it like any other (no `await` in the
sandbox). In an async run (`arun`) the host awaits it on the run's event loop (`Tool.acall`); in a
sync run it runs to its end on a background loop. A plain function called from an async run runs
on a thread, so it never holds up the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import threading
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import TypeAdapter, ValidationError

from executors.base import FINAL_ANSWER_NAME, ToolError, is_coroutine_function, run_coroutine

from ..tracing.otel import tracer
from ..tracing.tools import atraced_call, traced_call

__all__ = ["Tool", "tool", "ToolArgumentError", "ToolTimeoutError", "safe_repr", "tools_by_name", "attach",
           "collecting_attachments", "load_tools", "ToolSpecError"]


class ToolArgumentError(ToolError, TypeError):
    """The model called a tool with arguments that do not match its signature."""


class ToolTimeoutError(ToolError, TimeoutError):
    """A tool did not return within its declared timeout."""


_SAFE_SCALARS = (str, int, float, bool, type(None), bytes)

# The attachments the tools of the running step handed over (None: nobody is collecting). A context
# variable: the executors call host tools on the thread that runs the step (or, for a tool with a
# timeout, on a thread started in a copy of its context), and concurrent steps do not mix.
_ATTACHED: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("codeagent_attached", default=None)


def attach(*attachments: Any) -> bool:
    """Give figures (`executors.Attachment`) to the agent step that is calling this tool; they
    reach the model as the step's own figures do. False when no step is collecting them."""
    sink = _ATTACHED.get()
    if sink is None:
        return False
    sink.extend(attachments)
    return True


@contextmanager
def collecting_attachments() -> Iterator[list[Any]]:
    """Collect what the tools called in this block `attach(...)`; the list fills as they run."""
    sink: list[Any] = []
    token = _ATTACHED.set(sink)
    try:
        yield sink
    finally:
        _ATTACHED.reset(token)


def safe_repr(value: Any, limit: int = 120) -> str:
    """repr() for builtin values only: model code must never get to run its own __repr__ here."""
    kind = type(value)
    if kind in (str, bytes):  # (a slice: a 30 MB argument is not turned into text to show 120 characters)
        text = repr(value[:limit]) + ("..." if len(value) > limit else "")
    elif kind is int and value.bit_length() > 4 * limit:
        text = f"<int of about {value.bit_length() * 30103 // 100_000 + 1:,} digits>"
    elif kind in _SAFE_SCALARS:
        text = repr(value)
    elif kind in (list, tuple, dict, set, frozenset):
        text = f"<{kind.__name__} of {len(value)} items>"
    else:
        text = f"<{kind.__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__ if annotation.__module__ != "builtins" else annotation.__name__
    return inspect.formatannotation(annotation).replace("typing.", "")


class Tool:
    """A callable the agent hands to its executor; validates arguments, enforces a timeout.

    Tool objects are plain callables, so any executor can receive them as `{name: tool}`.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = None,
        validate: bool = True,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a tool must wrap a callable, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or ""
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"tool name {self.name!r} must be a public Python identifier")
        self.description = inspect.cleandoc(description or inspect.getdoc(fn) or "").strip()
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"tool {self.name!r}: timeout_s must be > 0, got {timeout_s!r}")
        self.timeout_s = timeout_s
        # the coroutine function to await from async code (None: a plain function)
        self.afn: Callable[..., Any] | None = fn if is_coroutine_function(fn) else None
        self.signature = self._resolved_signature(fn)
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        if validate:
            for param in self.signature.parameters.values():
                if param.annotation is not inspect.Parameter.empty and not isinstance(param.annotation, str):
                    self._adapters[param.name] = TypeAdapter(param.annotation)
        self.__name__ = self.name
        self.__doc__ = self.description

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = None,
    ) -> Tool:
        return cls(fn, name=name, description=description, timeout_s=timeout_s)

    @staticmethod
    def _resolved_signature(fn: Callable[..., Any]) -> inspect.Signature:
        sig = inspect.signature(fn)
        try:  # resolve string annotations (`from __future__ import annotations` in the tool's module)
            hints = typing.get_type_hints(fn)
        except Exception:
            return sig
        params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
        return sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))

    # -- rendering for the prompt ------------------------------------------------------------

    def signature_text(self) -> str:
        parts: list[str] = []
        seen_kwonly_marker = False
        for p in self.signature.parameters.values():
            if p.kind is p.KEYWORD_ONLY and not seen_kwonly_marker:
                parts.append("*")
                seen_kwonly_marker = True
            prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
            if p.kind is p.VAR_POSITIONAL:
                seen_kwonly_marker = True
            text = prefix + p.name
            if p.annotation is not p.empty:
                text += f": {_type_name(p.annotation)}"
            if p.default is not p.empty:
                text += f" = {safe_repr(p.default, 60)}" if p.annotation is not p.empty else f"={safe_repr(p.default, 60)}"
            parts.append(text)
        ret = self.signature.return_annotation
        arrow = f" -> {_type_name(ret)}" if ret is not inspect.Signature.empty else ""
        return f"{self.name}({', '.join(parts)}){arrow}"

    def render(self) -> str:
        """The tool as the model sees it: a Python stub with its docstring."""
        doc = (self.description or "(no description)").replace('"""', "'''")
        if "\n" not in doc:
            return f'def {self.signature_text()}:\n    """{doc}"""'
        body = "\n".join("    " + line if line else "" for line in doc.splitlines())
        return f'def {self.signature_text()}:\n    """\n{body}\n    """'

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        found = tracer()  # None unless a tracer provider is configured (codeagent.tracing)
        if found is not None:
            return traced_call(self, found, self._validated_call, args, kwargs)
        return self._validated_call(*args, **kwargs)

    def _validated_call(self, *args: Any, **kwargs: Any) -> Any:
        bound = self._bind(args, kwargs)
        if self.afn is self.fn:  # a coroutine function: run to its end (`run_coroutine`)
            return run_coroutine(self._ainvoke(bound))
        if self.timeout_s is None:
            return self._invoke(bound)
        return self._invoke_with_timeout(bound)

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        """The call from async code: a coroutine tool awaited on this loop (validated, timed,
        traced like any call); a plain one on a thread."""
        found = tracer()
        if found is not None:
            return await atraced_call(self, found, self._avalidated_call, args, kwargs)
        return await self._avalidated_call(*args, **kwargs)

    async def _avalidated_call(self, *args: Any, **kwargs: Any) -> Any:
        if self.afn is None:
            return await asyncio.to_thread(self._validated_call, *args, **kwargs)
        return await self._ainvoke(self._bind(args, kwargs))

    async def _ainvoke(self, bound: inspect.BoundArguments) -> Any:
        assert self.afn is not None
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                return await self.afn(*bound.args, **bound.kwargs)
        except ToolError:
            raise
        except TimeoutError as exc:
            if deadline.expired():
                raise self._timed_out() from None
            raise ToolError(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise ToolError(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}") from exc

    def _timed_out(self) -> ToolTimeoutError:
        return ToolTimeoutError(
            f"{self.name}() did not return within its {self.timeout_s:g} s timeout. "
            "Call it with a smaller request or try another approach."
        )

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ToolArgumentError(f"{self.name}() {exc}. Its signature is {self.signature_text()}.")
        if not self._adapters:
            return bound
        for name, value in list(bound.arguments.items()):
            adapter = self._adapters.get(name)
            if adapter is None:
                continue
            kind = self.signature.parameters[name].kind
            try:
                if kind is inspect.Parameter.VAR_POSITIONAL:
                    bound.arguments[name] = tuple(adapter.validate_python(v) for v in value)
                elif kind is inspect.Parameter.VAR_KEYWORD:
                    bound.arguments[name] = {k: adapter.validate_python(v) for k, v in value.items()}
                else:
                    bound.arguments[name] = adapter.validate_python(value)
            except ValidationError as exc:
                raise ToolArgumentError(self._argument_message(name, value, exc))
        return bound

    def _argument_message(self, name: str, value: Any, exc: ValidationError) -> str:
        expected = _type_name(self.signature.parameters[name].annotation)
        detail = "; ".join(
            (".".join(str(x) for x in e["loc"]) + ": " if e["loc"] else "") + e["msg"]
            for e in exc.errors(include_url=False)[:3]
        )
        return (
            f"{self.name}() argument '{name}' must be {expected}, got {type(value).__name__} "
            f"{safe_repr(value)} ({detail}). Its signature is {self.signature_text()}."
        )

    def _invoke(self, bound: inspect.BoundArguments) -> Any:
        try:
            return self.fn(*bound.args, **bound.kwargs)
        except ToolError:
            raise
        except Exception as exc:
            # The executors' own wording for a failed tool: they pass a ToolError through as it is
            # (it is written for the model already), so the failure reads once, the same everywhere.
            raise ToolError(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}") from exc

    def _invoke_with_timeout(self, bound: inspect.BoundArguments) -> Any:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = self._invoke(bound)
            except BaseException as exc:  # handed back to the caller's thread below
                box["error"] = exc

        # A daemon thread: Python cannot kill a stuck function, but the caller need not wait for it.
        context = contextvars.copy_context()  # what the tool attach()es still reaches the step
        worker = threading.Thread(target=context.run, args=(target,), name=f"tool-{self.name}", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            raise self._timed_out()
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def __repr__(self) -> str:
        return f"Tool({self.signature_text()})"


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
) -> Any:
    """Make a typed function a `Tool`: `@tool`, or `@tool(timeout_s=2, name="search")`."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description, timeout_s=timeout_s)

    return wrap(fn) if fn is not None else wrap


def as_tool(obj: Any) -> Tool:
    return obj if isinstance(obj, Tool) else Tool(obj)


def tools_by_name(tools: Iterable[Any] | Mapping[str, Any] | None) -> dict[str, Tool]:
    """Accept Tool objects, plain functions, or {name: callable}; return {name: Tool}."""
    if tools is None:
        return {}
    if isinstance(tools, (str, bytes)) or callable(tools) or not isinstance(tools, (Iterable, Mapping)):
        raise TypeError(f"tools must be a list of tools (or a {{name: callable}} dict), got {_described(tools)}: "
                        f"{_list_fix(tools)}")
    out: dict[str, Tool] = {}
    if isinstance(tools, Mapping):
        for key, fn in tools.items():
            if isinstance(fn, Tool):
                out[key] = fn if fn.name == key else Tool(
                    fn.fn, name=key, description=fn.description, timeout_s=fn.timeout_s
                )
            else:
                out[key] = Tool(fn, name=key)
    else:
        for t in tools:
            t = as_tool(t)
            if t.name in out:
                raise ValueError(f"two tools are named {t.name!r}: tool names must be unique")
            out[t.name] = t
    if FINAL_ANSWER_NAME in out:
        raise ValueError(f"'{FINAL_ANSWER_NAME}' is built in and cannot be a tool name")
    return out


def _described(obj: Any) -> str:
    if isinstance(obj, Tool):
        return f"a single Tool {obj.name!r}"
    if isinstance(obj, (str, bytes)):
        return f"a {type(obj).__name__} {safe_repr(obj, 40)}"
    name = getattr(obj, "__name__", None)
    return f"a single {type(obj).__name__} {name!r}" if isinstance(name, str) else f"a {type(obj).__name__}"


def _list_fix(obj: Any) -> str:
    name = obj.name if isinstance(obj, Tool) else getattr(obj, "__name__", None)
    if callable(obj) and isinstance(name, str) and name.isidentifier():
        return f"pass tools=[{name}]"
    return "pass tools=[tool_a, tool_b] with the tool objects or functions themselves"


class ToolSpecError(ValueError):
    """A `module:attr` tool reference that does not name tools (the message says which and why)."""


def load_tools(specs: Iterable[str]) -> list[Any]:
    """`module:attr` → the tools it names: a Tool or function, or a list/tuple/dict of them (the
    command line's --tools, a batch's "tools" option). A bad reference is a ToolSpecError (a
    ValueError) that names it, never a traceback of the user's module."""
    tools: list[Any] = []
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise ToolSpecError(f"--tools expects module:attr (e.g. mytools:search), got {spec!r}")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ToolSpecError(f"--tools {spec}: cannot import {module_name!r}: {exc} (is it on PYTHONPATH?)")
        except Exception as exc:  # the user's module is broken: say where, without a traceback
            raise ToolSpecError(f"--tools {spec}: importing {module_name!r} raised {type(exc).__name__}: {exc}")
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise ToolSpecError(f"--tools {spec}: {module_name} has no attribute {attr!r}")
            obj = getattr(obj, part)
        if isinstance(obj, dict):
            tools.extend(v if isinstance(v, Tool) and v.name == k else Tool(v, name=k) for k, v in obj.items())
        elif isinstance(obj, (list, tuple)):
            tools.extend(obj)
        elif callable(obj):
            tools.append(obj)
        else:
            raise ToolSpecError(f"--tools {spec}: {type(obj).__name__} is neither a tool nor a list of tools")
    return tools
