"""One MCP server as the host sees it: a session held open on a background event loop.

The `mcp` client is asyncio; the executors call tools synchronously, from the thread that runs a
step (the sandbox's tool channel ends there). So each `MCPTools` owns one daemon thread running an
event loop (`EventLoop`), and each server a long-lived task on it that holds the session open
(`ServerConnection`): anyio requires the task that entered a client to be the one that leaves it.
A call is a coroutine sent to that loop, waited for with a deadline; nothing of it runs in the
sandbox.

Failures, each one clear error and never a hang:
- a server that cannot start, exits at start, or does not answer within `start_timeout_s`:
  `MCPStartError` naming the server and the end of what it wrote on stderr;
- a call past its timeout: `ToolTimeoutError`; the connection is then probed, and a server that
  no longer answers is restarted at the next call;
- a server that died (connection closed): a `ToolError` saying so, and a restart at the next call.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import os
import shlex
import threading
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from executors.base import ToolError

from ..tools.tool import ToolTimeoutError

__all__ = ["ServerSpec", "EventLoop", "ServerConnection", "MCPStartError", "require_mcp"]

PROBE_S = 3.0  # how long a server that just timed out gets to show it still answers
GRACE_S = 5.0  # past a call's own deadline, how long the host waits for the loop to give up
MAX_HTTP_EVENT = 64 * 1024 * 1024  # an SSE event the client accepts (the SDK's default is 1 MiB)


class MCPStartError(RuntimeError):
    """An MCP server could not be started or reached (the message names it and says why)."""


def require_mcp() -> None:
    """The `mcp` package, or an ImportError that says how to install it."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"MCP support needs the official mcp package (2.x): pip install 'codeagent[mcp]' "
                          f"({exc})") from None


@dataclass(frozen=True)
class ServerSpec:
    """Where one MCP server is: a command (stdio) or a URL (streamable HTTP)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    name: str | None = None  # the prefix of its tools' names on a clash (default: the server's own name)

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server is either command=... (stdio) or url=... (streamable HTTP), "
                             "exactly one of them")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http:// or https:// address, got {self.url!r}")
        if isinstance(self.args, str):
            raise TypeError("args must be a list of strings, e.g. args=['-m', 'mcp_server_time']")

    @property
    def label(self) -> str:
        return self.url if self.url else shlex.join([self.command or "", *self.args])


class EventLoop:
    """An asyncio loop on a daemon thread; `run(coro, timeout)` waits for a coroutine from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="codeagent-mcp", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except BaseException:  # a timeout, or the step's thread interrupted at its deadline
            future.cancel()
            raise

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


class _StderrTail:
    """A pipe for a stdio server's stderr whose last few kilobytes are kept for error messages."""

    def __init__(self, keep: int = 4096) -> None:
        read_fd, write_fd = os.pipe()
        self.file = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size, self._keep = 0, keep
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, args=(read_fd,), name="mcp-stderr", daemon=True).start()

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                with self._lock:
                    self._chunks.append(chunk)
                    self._size += len(chunk)
                    while self._size - len(self._chunks[0]) >= self._keep:
                        self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        with self._lock:
            data = b"".join(self._chunks)[-self._keep:]
        lines = data.decode("utf-8", "replace").strip().splitlines()
        return "\n".join(lines[-8:])

    def close(self) -> None:
        self.file.close()


