"""An `openai` SDK response to a streamed request, as a `ReplyStream` / `AsyncReplyStream`.

The SDK hands back a stream of chunks (server-sent events), or, from a server that ignored
`stream`, a plain JSON completion (then the whole reply is one delta). Read errors are turned into
`ModelError`s that say what happened: a stream that stalled past the request timeout (the SDK's
read timeout holds between chunks), a connection that broke mid-reply, an error event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from .streaming import AsyncReplyStream, Delta, ReplyAssembler, ReplyStream

__all__ = ["sync_stream", "async_stream", "light_stream", "thread_stream"]


def sync_stream(model: Any, response: Any, messages: Sequence[Any], stop: Sequence[str] | None,
                whole: Any) -> ReplyStream:
    """`response` of a streamed request (or a whole completion) as a ReplyStream; `whole(completion)`
    turns a completion into a ModelReply."""
    completion = _completion(response, read=lambda: response.response.read())
    if completion is not None:
        assembler = ReplyAssembler.of(whole(completion), messages)
        return ReplyStream(assembler, iter(assembler.whole()), getattr(response, "close", _nothing))
    assembler = ReplyAssembler(messages, stop, cut_stop=not model.supports_stop)

    def deltas() -> Iterator[Delta]:
        import openai

        try:
            for chunk in response:
                yield from assembler.feed_chunk(chunk)
                if assembler.stopped:
                    break
        except openai.APIError as exc:
            raise model.stream_failure(exc, assembler.text) from exc
        finally:
            response.close()
        last = assembler.flush()
        if last is not None:
            yield last

    return ReplyStream(assembler, deltas(), response.close)


def async_stream(model: Any, response: Any, messages: Sequence[Any], stop: Sequence[str] | None,
                 whole: Any) -> Any:
    """`sync_stream` for the async client; a coroutine (a whole completion is read first)."""

    async def make() -> AsyncReplyStream:
        completion = await _acompletion(response)
        if completion is not None:
            assembler = ReplyAssembler.of(whole(completion), messages)
            return AsyncReplyStream(assembler, _aiter(assembler.whole()), _aclose(response))
        assembler = ReplyAssembler(messages, stop, cut_stop=not model.supports_stop)

        async def deltas() -> AsyncIterator[Delta]:
            import openai

            try:
                async for chunk in response:
                    for delta in assembler.feed_chunk(chunk):
                        yield delta
                    if assembler.stopped:
                        break
            except openai.APIError as exc:
                raise model.stream_failure(exc, assembler.text) from exc
            finally:
                await response.close()
            last = assembler.flush()
            if last is not None:
                yield last

        return AsyncReplyStream(assembler, deltas(), _aclose(response))

    return make()


async def light_stream(model: Any, response: Any, messages: Sequence[Any], stop: Sequence[str] | None,
                       whole: Any) -> AsyncReplyStream:
    """`async_stream` for a response of the light HTTP path (`light_http.LightResponse`): the
    server-sent events read as they come, each chunk through `json.loads`."""
    import openai

    from .light_http import loads

    if "json" in response.content_type:  # the server ignored `stream`: one whole completion
        body = await response.read()
        try:
            completion = loads(body)
        except ValueError:
            completion = None
        assembler = ReplyAssembler.of(whole(completion), messages)
        return AsyncReplyStream(assembler, _aiter(assembler.whole()), _aclose_light(response))
    assembler = ReplyAssembler(messages, stop, cut_stop=not model.supports_stop)

    async def deltas() -> AsyncIterator[Delta]:
        events = response.events()
        try:
            async for data in events:
                if data.startswith("[DONE]"):
                    async for _ in events:
                        pass  # the body's end: the connection is kept for the next request
                    break
                try:
                    chunk = loads(data)
                except ValueError:
                    raise openai.APIError(f"an event that is not JSON: {data[:200]!r}", response.client.request(),
                                          body=None) from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(message if isinstance(message, str) and message
                                          else "An error occurred during streaming",
                                          response.client.request(), body=error)
                for delta in assembler.feed_chunk(chunk):
                    yield delta
                if assembler.stopped:
                    break
        except openai.APIError as exc:
            raise model.stream_failure(exc, assembler.text) from exc
        finally:
            await events.aclose()
            response.close()  # (before the end: the server sees the connection go)
        last = assembler.flush()
        if last is not None:
            yield last

    return AsyncReplyStream(assembler, deltas(), _aclose_light(response))


def _aclose_light(response: Any) -> Any:
    async def close() -> None:
        response.close()

    return close


def thread_stream(stream: ReplyStream) -> AsyncReplyStream:
    """A blocking ReplyStream read from a thread per delta (a model with no async client)."""
    end = object()

    async def deltas() -> AsyncIterator[Delta]:
        while True:
            delta = await asyncio.to_thread(next, stream, end)
            if delta is end:
                return
            yield delta

    async def close() -> None:
        await asyncio.to_thread(stream.close)

    return AsyncReplyStream(stream.assembler, deltas(), close)


def _completion(response: Any, read: Any) -> Any:
    """The whole completion when the server answered a streamed request with plain JSON, else None."""
    if not hasattr(response, "response"):  # (the request was sent without stream: a completion)
        return response
    kind = response.response.headers.get("content-type", "")
    if "json" not in kind:
        return None
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate_json(read())


async def _acompletion(response: Any) -> Any:
    if not hasattr(response, "response"):
        return response
    if "json" not in response.response.headers.get("content-type", ""):
        return None
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate_json(await response.response.aread())


async def _aiter(items: list[Delta]) -> AsyncIterator[Delta]:
    for item in items:
        yield item


def _aclose(response: Any) -> Any:
    async def close() -> None:
        closing = getattr(response, "close", None)
        if closing is not None:
            done = closing()
            if asyncio.iscoroutine(done):
                await done

    return close


def _nothing() -> None:
    pass
