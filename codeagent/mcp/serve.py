"""The sandbox as an MCP server: `run_python(code)`, `reset()`, `list_variables()` for any MCP client.

    codeagent mcp-serve [--executor subprocess] [--import numpy] [--read data/] [--transport stdio]

One executor per MCP session, made at the session's first call and closed when it ends; a call
is awaited on the server's event loop (`aexecute`), so sessions run their steps at once without a
thread each: over
stdio the session is the server process (one client each); over HTTP it is the `Mcp-Session-Id`
of the handshake (`http.py` refuses the stateless 2026 protocol, whose requests share no session,
so a client falls back to the handshake). Sessions never see each other's variables or files.

`run_python` answers as the agent's observation reads (`observation.observation_text`: printed output,
the last value's repr, the error with a hint), one `ImageContent` per figure, and
`structured_content` `{output, logs, error, figures}`; a failed step is `isError`, so the client's
model reads it as something to fix. The tool's description tells that model which modules it may
import, which files and network it may reach, and the limits of one call.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel

from executors.base import ExecutorError
from executors.worker.codec import short_repr

from ..agent.memory import truncate_middle
from ..agent.observation import observation_text
from ..events import NOT_JSON, plain_json
from ..tools.grants import access_rule, files_section, restricted

__all__ = ["RunPythonOutput", "Sessions", "build_server", "tool_description", "run_python_result"]

SERVER_NAME = "codeagent-python"
OBSERVATION_CHARS = 20_000  # the text of one run_python answer (logs and value are cut head and tail)
SESSION_KEY_HEADER = "mcp-session-id"
STDIO = "stdio"


class FigureInfo(BaseModel):
    name: str
    media_type: str
    width: int | None = None
    height: int | None = None
    size: int


class ErrorInfo(BaseModel):
    type: str
    message: str
    lineno: int | None = None
    line: str | None = None


class RunPythonOutput(BaseModel):
    """run_python's structured result. output: the last expression's value (or the final answer)
    as JSON when it is plain data, else its repr; error: None when the code ran to its end."""

    output: Any = None
    logs: str = ""
    error: ErrorInfo | None = None
    figures: list[FigureInfo] = []


@dataclass
class _Session:
    executor: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0  # calls taken (get) and not yet done: such a session is never idle


class Sessions:
    """The executors of the open MCP sessions, by session key; each made at first use, or taken
    ready from `pool` (an ExecutorPool: a new session starts at once) while it has one free."""

    def __init__(self, make_executor: Callable[[], Any], pool: Any = None) -> None:
        self._make = make_executor
        self._pool = pool
        self._pooled: set[int] = set()  # ids of the executors taken from the pool
        self._open: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> _Session:
        with self._lock:
            session = self._open.get(key)
            if session is None:
                session = self._open[key] = _Session(self._new_executor())
            session.last_used = time.monotonic()
            return session

    def begin(self, session: _Session) -> None:
        """A call starts in `session` (just after `get`, whose fresh last_used keeps the reaper off
        it meanwhile): not idle until `done`."""
        with self._lock:
            session.busy += 1

    def done(self, session: _Session) -> None:
        """The end of a call that `begin` began: idle from now."""
        with self._lock:
            session.busy -= 1
            session.last_used = time.monotonic()

    def _new_executor(self) -> Any:
        if self._pool is not None:
            try:
                executor = self._pool.take(timeout=0)
            except (TimeoutError, ExecutorError):  # none free this moment: one of its own
                pass
            else:
                self._pooled.add(id(executor))
                return executor
        return self._make()

    def _end(self, executor: Any) -> None:
        """A session's executor at its end: back to the pool (which destroys it and starts a
        fresh one), or closed."""
        with self._lock:
            pooled = id(executor) in self._pooled
            self._pooled.discard(id(executor))
        if pooled:
            self._pool.give_back(executor)
        else:
            executor.close()

    def close(self, key: str, *, idle_s: float | None = None) -> bool:
        """End the session `key`; with idle_s, only if it is still idle that long: decided under
        the lock `get` takes, so a call arriving at the same moment keeps its session."""
        with self._lock:
            session = self._open.get(key)
            if session is None or (idle_s is not None and (session.busy or time.monotonic() - session.last_used <= idle_s)):
                return False
            del self._open[key]
        with session.lock:  # a call still running in it finishes first
            self._end(session.executor)
        return True

    def drop(self, session: _Session) -> None:
        """Forget a broken session's executor (called under its lock) and close it."""
        with self._lock:
            for key in [k for k, s in self._open.items() if s is session]:
                del self._open[key]
        try:
            self._end(session.executor)
        except Exception:  # broken already: closing is best effort
            pass

    def close_idle(self, idle_s: float) -> int:
        now = time.monotonic()
        with self._lock:
            stale = [k for k, s in self._open.items() if not s.busy and now - s.last_used > idle_s]
        return sum(self.close(k, idle_s=idle_s) for k in stale)

    def close_all(self) -> None:
        for key in list(self._open):
            self.close(key)

    def __len__(self) -> int:
        return len(self._open)


