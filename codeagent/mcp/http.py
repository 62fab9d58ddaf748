"""`mcp-serve` over streamable HTTP: the gate in front of the SDK's app, and the server's lifetime.

The gate (an ASGI wrapper) does three things before the SDK sees a request:
- with a token, a request without `Authorization: Bearer <token>` gets 401 (compared in constant
  time); the token is required whenever the server listens beyond loopback (`check_binding`);
- a request in the stateless 2026 protocol gets the JSON-RPC error -32022 naming the handshake
  versions: its requests share no session, so a sandbox's variables could not persist; the SDK's
  clients fall back to the handshake on that answer;
- a DELETE of a session (the client ending it) closes that session's executor once answered.
Sessions the client just abandons are closed after the SDK's idle timeout, by a reaper thread.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .serve import SESSION_KEY_HEADER, Sessions

__all__ = ["SessionGate", "check_binding", "serve_http", "SESSION_IDLE_S"]

SESSION_IDLE_S = 30 * 60.0
KEEP_ALIVE_S = 75
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """A ValueError (for the user: it names the flags) when the server would be open beyond loopback."""
    if not is_loopback(host) and not token:
        raise ValueError(f"--host {host} makes the sandbox reachable from other machines: pass --token T "
                         "(or set CODEAGENT_MCP_TOKEN) so that only clients sending "
                         "'Authorization: Bearer T' may run code")


def fewer_heaps() -> bool:
    """glibc gives each thread that allocates a heap (an arena) of its own, up to 8 per core; a
    server whose sessions run on a pool of threads frees memory into many arenas that are rarely
    given back, and its resident size grows with the traffic, not with what it holds. Two
    arenas, as servers do with MALLOC_ARENA_MAX=2. Call it before the process starts a thread:
    glibc fixes the limit when threads first contend for an arena (measured: a call from the
    serving loop left six arenas). False where it cannot be done (not glibc)."""
    libc = _libc()
    return libc is not None and libc.mallopt(-8, 2) == 1  # M_ARENA_MAX


def trim_heap() -> bool:
    """Give the heaps' free pages back to the system (glibc's malloc_trim): after sessions end.
    False where it cannot be done."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


@functools.cache
def _libc() -> Any:
    import ctypes
    import ctypes.util
    import platform

    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _reply(send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers]})
    await send({"type": "http.response.body", "body": data})


class SessionGate:
    """ASGI middleware: the token, the protocol era, the end of sessions (see the module docstring)."""

    def __init__(self, app: Any, sessions: Sessions, token: str | None) -> None:
        self.app, self.sessions, self.token = app, sessions, token
        # ended sessions are closed on a few threads, not one each: a burst of ends made a burst
        # of threads, whose stacks glibc keeps cached (up to 40 MiB) once they exit
        self.closer = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mcp-session-close")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        if self.token is not None:
            given = _header(scope, b"authorization") or ""
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return await _reply(send, 401, _error(-32001, "unauthorized: send the server's token as "
                                                      "'Authorization: Bearer <token>'"),
                                    [(b"www-authenticate", b"Bearer")])
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        version = _header(scope, b"mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await _reply(send, 400, _error(-32022, (
                f"protocol {version} is stateless; this Python sandbox keeps variables per session: "
                "connect with the initialize handshake"),
                {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version}))
        await self.app(scope, receive, send)
        session = _header(scope, SESSION_KEY_HEADER.encode())
        if scope.get("method") == "DELETE" and session:
            self.closer.submit(self.sessions.close, session)


def _error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": None, "error": error}


def serve_http(server: Any, sessions: Sessions, *, host: str, port: int, token: str | None,
               ready: Any = None, idle_s: float = SESSION_IDLE_S) -> None:
    """Serve until interrupted; `ready(port)` is called once the socket listens. A session idle
    for `idle_s` seconds (a client that walked away without ending it) is closed."""
    import anyio
    import uvicorn

    check_binding(host, token)
    app = server.streamable_http_app(json_response=True, host=host, session_idle_timeout=idle_s)
    # keep-alive: longer than clients keep an idle connection (httpx, the SDK's client: 5 s, as
    # uvicorn's default): then the client always drops it first, and never sends a request on a
    # connection the server is closing at that moment (a ReadError for the client, a lost answer)
    config = uvicorn.Config(SessionGate(app, sessions, token), host=host, port=port, log_level="warning",
                            lifespan="on", timeout_keep_alive=KEEP_ALIVE_S)
    web = uvicorn.Server(config)
    stop = threading.Event()

    def reap() -> None:
        while not stop.wait(min(60.0, idle_s / 2)):
            sessions.close_idle(idle_s)
            trim_heap()

    threading.Thread(target=reap, name="mcp-session-reaper", daemon=True).start()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(web.serve)
            while not web.started:
                await anyio.sleep(0.02)
                if web.should_exit:
                    return
            if ready is not None:
                ready(web.servers[0].sockets[0].getsockname()[1] if web.servers else port)

    try:
        anyio.run(main)
    finally:
        stop.set()
