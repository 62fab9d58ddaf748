"""An MCP server the tests start (stdio, or streamable HTTP with `--http PORT`): a few tools that
answer, fail, hang, die, return images and huge results, to check MCPTools against each.

    python toy_server.py [--name NAME] [--exit-at-start | --mute] [--http]

With --http it listens on a free port of 127.0.0.1 and prints `listening on URL` on stderr.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
import zlib

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent


def png(width: int, height: int) -> bytes:
    """A tiny valid grey PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x00\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def build(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(name="word-count")
    def word_count(text: str, min_length: int = 1) -> dict[str, int]:
        """Count the words of `text` at least `min_length` long."""
        words = [w for w in text.split() if len(w) >= min_length]
        return {"words": len(words), "characters": len(text)}

    @server.tool()
    def shout(text: str) -> CallToolResult:
        """Say it louder (text only)."""
        return CallToolResult(content=[TextContent(type="text", text=text.upper()),
                                       TextContent(type="text", text="!")])

    @server.tool()
    def chart(title: str) -> CallToolResult:
        """A chart as an image, with a caption."""
        data = base64.b64encode(png(32, 16)).decode()
        return CallToolResult(content=[TextContent(type="text", text=f"chart of {title}"),
                                       ImageContent(type="image", data=data, mime_type="image/png")])

    @server.tool()
    def lookup(city: str) -> str:
        """Population of a city."""
        raise ToolError(f"no such city: {city}")

    @server.tool()
    def big(megabytes: int = 10) -> str:
        """A very long text."""
        return "0123456789" * (megabytes * 100_000)

    @server.tool()
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep(3600)
        return "never"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def die() -> str:
        """The server exits."""
        os._exit(7)

    return server


def serve_http(server: MCPServer) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # Listen before the line is printed: a client that connects while uvicorn still starts
    # waits in the backlog instead of being refused (a slow machine lost that race in CI).
    sock.listen(64)
    app = server.streamable_http_app(json_response=True)
    print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="toy")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--mute", action="store_true")
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    if args.exit_at_start:
        print("toy_server: missing configuration file toy.toml", file=sys.stderr)
        sys.exit(3)
    if args.mute:  # started, but never answers
        print("toy_server: waiting forever", file=sys.stderr, flush=True)
        time.sleep(3600)
    server = build(args.name)
    if args.http:
        serve_http(server)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
