"""`codeagent view --serve`: the pages of a PATH on 127.0.0.1, rendered when asked and reloaded
in the browser while a batch or a run writes into the folder.

Each page polls `/_state/<route>`, the fingerprint (sizes and times) of the files it was built
from, and reloads when that changes, keeping its filters, sort, open sections and scroll. The
server binds the loopback interface only, answers GET only, refuses requests whose Host header
is not its own (a web page elsewhere cannot reach it by DNS rebinding), and sends the page's
Content-Security-Policy as a header too.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from .page import content_security_policy
from .site import Site
from .sources import ViewError

__all__ = ["make_server", "serve", "DEFAULT_PORT"]

DEFAULT_PORT = 8765
HOST = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    server: _ViewServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server spelling
        if self.headers.get("Host") not in self.server.hosts:
            return self._send(421, "text/plain", "this server answers only to " + self.server.url)
        route = unquote(urlsplit(self.path).path).lstrip("/")
        site = self.server.site
        if route.startswith("_state/"):
            return self._send(200, "text/plain", site.state(route[len("_state/"):]))
        try:
            body = site.render(route)
        except KeyError:
            return self._send(404, "text/plain", f"no page at /{route}: the pages start at {self.server.url}")
        except ViewError as exc:
            return self._send(500, "text/plain", str(exc))
        self._send(200, "text/html; charset=utf-8", body)

    def _send(self, status: int, media_type: str, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", content_security_policy(live=True) + "; frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            sys.stderr.write(f"view: {self.address_string()} {format % args}\n")


class _ViewServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, site: Site, port: int, verbose: bool) -> None:
        super().__init__((HOST, port), _Handler)
        self.site, self.verbose = site, verbose
        port = self.server_address[1]
        self.url = f"http://{HOST}:{port}/"
        self.hosts = {f"{HOST}:{port}", f"localhost:{port}"}


def make_server(path: str | os.PathLike[str], *, against: str | os.PathLike[str] | None = None,
                port: int = DEFAULT_PORT, verbose: bool = False) -> _ViewServer:
    """A server for the pages of `path` (not yet serving: call `serve_forever()`); `.url` is its
    address. Port 0 picks a free one. ViewError when the path cannot be shown or the port is taken."""
    site = Site(path, against=against, live=True)
    try:
        return _ViewServer(site, port, verbose)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ViewError(f"port {port} is in use on {HOST}: pass --port N (0 picks a free one)")
        raise ViewError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}")


def serve(path: str | os.PathLike[str], *, against: str | os.PathLike[str] | None = None,
          port: int = DEFAULT_PORT, verbose: bool = False,
          ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted; `ready(url)` is called once it listens."""
    server = make_server(path, against=against, port=port, verbose=verbose)
    with server:
        if ready is not None:
            ready(server.url)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
