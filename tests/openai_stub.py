"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol.

It replays scripted replies, so tests can drive `OpenAIModel` and the whole agent through the
real `openai` client (HTTP, JSON, retries, error statuses) without a model. Each scripted reply is
either a string (the assistant's content) or a dict:

    {"text": "...", "reasoning_content": "...", "usage": {...}, "finish_reason": "stop"}
    {"status": 500, "error": "boom"}                 # an error response (SDK retries 429/5xx)
    {"tool_calls": [{"name": "add", "arguments": {"a": 1}}], "text": ""}   # native tool calls
        (arguments may be a dict or the raw JSON text; "id" is optional)

Options mimic real servers: `system_role=False` rejects system messages with HTTP 400 (like some
chat templates), `honor_stop=False` ignores `stop`, `reject_stop=True` answers 400 when a request
carries `stop`, `reject_tools=True` answers 400 when a request carries `tools` (a server
without function calling). Every request body is kept in `.requests` for assertions.

Streaming: a request with `"stream": true` is answered with server-sent events, the text in chunks
of `chunk_chars` characters (`stream=False`: answered whole, as a server that does not stream;
`reject_stream=True`: HTTP 400), the usage in a last chunk when `stream_options.include_usage`.
A reply dict may add `"chunk_delay_s"` (between chunks), `"tail"` (text streamed after the reply,
chunk by chunk with `"tail_delay_s"`, for as long as the client keeps reading), `"stall_after"` (a
number of characters, then `"stall_s"` of silence) and `"break_after"` (characters, then the
connection is dropped). `.cut` lists (request number, characters sent) of every streamed reply
whose client closed the connection before its end.

Run it by hand (`python tests/openai_stub.py "reply 1" "reply 2"`) to point `codeagent run` at it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIStub"]


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4) if text else 0


