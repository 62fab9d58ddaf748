"""OpenAIModel's async requests (`acomplete`, `astream`, and the agents' `arun`/`astream`) against the
real HTTP stub, on both of their paths: the light HTTP client (a plain http:// endpoint) and the
`openai` SDK's async client (`light_http = False`). Whatever the path, the user sees the same
replies, deltas, usage, finish reasons, adaptations, retries and errors."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
import weakref

import pytest
from openai_stub import OpenAIStub

from codeagent import CodeAgent, ModelReply, OpenAIModel
from codeagent.agent.tool_calling import ToolCallingAgent
from codeagent.events import ModelReplyEvent, Notice, TextDelta
from codeagent.models.light_http import light_url
from codeagent.models.openai_model import ModelError, Usage
from executors import LocalExecutor

MESSAGES = [{"role": "system", "content": "You write code."}, {"role": "user", "content": "Task: say hi"}]
PATHS = ["light", "sdk"]


def code(body: str) -> str:
    return f"Thought: I will compute it.\n<code>\n{body}\n</code>"


def model_for(base_url: str, path: str, **options) -> OpenAIModel:
    model = OpenAIModel("stub-model", base_url=base_url, api_key="k", **options)
    model.light_http = path == "light"
    return model


def astream_events(agent, task: str = "t") -> list:
    async def main() -> list:
        return [event async for event in agent.astream(task)]

    return asyncio.run(main())


def wait_for(condition, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("path", PATHS)
def test_acomplete_sends_the_protocol_and_returns_text_usage_and_finish_reason(path: str):
    usage = {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    with OpenAIStub([{"text": "Hello", "usage": usage}, "<code>\nprint(1)\n</code>\nObservation: made up"]) as stub:
        model = model_for(stub.base_url, path, request_options={"temperature": 0.2, "top_k": 20})

        async def main() -> list[ModelReply]:
            return [await model.acomplete(MESSAGES, stop=["</code>"]), await model.acomplete(MESSAGES, stop=["</code>"])]

        first, second = asyncio.run(main())
    assert first == ModelReply(text="Hello", usage=Usage(prompt_tokens=11, completion_tokens=2, total_tokens=13), finish_reason="stop")
    assert second.text == "<code>\nprint(1)\n"
    body = stub.requests[0]
    assert body["model"] == "stub-model" and body["messages"] == MESSAGES and body["stop"] == ["</code>"]
    assert body["temperature"] == 0.2 and body["top_k"] == 20 and "stream" not in body


@pytest.mark.parametrize("path", PATHS)
def test_astream_yields_deltas_then_the_reply_with_usage(path: str):
    usage = {"prompt_tokens": 111, "completion_tokens": 22, "total_tokens": 133}
    text = code("final_answer(1)")
    with OpenAIStub([{"text": text, "usage": usage, "reasoning_content": "think: 1 + 1"}]) as stub:
        model = model_for(stub.base_url, path)

        async def main():
            stream = await model.astream(MESSAGES)
            return [d async for d in stream], stream.reply()

        deltas, reply = asyncio.run(main())
    assert [d.text for d in deltas if d.reasoning] == ["think: 1 + 1"]
    pieces = [d.text for d in deltas if not d.reasoning]
    assert len(pieces) > 1 and "".join(pieces) == text and reply.text == text
    assert reply.usage.total_tokens == 133 and reply.finish_reason == "stop" and reply.reasoning == "think: 1 + 1"
    assert stub.requests[0]["stream"] is True and stub.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("path", PATHS)
def test_a_block_that_closes_early_is_cut_and_the_server_sees_the_connection_close(path: str):
    tail = "More words the model goes on writing, that nobody needs. " * 3
    reply = {"text": "Thought: the answer.\n```python\nfinal_answer(6 * 7)\n```\n", "tail": tail}
    with OpenAIStub([reply]) as stub, CodeAgent(model_for(stub.base_url, path), executor=LocalExecutor()) as agent:
        events = astream_events(agent)
        assert wait_for(lambda: stub.cut), "the server never saw the connection closed"
    result = events[-1].result
    assert result.output == 42 and result.steps[0].finish_reason == "cut"
    assert "More words" not in "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("path", PATHS)
def test_a_stream_that_stalls_is_cut_at_the_timeout_with_a_clear_error(path: str):
    reply = {"text": code("final_answer(1)"), "stall_after": 8, "stall_s": 60}
    with OpenAIStub([reply]) as stub, \
            CodeAgent(model_for(stub.base_url, path, timeout=0.5, max_retries=0), executor=LocalExecutor()) as agent:
        t0 = time.monotonic()
        result = astream_events(agent)[-1].result
        waited = time.monotonic() - t0
    assert result.status == "failed" and waited < 30
    assert "stalled" in result.error and "sent nothing for 0.5 s after 8 characters" in result.error


@pytest.mark.parametrize("path", PATHS)
def test_a_stream_that_breaks_off_fails_with_a_clear_error(path: str):
    with OpenAIStub([{"text": code("final_answer(1)"), "break_after": 8}]) as stub, \
            CodeAgent(model_for(stub.base_url, path, max_retries=0), executor=LocalExecutor()) as agent:
        result = astream_events(agent)[-1].result
    assert result.status == "failed" and "broke off after 8 characters" in result.error
    assert len(stub.requests) == 1


@pytest.mark.parametrize("path", PATHS)
def test_servers_that_do_not_stream_or_reject_stream(path: str):
    replies = [code("x = 6"), code("final_answer(x * 7)")]
    with OpenAIStub(replies, stream=False) as stub, \
            CodeAgent(model_for(stub.base_url, path), executor=LocalExecutor()) as agent:
        events = astream_events(agent)
    assert events[-1].result.output == 42 and [e.step for e in events if isinstance(e, TextDelta)] == [1, 2]
    with OpenAIStub(replies, reject_stream=True) as stub, \
            CodeAgent(model_for(stub.base_url, path), executor=LocalExecutor()) as agent:
        events = astream_events(agent)
    assert events[-1].result.output == 42
    assert any(isinstance(e, Notice) and "rejected `stream`" in e.message for e in events)
    assert [bool(r.get("stream")) for r in stub.requests] == [True, False, False]


@pytest.mark.parametrize("path", PATHS)
def test_native_tool_calls_stream_and_come_together(path: str):
    replies = [{"tool_calls": [{"name": "final_answer", "arguments": {"answer": "done"}}]}]
    with OpenAIStub(replies) as stub:
        events = astream_events(ToolCallingAgent(model_for(stub.base_url, path), tools=[]))
    assert events[-1].result.output == "done"
    assert next(e for e in events if isinstance(e, ModelReplyEvent)).finish_reason == "tool_calls"


@pytest.mark.parametrize("path", PATHS)
def test_adaptations_retries_and_errors_are_the_same(path: str):
    reply = "<code>\nprint(1)\n</code>\nObservation: made up"
    with OpenAIStub([reply], reject_stop=True) as stub:
        model = model_for(stub.base_url, path)
        assert asyncio.run(model.acomplete(MESSAGES, stop=["</code>"])).text == "<code>\nprint(1)\n"
        assert stub.responses == [400, 200] and "rejected `stop`" in model.adaptations[0]
    with OpenAIStub([{"status": 500}, {"status": 429}, "fine"]) as stub:
        assert asyncio.run(model_for(stub.base_url, path, max_retries=3).acomplete(MESSAGES)).text == "fine"
        assert stub.responses == [500, 429, 200]
        stub.add({"status": 401, "error": "bad key"})
        with pytest.raises(ModelError, match="HTTP 401: bad key. Check the API key") as info:
            asyncio.run(model_for(stub.base_url, path).acomplete(MESSAGES))
        assert info.value.status == 401


@pytest.mark.parametrize("path", PATHS)
def test_an_unreachable_endpoint_says_so(path: str):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    model = model_for(f"http://127.0.0.1:{port}/v1", path, max_retries=0, timeout=5)
    with pytest.raises(ModelError, match="cannot reach.*--base-url") as info:
        asyncio.run(model.acomplete(MESSAGES))
    assert info.value.status is None


class SilentServer:
    """Accepts connections and reads requests, never answers (counts the requests' first bytes)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.requests = 0
        self.closed = 0  # connections the client closed
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            if conn.recv(65536):
                self.requests += 1
            while conn.recv(65536):
                pass
            self.closed += 1
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.mark.parametrize("path", PATHS)
def test_a_silent_server_ends_the_request_at_the_timeout_and_is_not_asked_again(path: str):
    server = SilentServer()
    try:
        model = model_for(f"http://127.0.0.1:{server.sock.getsockname()[1]}/v1", path, timeout=0.5, max_retries=2)
        t0 = time.monotonic()
        with pytest.raises(ModelError, match=r"sent nothing for 0.5 s .*not tried again"):
            asyncio.run(model.acomplete(MESSAGES))
        assert time.monotonic() - t0 < 10 and wait_for(lambda: server.requests == 1) and len(server.conns) == 1
    finally:
        server.close()


@pytest.mark.parametrize("path", PATHS)
def test_a_cancelled_request_closes_its_connection(path: str):
    """Cancelling the task that awaits a model reply (a cancelled run) hangs up on the server."""
    server = SilentServer()
    try:
        model = model_for(f"http://127.0.0.1:{server.sock.getsockname()[1]}/v1", path, timeout=60, max_retries=0)

        async def main() -> None:
            task = asyncio.ensure_future(model.acomplete(MESSAGES))
            while not server.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(asyncio.wait_for(main(), 30))
        assert wait_for(lambda: server.closed == 1)
    finally:
        server.close()


def test_the_light_path_keeps_its_connection_and_replaces_one_the_server_closed():
    """Whole replies go over one kept connection; a server that closes a kept connection (its
    keep-alive expired) costs nothing but a new one."""
    connections = 0

    async def main() -> list[str]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            served = 0
            try:
                while served < 2 and (head := await reader.readuntil(b"\r\n\r\n")):
                    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                    await reader.readexactly(length)
                    data = (b'{"choices": [{"index": 0, "finish_reason": "stop", '
                            b'"message": {"role": "assistant", "content": "r%d"}}]}' % connections)
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
                    served += 1
            finally:
                writer.close()  # (after two replies, without a word: as a keep-alive that expired)

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            model = model_for(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", "light")
            return [(await model.acomplete(MESSAGES)).text for _ in range(5)]

    assert asyncio.run(main()) == ["r1", "r1", "r2", "r2", "r3"] and connections == 3


def test_a_model_used_from_many_loops_keeps_none_of_them():
    """`asyncio.run` after `asyncio.run` with one model (a script, a test suite): each loop's
    client and connections go with their loop. (The SDK's async client keeps its loop.)"""
    loops = []
    with OpenAIStub(["a", "b", "c"]) as stub:
        model = model_for(stub.base_url, "light")

        async def main() -> str:
            loops.append(weakref.ref(asyncio.get_running_loop()))
            return (await model.acomplete(MESSAGES)).text

        assert [asyncio.run(main()) for _ in range(3)] == ["a", "b", "c"]
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]


def test_the_light_path_serves_plain_http_without_a_proxy_only(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert light_url("http://127.0.0.1:8000/v1") == ("127.0.0.1", 8000, "/v1/chat/completions")
    assert light_url("http://localhost/v1/") == ("localhost", 80, "/v1/chat/completions")
    assert light_url("https://api.openai.com/v1") is None  # (certificates: the SDK's)
    assert light_url("http://u:p@box/v1") is None and light_url("http://box/v1?api-version=1") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert light_url("http://gpu-box:8000/v1") is None  # the SDK honours the proxy
    monkeypatch.setenv("NO_PROXY", "gpu-box")
    assert light_url("http://gpu-box:8000/v1") == ("gpu-box", 8000, "/v1/chat/completions")