def tool_description(executor: Any, kind: str) -> str:
    """What the client's model is told about the sandbox, read from the executor itself: its
    policy and what it may import, what isolates it, its files and network, its limits."""
    imports = tuple(getattr(executor, "authorized_imports", ()) or ())
    if restricted(executor):
        modules = "any installed module" if "*" in imports else ", ".join(imports) or "none"
        policy = f"Modules it may import: {modules} (importing another is refused)."
    else:
        policy = "It is full Python: any module installed where it runs may be imported, open() works."
    limits = executor.limits
    timeout = f"{limits.timeout_s:g} s" if limits.timeout_s else "no time limit"
    files = files_section(executor).strip()
    return "\n".join(line for line in (
        "Run Python code in a sandbox and read what it printed, the value of its last line, its "
        "error, and the figures it drew (as images; matplotlib figures left open are returned).",
        "Variables, functions and imports persist between calls in this session: build on them. "
        "reset() forgets them, list_variables() shows them.",
        f"The code runs in the {kind} executor ({_isolation(executor)}). {policy}",
        access_rule(executor),
        files,
        f"Each call may run {timeout} and print {limits.max_output_chars:,} characters (cut head "
        "and tail beyond).",
        kernel_line(executor),
    ) if line)


def kernel_line(executor: Any) -> str:
    """The kernel layers that hold the sandbox, each on / off / unavailable (its `isolation`)."""
    try:
        layers = executor.isolation.kernel_layers
    except Exception:  # noqa: BLE001 - an executor without a kernel report says nothing here
        return ""
    if not layers:
        return ""
    return "Kernel layers: " + "; ".join(f"{name} {text.split(':')[0]}" for name, text in layers.items()) + "."


def _isolation(executor: Any) -> str:
    """What keeps the code in, from the executor's own isolation report (files, network, user)."""
    layers = getattr(getattr(executor, "isolation", None), "layers", None) or {}
    shown = [f"{concern}: {layers[concern]}" for concern in ("files", "network", "user") if concern in layers]
    return "; ".join(shown) or "isolation unknown"


def run_python_result(result: Any) -> Any:
    """An `ExecutionResult` as an MCP `CallToolResult`: text, one image per figure, structure."""
    from mcp.types import CallToolResult, ImageContent, TextContent

    figures = [FigureInfo(name=a.name or f"figure {i}", media_type=a.media_type, width=a.width,
                          height=a.height, size=len(a.data)) for i, a in enumerate(result.attachments, 1)]
    lines = "\n".join(f"[{a.describe()}; the image follows]" for a in result.attachments)
    text = observation_text(result, OBSERVATION_CHARS, final=result.is_final_answer, figures=lines)
    value = plain_json(result.output)
    error = result.error
    structured = RunPythonOutput(
        output=result.output_repr if value is NOT_JSON else value, logs=result.logs,
        error=None if error is None else ErrorInfo(**error.to_dict()), figures=figures)
    content: list[Any] = [TextContent(type="text", text=text)]
    content += [ImageContent(type="image", data=base64.b64encode(a.data).decode("ascii"), mime_type=a.media_type)
                for a in result.attachments]
    return CallToolResult(content=content, structured_content=structured.model_dump(mode="json"),
                          is_error=error is not None and not result.is_final_answer)


