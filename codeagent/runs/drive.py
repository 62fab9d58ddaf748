"""What a run's loop waits for, each as an `Op` both drivers can do (`codeagent.aio`).

Each agent's loop is written once, as generators that yield their events and these Ops:

  execute(executor, code)       `execute` / `await aexecute` (a thread for an executor without it)
  blocking(fn, slow)            `fn()` at once / on a thread if slow (a worker's start, a probe)
  ModelCall.events(...)         a model request: `complete` / `acomplete`, or streamed: `stream` /
                                `astream`, each piece of text read with its own Op

The sync driver (run, stream) calls the blocking side, with no event loop and no thread; the async
one (arun, astream) awaits the other on the caller's loop. A streamed reply is read until its end,
or until its action has closed (`BlockWatch`): then the stream is closed, so the server stops
generating, and the reply is what was read up to the block's end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Sequence
from typing import Any

from ..aio import Call, Op, on_thread
from ..models.replies import ModelReply
from ..models.streaming import Delta

__all__ = ["ModelCall", "execute", "blocking", "request"]

_END = object()  # the stream has no more pieces


class execute(Op):  # noqa: N801 - read as a call: `result = yield execute(executor, code)`
    """The executor's step: `execute(code)` / `await aexecute(code)` (a thread without one)."""

    __slots__ = ("executor", "code")

    def __init__(self, executor: Any, code: str) -> None:
        self.executor, self.code = executor, code

    def run(self) -> Any:
        return self.executor.execute(self.code)

    async def arun(self) -> Any:
        aexecute = getattr(self.executor, "aexecute", None)
        if aexecute is not None:
            return await aexecute(self.code)
        return await asyncio.to_thread(self.executor.execute, self.code)


def blocking(fn: Callable[[], Any], slow: bool = True) -> Op:
    """`fn()`: at once under the sync API; under the async one on a thread when it may be `slow`
    (waiting on a worker's start, a probe), else at once on the loop."""
    return Call(fn, on_thread(fn) if slow else _at_once(fn))


def _at_once(fn: Callable[[], Any]) -> Callable[[], Any]:
    async def call() -> Any:
        return fn()

    return call


class _Complete(Op):
    __slots__ = ("model", "messages", "options")

    def __init__(self, model: Any, messages: Sequence[Any], options: dict[str, Any]) -> None:
        self.model, self.messages, self.options = model, messages, options

    def run(self) -> ModelReply:
        return self.model.complete(self.messages, **self.options)  # type: ignore[no-any-return]

    async def arun(self) -> ModelReply:
        acomplete = getattr(self.model, "acomplete", None)
        if acomplete is not None:
            return await acomplete(self.messages, **self.options)  # type: ignore[no-any-return]
        return await asyncio.to_thread(self.run)


class _OpenStream(_Complete):
    __slots__ = ()

    def run(self) -> Any:
        return self.model.stream(self.messages, **self.options)

    async def arun(self) -> Any:
        astream = getattr(self.model, "astream", None)
        if astream is not None:
            return await astream(self.messages, **self.options)
        from ..models.openai_stream import thread_stream

        return thread_stream(await asyncio.to_thread(self.run))


class _Next(Op):
    __slots__ = ("stream",)

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def run(self) -> Any:
        return next(self.stream, _END)

    async def arun(self) -> Any:
        try:
            return await self.stream.__anext__()
        except StopAsyncIteration:
            return _END


class _Close(_Next):
    __slots__ = ()

    def run(self) -> None:
        self.stream.close()

    async def arun(self) -> None:
        await self.stream.aclose()


class ModelCall:
    """One request to the model: `reply = yield from call.events(delta_event)` yields the
    request's Ops and, streamed, `delta_event(delta)` for each piece of text as it arrives.
    `watch`: a `BlockWatch` (or None) that says where the reply's action closed."""

    def __init__(self, model: Any, messages: Sequence[Any], options: dict[str, Any], *,
                 stream: bool, watch: Any = None) -> None:
        self.model, self.messages, self.options = model, messages, options
        self.stream = stream and callable(getattr(model, "stream", None))
        self.whole_delta = stream and not self.stream  # a model that cannot stream: one delta
        self.watch = watch

    def events(self, delta_event: Callable[[Delta], Any], aside: Callable[[], Any]) -> Generator[Any, Any, ModelReply]:
        """`aside()`: the context the events go out in (the request's span not current)."""
        if not self.stream:
            reply: ModelReply = yield _Complete(self.model, self.messages, self.options)
            if self.whole_delta:
                for delta in (Delta(reply.reasoning or "", True), Delta(reply.text)):
                    if delta.text:
                        with aside():
                            yield delta_event(delta)
            return reply
        stream = yield _OpenStream(self.model, self.messages, self.options)
        keep, text = None, ""
        try:
            while True:
                delta = yield _Next(stream)
                if delta is _END:
                    break
                if not delta.text:
                    continue
                with aside():
                    yield delta_event(delta)
                if self.watch is not None and not delta.reasoning:
                    text += delta.text
                    keep = self.watch.end(text)
                    if keep is not None:
                        break  # the action is complete: the rest is not read (nor paid for)
        except GeneratorExit:
            raise
        except BaseException:
            yield _Close(stream)  # (a failed read, a cancelled or stopped run: the connection goes)
            raise
        yield _Close(stream)
        return stream.reply(cut=keep is not None, keep=keep)  # type: ignore[no-any-return]


def request(model: Any, stream: bool, watch: Callable[[], Any] | None = None) -> Callable[..., ModelCall]:
    """A `send(messages, **options)` for `Recorder.ask` that makes ModelCalls."""

    def send(messages: Sequence[Any], **options: Any) -> ModelCall:
        return ModelCall(model, messages, options, stream=stream, watch=watch() if stream and watch else None)

    return send
