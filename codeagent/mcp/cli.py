"""The command line's MCP flags: `--mcp-stdio "CMD ARGS"` / `--mcp-url URL` for `run` and `batch`, and
`codeagent mcp-serve` (the flags `codeagent.cli.main` adds beside its executor options, and the serving).

`codeagent.cli.main` owns the executor flags and builds executors; this module never imports it (no
import circle): `mcp-serve` receives the executor factory.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shlex
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["add_client_options", "server_specs", "open_toolset", "process_toolset", "add_serve_options",
           "run_serve", "TOKEN_ENV"]

TOKEN_ENV = "CODEAGENT_MCP_TOKEN"
_PROCESS_TOOLSETS: dict[str, Any] = {}
_PROCESS_LOCK = threading.Lock()


def add_client_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("MCP servers (their tools are given to the agent)")
    g.add_argument("--mcp-stdio", action="append", default=[], metavar='"CMD ARGS"',
                   help="start an MCP server and use its tools, e.g. --mcp-stdio \"uvx mcp-server-time\" "
                        "(repeatable)")
    g.add_argument("--mcp-url", action="append", default=[], metavar="URL",
                   help="use the tools of the MCP server at URL (streamable HTTP, repeatable)")


def server_specs(stdio: list[str], urls: list[str]) -> list[dict[str, Any]]:
    """The flags as MCPTools(servers=...) entries: plain dicts (batch sends them to its workers)."""
    specs: list[dict[str, Any]] = []
    for text in stdio:
        words = shlex.split(text)
        if not words:
            raise ValueError("--mcp-stdio needs a command, e.g. --mcp-stdio \"python -m mcp_server_time\"")
        specs.append({"command": words[0], "args": words[1:]})
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"--mcp-url {url}: an http:// or https:// address, e.g. http://127.0.0.1:8000/mcp")
        specs.append({"url": url})
    return specs


def open_toolset(specs: list[dict[str, Any]], timeout_s: float | None = None) -> Any:
    """An open MCPTools for these servers, or None when there are none (MCPStartError propagates)."""
    if not specs:
        return None
    from .client import MCPTools

    options = {"timeout_s": timeout_s} if timeout_s else {}
    return MCPTools(servers=specs, **options).open()


def process_toolset(specs: list[dict[str, Any]]) -> Any:
    """This process's open MCPTools for these servers, opened at first use and closed at exit: a
    batch worker opens its own sessions once, and its tasks share them."""
    key = json.dumps(specs, sort_keys=True)
    with _PROCESS_LOCK:
        toolset = _PROCESS_TOOLSETS.get(key)
        if toolset is None:
            toolset = _PROCESS_TOOLSETS[key] = open_toolset(specs)
            atexit.register(toolset.close)
        return toolset


def add_serve_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("serving")
    g.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio: one client speaks to this process over stdin/stdout (what desktop clients "
                        "start); http: streamable HTTP at http://HOST:PORT/mcp (default: stdio)")
    g.add_argument("--host", default="127.0.0.1",
                   help="http: the address to listen on (default 127.0.0.1; any other needs --token)")
    g.add_argument("--port", type=int, default=8000, help="http: the port (default 8000; 0 picks a free one)")
    g.add_argument("--pool", type=int, default=0, metavar="N",
                   help="keep N workers started and ready, so that a new session starts at once (one "
                        "never used before each; the used one is destroyed and replaced); sessions "
                        "beyond N start their own (default 0: every session starts its own)")
    g.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                   help="http: close a session idle this long, its client gone without ending it "
                        "(default: 1800)")
    g.add_argument("--token", default=None,
                   help=f"http: clients must send 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV})")


def run_serve(args: argparse.Namespace, make_executor: Callable[[], Any]) -> int:
    """Serve the sandbox until the client leaves (stdio) or the process is interrupted (http)."""
    from .connection import require_mcp
    from .serve import Sessions, build_server, http_session, stdio_session, tool_description

    require_mcp()
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.transport == "http":
        from .http import check_binding, fewer_heaps

        check_binding(args.host, token)  # before anything starts
        fewer_heaps()  # (before any thread: glibc fixes its arena limit at the first contention)
    probe = make_executor()  # the flags are checked now; the description is the sandbox's own
    try:
        description = tool_description(probe, args.executor)
    finally:
        probe.close()
    pool = None
    if args.pool > 0:
        from executors import ExecutorPool

        pool = ExecutorPool(make_executor, args.pool).start()
    sessions = Sessions(make_executor, pool)
    try:
        if args.transport == "stdio":
            build_server(sessions, description, stdio_session).run("stdio")
        else:
            from .http import serve_http

            server = build_server(sessions, description, http_session)

            def ready(port: int) -> None:
                print(f"codeagent mcp-serve: listening on http://{args.host}:{port}/mcp "
                      f"({args.executor} executor, one per session)", file=sys.stderr, flush=True)

            idle = {} if args.idle_timeout is None else {"idle_s": max(1.0, args.idle_timeout)}
            serve_http(server, sessions, host=args.host, port=args.port, token=token, ready=ready, **idle)
    except KeyboardInterrupt:
        pass
    finally:
        sessions.close_all()
        if pool is not None:
            pool.close()
    return 0