class OpenAIStub:
    def __init__(
        self,
        replies: Iterable[str | dict[str, Any]] = (),
        *,
        system_role: bool = True,
        honor_stop: bool = True,
        reject_stop: bool = False,
        repeat_last: bool = False,
        reject_tools: bool = False,
        stream: bool = True,
        reject_stream: bool = False,
        chunk_chars: int = 4,
    ) -> None:
        self.replies: deque[str | dict[str, Any]] = deque(replies)
        self.system_role = system_role
        self.honor_stop = honor_stop
        self.reject_stop = reject_stop
        self.reject_tools = reject_tools
        self.repeat_last = repeat_last  # keep answering with the last reply once the script runs out
        self.requests: list[dict[str, Any]] = []
        self.responses: list[int] = []  # HTTP status of each response, in order
        self.stream, self.reject_stream, self.chunk_chars = stream, reject_stream, chunk_chars
        self.cut: list[tuple[int, int]] = []  # (request number, characters sent) of streams cut short
        self.stopping = threading.Event()  # ends stalls and endless tails when the stub stops
        self._last: str | dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> OpenAIStub:
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for the serving loop to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the stub first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *replies: str | dict[str, Any]) -> None:
        with self._lock:
            self.replies.extend(replies)

    # -- protocol ----------------------------------------------------------------------------

    def handle(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, extra headers) for one chat-completions request."""
        with self._lock:
            self.requests.append(body)
            messages = body.get("messages")
            if not isinstance(body.get("model"), str) or not isinstance(messages, list) or not messages:
                return _error(400, "'model' and a non-empty 'messages' list are required")
            for m in messages:
                if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
                    return _error(400, f"invalid message: {m!r}")
                if m["role"] == "system" and not self.system_role:
                    return _error(400, "System role not supported by this model's chat template")
            stop = body.get("stop")
            if stop is not None and self.reject_stop:
                return _error(400, "Unsupported parameter: 'stop' is not supported with this model")
            if body.get("tools") is not None and self.reject_tools:
                return _error(400, "Unsupported parameter: 'tools' (this server has no function calling)")
            if body.get("stream") and self.reject_stream:
                return _error(400, "Unsupported parameter: 'stream' is not supported by this server")
            if self.replies:
                item = self.replies.popleft()
                self._last = item
            elif self.repeat_last and self._last is not None:
                item = self._last
            else:
                return _error(400, "openai stub: no scripted reply left")
        if isinstance(item, str):
            item = {"text": item}
        if "status" in item:
            # retry-after-ms keeps the SDK's backoff short in tests (it honors the header).
            status, payload, headers = _error(int(item["status"]), item.get("error", "scripted error"))
            headers["retry-after-ms"] = str(item.get("retry_after_ms", 5))
            return status, payload, headers
        if item.get("delay_s"):
            time.sleep(float(item["delay_s"]))
        text = item.get("text", "")
        if self.honor_stop and stop:
            stops = [stop] if isinstance(stop, str) else list(stop)
            cuts = [text.find(s) for s in stops if s and s in text]
            if cuts:
                text = text[: min(cuts)]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if item.get("reasoning_content") is not None:
            message["reasoning_content"] = item["reasoning_content"]
        if item.get("tool_calls"):
            message["content"] = text or None
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{len(self.requests)}_{i}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"] if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments") or {}),
                    },
                }
                for i, call in enumerate(item["tool_calls"])
            ]
        prompt = sum(_tokens(str(m.get("content") or "")) for m in messages)
        usage = item.get("usage") or {
            "prompt_tokens": prompt,
            "completion_tokens": _tokens(text),
            "total_tokens": prompt + _tokens(text),
        }
        n = len(self.requests)
        if body.get("stream") and self.stream:
            return 200, {"stream": item, "text": text, "message": message, "usage": usage, "n": n,
                         "include_usage": bool((body.get("stream_options") or {}).get("include_usage"))}, {}
        payload = {
            "id": f"chatcmpl-stub-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{
                "index": 0, "message": message,
                "finish_reason": item.get("finish_reason", "tool_calls" if item.get("tool_calls") else "stop"),
            }],
            "usage": usage,
        }
        return 200, payload, {}


def _error(status: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}, {}


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIStub
    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes; with Nagle on, each response waits ~40 ms for
    # the client's delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.owner.responses.append(status)  # before sending: the client may assert right after
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "stub"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            self._send(400, {"error": {"message": f"invalid JSON body: {exc}", "type": "invalid_request_error"}})
            return
        status, payload, headers = self.owner.handle(body)
        if "stream" in payload:
            self._stream(payload, body["model"])
        else:
            self._send(status, payload, headers)

    def _stream(self, plan: dict[str, Any], model: str) -> None:
        """The reply as server-sent events (see the module docstring)."""
        owner, item, n = self.owner, plan["stream"], plan["n"]
        owner.responses.append(200)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")  # (as real servers: a dropped stream shows)
        self.end_headers()
        sent = 0

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def event(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> None:
            chunk = {"id": f"chatcmpl-stub-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage is not None:
                chunk["choices"], chunk["usage"] = [], usage
            write(f"data: {json.dumps(chunk)}\n\n".encode())

        message, text, size = plan["message"], plan["text"], max(1, owner.chunk_chars)
        try:
            event({"role": "assistant", "content": ""})
            if message.get("reasoning_content"):
                event({"reasoning_content": message["reasoning_content"]})
            for i in range(0, len(text), size):
                if item.get("break_after") is not None and sent >= item["break_after"]:
                    self.connection.shutdown(2)  # dropped mid-reply
                    return
                if item.get("stall_after") is not None and sent >= item["stall_after"]:
                    owner.stopping.wait(float(item.get("stall_s", 30)))
                    item = {k: v for k, v in item.items() if k != "stall_after"}
                event({"content": text[i:i + size]})
                sent += len(text[i:i + size])
                if item.get("chunk_delay_s"):
                    time.sleep(float(item["chunk_delay_s"]))
            tail = item.get("tail", "")
            for _ in range(3000 if tail else 0):  # (until the client closes, or ~30 s)
                for j in range(0, len(tail), size):
                    if owner.stopping.wait(float(item.get("tail_delay_s", 0.01))):
                        return
                    event({"content": tail[j:j + size]})
                    sent += len(tail[j:j + size])
            for i, call in enumerate(message.get("tool_calls") or ()):
                event({"tool_calls": [{"index": i, **call}]})
            event({}, finish=item.get("finish_reason", "tool_calls" if message.get("tool_calls") else "stop"))
            if plan["include_usage"]:
                event({}, usage=plan["usage"])
            write(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            owner.cut.append((n, sent))


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys

    with OpenAIStub(sys.argv[1:] or ["<code>\nfinal_answer('hello from the stub')\n</code>"], repeat_last=True) as s:
        print(f"OpenAI-compatible stub listening on {s.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