@dataclass
class ServerConnection:
    """One server's session on the loop: `start()`, `call(...)`, `close()` (all from any thread)."""

    spec: ServerSpec
    loop: EventLoop
    start_timeout_s: float
    client: Any = None
    server_name: str | None = None
    listing: list[Any] = field(default_factory=list)
    dead: str | None = None  # why the session can no longer be used: it restarts at the next call
    _stop: asyncio.Event | None = None
    _task: asyncio.Task[None] | None = None
    _stderr: _StderrTail | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- from the caller's thread ------------------------------------------------------------

    def start(self) -> None:
        """Connect and list the tools; `MCPStartError` when that fails or takes too long."""
        try:
            self.loop.run(self._start(), self.start_timeout_s + GRACE_S)
        except MCPStartError:
            raise
        except BaseException as exc:
            message = self._start_failure(_leaf(exc))
            self._forget()
            raise MCPStartError(message) from None

    def call(self, name: str, arguments: dict[str, Any], timeout_s: float, label: str) -> Any:
        """`tools/call` with a deadline; the server's answer (`CallToolResult`) or a ToolError."""
        with self._lock:  # one restart, however many threads find the server dead
            if self.client is None or self.dead:
                self._restart(label)
            client = self.client
        try:
            return self.loop.run(client.call_tool(name, arguments, read_timeout_seconds=timeout_s),
                                 timeout_s + GRACE_S)
        except Exception as exc:
            raise self._failure(exc, timeout_s, label) from None

    async def acall(self, name: str, arguments: dict[str, Any], timeout_s: float, label: str) -> Any:
        """`call` from another event loop (an async run's): it awaits the session's loop without
        holding a thread; a restart or a probe (rare, blocking) runs on a thread."""
        if self.client is None or self.dead:
            await asyncio.to_thread(self._restart_once, label)
        future = asyncio.run_coroutine_threadsafe(
            self.client.call_tool(name, arguments, read_timeout_seconds=timeout_s), self.loop.loop)
        try:
            async with asyncio.timeout(timeout_s + GRACE_S):
                return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.cancel()
            error = exc
        raise await asyncio.to_thread(self._failure, error, timeout_s, label) from None

    def _restart_once(self, label: str) -> None:
        with self._lock:
            if self.client is None or self.dead:
                self._restart(label)

    def _failure(self, exc: BaseException, timeout_s: float, label: str) -> BaseException:
        """The ToolError for a call that failed with `exc` (a timeout probes the server first)."""
        from mcp import MCPError

        if isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError)) or (
                isinstance(exc, MCPError) and "timed out" in str(exc)):
            self._probe()
            return ToolTimeoutError(
                f"{label}() did not return within its {timeout_s:g} s timeout (MCP server "
                f"{self.spec.label}). Call it with a smaller request or try another approach.")
        if isinstance(exc, MCPError):
            if "Connection closed" not in str(exc):
                return ToolError(f"{label}() failed on the MCP server: {exc}")
            self.dead = "the connection closed"
        elif isinstance(exc, (OSError, RuntimeError)):  # the transport broke under the call
            self.dead = f"{type(exc).__name__}: {exc}"
        else:
            return exc
        return ToolError(self._died(label))

    def close(self) -> None:
        self._forget()

    # -- on the loop -------------------------------------------------------------------------

    async def _start(self) -> None:
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = self.loop.loop.create_future()
        self._task = asyncio.ensure_future(self._hold(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.start_timeout_s)
        except BaseException:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            raise

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(Client(await self._transport(stack)))
                self.listing = await _all_tools(client)
                self.server_name = getattr(client.server_info, "name", None)
                self.client, self.dead = client, None
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            else:
                self.dead = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if self.spec.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=self.spec.headers, timeout=httpx2.Timeout(30, read=300)))
            return streamable_http_client(self.spec.url, http_client=http, max_sse_event_size=MAX_HTTP_EVENT)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        if self._stderr is None:
            self._stderr = _StderrTail()
        params = StdioServerParameters(command=self.spec.command or "", args=list(self.spec.args),
                                       env=self.spec.env, cwd=self.spec.cwd)
        return stdio_client(params, errlog=self._stderr.file)

    async def _stop_session(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 8)
            except BaseException:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _answers(self) -> None:
        await self.client.list_tools(cache_mode="refresh")

    # -- helpers -----------------------------------------------------------------------------

    def _restart(self, label: str) -> None:
        self._forget(keep_stderr=True)
        try:
            self.start()
        except MCPStartError as exc:
            raise ToolError(f"{label}() cannot run: {exc}") from None

    def _probe(self) -> None:
        """After a timeout: a server that does not answer a listing quickly is restarted next call."""
        if self.client is None:
            return
        try:
            self.loop.run(asyncio.wait_for(self._answers(), PROBE_S), PROBE_S + GRACE_S)
        except BaseException:
            self.dead = "it stopped answering"

    def _forget(self, keep_stderr: bool = False) -> None:
        if not self.loop.loop.is_closed() and self._task is not None:
            try:
                self.loop.run(self._stop_session(), 15)
            except BaseException:
                pass
        self.client = None
        if self._stderr is not None and not keep_stderr:
            self._stderr.close()
            self._stderr = None

    def _stderr_text(self) -> str:
        text = self._stderr.text() if self._stderr is not None else ""
        return f"; its stderr ends with:\n{text}" if text else ""

    def _start_failure(self, exc: BaseException) -> str:
        where = f"MCP server {self.spec.label}"
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError)):
            return f"{where} did not answer within {self.start_timeout_s:g} s{self._stderr_text()} (start_timeout_s)"
        if isinstance(exc, FileNotFoundError):
            return f"{where} cannot start: {self.spec.command!r} was not found (is it installed, on PATH?)"
        text = str(exc) or type(exc).__name__
        if "Connection closed" in text:
            return f"{where} closed the connection while starting (it exited?){self._stderr_text()}"
        return f"{where} cannot be reached: {type(exc).__name__}: {text}{self._stderr_text()}"

    def _died(self, label: str) -> str:
        return (f"{label}() failed: the MCP server {self.spec.label} stopped ({self.dead}){self._stderr_text()}. "
                "It is restarted at the next call; tools that kept state on it start fresh.")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups (what the user needs to read)."""
    inner = getattr(exc, "exceptions", None)  # BaseExceptionGroup (or its backport on Python 3.10)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


async def _all_tools(client: Any) -> list[Any]:
    """Every tool of the server (the listing is paged; a server that never ends it is cut at 100 pages)."""
    tools: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools
