"""A light HTTP/1.1 path for chat completions on the event loop (`OpenAIModel.acomplete`/`astream`).

The `openai` SDK spends ~1.5 ms of CPU per request (its client, httpx's connection pool, the
pydantic models of the reply): with 100 runs on one loop, that is the queue they wait in. For a
plain `http://` endpoint (a local server: vLLM, Ollama, llama.cpp) reached without a proxy, with the
model's own key and a timeout in seconds, async requests go here instead: asyncio streams,
keep-alive connections kept per loop, the reply read with `json.loads` into dicts whose fields read
as attributes too (as the SDK's models). https, proxies, SDK options in `request_options` and the
retries after a first failure stay with the SDK.

Failures are raised as the SDK's exceptions (a status error made by the SDK client from the answer,
`APITimeoutError` after `timeout` seconds without a byte, `APIConnectionError`), so the model's
adaptations, retries and messages are the same on both paths.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn
from urllib.parse import urlsplit

from .endpoint import CONNECT_TIMEOUT_S, ModelError, _short

__all__ = ["Obj", "loads", "light_url", "light_client", "request_body", "LightClient", "LightResponse"]

IDLE_MAX = 100  # keep-alive connections kept per loop (the SDK keeps as many)
_PIECE = 1 << 16
SDK_ONLY = frozenset({"extra_headers", "extra_query", "timeout"})  # request options only the SDK reads


class Obj(dict):
    """A JSON object whose fields also read as attributes (`chunk.choices[0].delta.content`)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def loads(data: bytes | str) -> Any:
    return json.loads(data, object_hook=Obj)


def light_url(base_url: str | None) -> tuple[str, int, str] | None:
    """(host, port, path of chat completions) when requests to `base_url` may take the light
    path: plain http, no credentials or query in the URL, no proxy the SDK would have used."""
    if not base_url:
        return None
    try:
        parts = urlsplit(base_url)
        port = parts.port or 80
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme != "http" or not host or parts.query or parts.fragment or parts.username or parts.password:
        return None
    proxies = urllib.request.getproxies_environment()
    if (proxies.get("http") or proxies.get("all")) and not urllib.request.proxy_bypass_environment(host):
        return None
    return host, port, parts.path.rstrip("/") + "/chat/completions"


def light_client(model: Any) -> LightClient | None:
    """`model`'s light client for the running loop (an `OpenAIModel`: its connections belong to
    one loop), None when its requests cannot take the light path (https, a proxy, a client of
    its own, a timeout object, `light_http=False`)."""
    if not (model.light_http and model._key is not None and model._given_async is None
            and isinstance(model.timeout, (int, float))):
        return None
    loop = asyncio.get_running_loop()
    client = model._light_clients.get(loop)
    settings = (model.base_url, model._key, model.timeout)  # (changed since: a new client)
    if client is None or client.settings != settings:
        where = light_url(model.base_url)  # (the proxy settings are read here, once)
        if where is None or not (model._key.isascii() and model._key.isprintable()):
            client = _NoLight()  # (a key that is no header value: the SDK says so)
        else:
            timeout = float(model.timeout)
            client = LightClient(*where, model._key, timeout, min(timeout, CONNECT_TIMEOUT_S), model._async_client)
        model._light_clients[loop] = client
        client.settings = settings
    return None if isinstance(client, _NoLight) else client


class _NoLight:
    """A model whose endpoint takes the SDK's path (remembered per loop, as a light client is)."""

    settings: Any = None


def request_body(request: dict[str, Any]) -> bytes | None:
    """The JSON body of `request` (`chat.completions.create`'s arguments) for the light path,
    its `extra_body` merged in as the SDK does; None when the request needs the SDK (an SDK
    option, a value JSON cannot carry)."""
    if not SDK_ONLY.isdisjoint(request):
        return None
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    try:
        return json.dumps(body, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return None


def _httpx() -> Any:
    try:
        import httpx2 as httpx  # (the openai SDK's HTTP library, renamed in its newer releases)
    except ImportError:
        import httpx
    return httpx


class LightClient:
    """Requests to one endpoint from one event loop, over keep-alive connections."""

    def __init__(self, host: str, port: int, path: str, api_key: str, timeout: float, connect_timeout: float,
                 sdk: Callable[[], Any]) -> None:
        self.host, self.port, self.timeout, self.connect_timeout = host, port, timeout, connect_timeout
        self._sdk = sdk  # the SDK's async client (made at first need): it makes the status errors
        where = f"[{host}]" if ":" in host else host
        where += "" if port == 80 else f":{port}"
        self.url = f"http://{where}{path}"
        self._head = (f"POST {path} HTTP/1.1\r\nHost: {where}\r\nAccept: application/json\r\n"
                      f"Content-Type: application/json\r\nUser-Agent: codeagent\r\n"
                      f"Authorization: Bearer {api_key}\r\nContent-Length: ").encode("latin-1")
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.settings: Any = None  # what the model made it with
        self._keeper: AsyncIterator[None] | None = None

    async def _until_the_loop_ends(self) -> AsyncIterator[None]:
        """Closes the kept connections when the loop shuts down: `asyncio.run` closes the async
        generators still open on its loop, this one among them."""
        try:
            yield
        finally:
            self._keeper = None  # (a closed generator still holds its loop: let the loop go)
            self.close()

    async def send(self, body: bytes, *, stream: bool, where: str | None) -> Any:
        """A streamed request's response (read by `openai_stream.light_stream`), or a whole
        completion, read and parsed (fields read as attributes too, as the SDK's)."""
        response = await self.post(body)
        if stream:
            return response
        content = await response.read()
        try:
            return loads(content)
        except ValueError:
            raise ModelError(f"model endpoint {where or self.url} answered with a body that is not JSON "
                             f"({response.content_type or 'no content type'}): {_short(content[:200])}") from None

    async def post(self, body: bytes) -> LightResponse:
        """Send `body` (JSON); the response once its head has come (an error status raised as the
        SDK's status error, its body read). A kept connection the server had closed is replaced."""
        if self._keeper is None:
            self._keeper = self._until_the_loop_ends()
            await self._keeper.__anext__()
        message = self._head + str(len(body)).encode() + b"\r\n\r\n" + body
        while True:
            reused = bool(self._idle)
            reader, writer = await self._connection()
            try:
                writer.write(message)
                async with asyncio.timeout(self.timeout):
                    await writer.drain()
                    head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                writer.close()
                if reused and not getattr(exc, "partial", b""):
                    continue  # closed while it was kept: the request was not read, send it afresh
                raise self.broken(exc) from ConnectionError("the server closed the connection before answering")
            except BaseException as exc:
                writer.close()
                self.reraise(exc)
            break
        response = LightResponse(self, reader, writer, head)
        if not 200 <= response.status < 300:
            content = await response.read()
            raise self.status_error(response, content)
        return response

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self._idle:
            reader, writer = self._idle.pop()
            if not (reader.at_eof() or writer.is_closing()):
                return reader, writer
            writer.close()
        try:
            async with asyncio.timeout(self.connect_timeout):
                return await asyncio.open_connection(self.host, self.port)
        except BaseException as exc:
            self.reraise(exc)

    def release(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._idle) < IDLE_MAX and not writer.is_closing():
            self._idle.append((reader, writer))
        else:
            writer.close()

    def close(self) -> None:
        while self._idle:
            self._idle.pop()[1].close()

    # -- failures, as the SDK raises them ------------------------------------------------------

    def request(self) -> Any:
        """The request as the SDK's exceptions carry it (made only for a failure)."""
        return _httpx().Request("POST", self.url)

    def reraise(self, exc: BaseException) -> NoReturn:
        """Raise a transport failure as the SDK's exception (a cancellation stays one)."""
        import openai

        if isinstance(exc, TimeoutError):
            raise openai.APITimeoutError(request=self.request()) from exc
        if isinstance(exc, (OSError, EOFError, ValueError, asyncio.LimitOverrunError)):
            raise self.broken(exc) from exc
        raise exc

    def broken(self, exc: BaseException) -> BaseException:
        import openai

        return openai.APIConnectionError(request=self.request())

    def status_error(self, response: LightResponse, content: bytes) -> Exception:
        httpx = _httpx()
        answer = httpx.Response(response.status, headers=list(response.headers.items()), content=content,
                                request=self.request())
        return self._sdk()._make_status_error_from_response(answer)


class LightResponse:
    """A response whose head has come; its body read whole (`read`) or as it comes (`pieces`,
    `events`). `close()` before the end closes the connection: the server sees it go."""

    def __init__(self, client: LightClient, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 head: bytes) -> None:
        self.client, self._reader, self._writer = client, reader, writer
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        try:
            self.status = int(rest[:3])
        except ValueError:
            writer.close()
            raise client.broken(ValueError(f"not an HTTP answer: {lines[0][:80]!r}")) from None
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                self.headers[name.strip().lower()] = value.strip()
        self.content_type = self.headers.get("content-type", "")
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        self._left = int(length) if length and length.isdigit() and not self._chunked else None
        self._keep = (version == "HTTP/1.1" and self.headers.get("connection", "").lower() != "close"
                      and (self._chunked or self._left is not None))
        self._open = True

    async def _read(self, how: Callable[..., Any], *args: Any) -> bytes:
        try:
            async with asyncio.timeout(self.client.timeout):
                return await how(*args)
        except asyncio.IncompleteReadError as exc:
            self.close()
            raise self.client.broken(exc) from ConnectionError("the server closed the connection before the reply's end")
        except BaseException as exc:
            self.close()
            self.client.reraise(exc)

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it comes (each read waits at most the timeout); at its end the connection is
        kept for the next request."""
        reader = self._reader
        if self._chunked:
            while True:
                line = await self._read(reader.readuntil, b"\n")
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.close()
                    raise self.client.broken(ValueError("a malformed chunk")) from None
                if size == 0:
                    while (await self._read(reader.readuntil, b"\n")).strip():
                        pass  # (trailers)
                    break
                yield (await self._read(reader.readexactly, size + 2))[:-2]
        elif self._left is not None:
            if self._left:
                left, self._left = self._left, 0
                yield await self._read(reader.readexactly, left)
        else:  # to the connection's end
            while piece := await self._read(reader.read, _PIECE):
                yield piece
        self.finish()

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self.pieces()])

    async def events(self) -> AsyncIterator[str]:
        """The `data` of each server-sent event, as the body comes."""
        buffer, data = b"", []
        async for piece in self.pieces():
            buffer += piece
            while (end := buffer.find(b"\n")) != -1:
                line, buffer = buffer[:end].rstrip(b"\r"), buffer[end + 1:]
                if not line:
                    if data:
                        yield b"\n".join(data).decode()
                        data = []
                elif line.startswith(b"data:"):
                    data.append(line[6:] if line[5:6] == b" " else line[5:])
        if data:
            yield b"\n".join(data).decode()

    def finish(self) -> None:
        if self._open:
            self._open = False
            if self._keep:
                self.client.release(self._reader, self._writer)
            else:
                self._writer.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._writer.close()