def _variables_text(variables: Mapping[str, Any]) -> str:
    if not variables:
        return "No variables yet."
    lines = []
    for name, value in variables.items():
        shown = value if isinstance(value, str) and value.startswith("<") else short_repr(value, 300)
        lines.append(f"{name} = {truncate_middle(shown, 300)}")
    return truncate_middle("\n".join(lines), OBSERVATION_CHARS)


def build_server(sessions: Sessions, description: str, session_key: Callable[[Any], str | None]) -> Any:
    """The MCPServer with the three tools; `session_key(ctx)` names the session of a request."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent

    server = MCPServer(SERVER_NAME, log_level="WARNING", instructions="A Python sandbox: call run_python with code; state persists "
                                                 "between calls of a session.")

    def session_of(ctx: Context) -> _Session:
        key = session_key(ctx)
        if key is None:
            raise ToolError("this request belongs to no MCP session: connect with the initialize handshake "
                            "(protocol 2025-11-25), whose session keeps your variables between calls")
        return sessions.get(key)

    async def run_python(code: str, ctx: Context) -> CallToolResult:
        # awaited on the server's loop (`aexecute`): many sessions' steps at once, no thread each
        session = await asyncio.to_thread(session_of, ctx)  # (a new session starts its executor)
        sessions.begin(session)  # (no await between: a cancelled call cannot leave it begun)
        try:
            async with _held(session.lock):  # one step at a time per session; other sessions run meanwhile
                try:
                    result = await session.executor.aexecute(code)
                except ExecutorError as exc:  # the sandbox itself broke (a grant it cannot use, ...)
                    sessions.drop(session)  # the next call gets a fresh one
                    raise ToolError(f"the sandbox failed, not your code: {exc}") from None
        finally:
            sessions.done(session)
        return run_python_result(result)

    def reset(ctx: Context) -> str:
        """Forget every variable, function and import of this session's sandbox."""
        session = session_of(ctx)
        sessions.begin(session)
        try:
            with session.lock:
                session.executor.reset()
        finally:
            sessions.done(session)
        return "The sandbox's variables are gone; the next run_python starts fresh."

    def list_variables(ctx: Context) -> CallToolResult:
        """The variables of this session's sandbox: values that are plain data as themselves, others as their repr."""
        session = session_of(ctx)
        sessions.begin(session)
        try:
            with session.lock:
                variables = session.executor.get_variables()
        finally:
            sessions.done(session)
        # a set or a date decoded from the wire is not JSON: its repr (host-made builtins: safe)
        plain = {k: short_repr(v, OBSERVATION_CHARS) if (j := plain_json(v)) is NOT_JSON else j
                 for k, v in variables.items()}
        return CallToolResult(content=[TextContent(type="text", text=_variables_text(variables))],
                              structured_content={"variables": plain})

    # The SDK reads the annotations to find the context parameter and the output schema; this
    # module's are strings (postponed evaluation) naming local imports: give it the objects.
    run_python.__annotations__ = {"code": str, "ctx": Context,
                                  "return": Annotated[CallToolResult, RunPythonOutput]}
    reset.__annotations__ = {"ctx": Context, "return": str}
    list_variables.__annotations__ = {"ctx": Context, "return": CallToolResult}
    server.add_tool(run_python, description=description)
    server.add_tool(reset)
    server.add_tool(list_variables)
    return server


@contextlib.asynccontextmanager
async def _held(lock: threading.Lock) -> AsyncIterator[None]:
    """A session's lock, taken without blocking the loop (close() waits on it from a thread)."""
    while not lock.acquire(blocking=False):
        await asyncio.sleep(0.005)
    try:
        yield
    finally:
        lock.release()


def stdio_session(ctx: Any) -> str:
    """Over stdio the process serves one client: one session."""
    return STDIO


def http_session(ctx: Any) -> str | None:
    """Over HTTP, the session id the handshake gave (the SDK answers unknown ids with 404)."""
    headers = ctx.headers or {}
    return headers.get(SESSION_KEY_HEADER)
