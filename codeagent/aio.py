"""One implementation for sync and async callers.

A run's loop is written once, as plain generators (`yield from`, values returned) that yield
two kinds of things: the run's events, and `Op`s — what the loop must wait for (a model request,
an executor's step, the next piece of a streamed reply). A driver hands each Op its way and sends
the value back (or throws its error in):

  events(gen)    the sync API: `op.run()`, the blocking call; no event loop, no thread
  aevents(gen)   the async API: `await op.arun()` on the caller's loop

So the sync API pays for the async one only a type check per item. A driver that stops early (a
consumer that drops the stream, a cancelled task) first throws `RunStopped` into the loop at the
event it is paused at, so its cleanup (closing a model stream) runs through the same Ops.

`result(coro)` runs a coroutine that never suspends (a model request's logic, shared by its sync
and async calls) to its end without an event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterator
from typing import Any, TypeVar

__all__ = ["Op", "Call", "RunStopped", "events", "aevents", "result", "SyncAsAsync", "on_thread"]

T = TypeVar("T")
Core = Generator[Any, Any, Any]
_UNWIND_LIMIT = 1000  # items a stopping loop may still yield before it is closed outright


class Op:
    """Something the loop waits for: the sync driver calls `run()`, the async one awaits `arun()`."""

    __slots__ = ()

    def run(self) -> Any:
        raise NotImplementedError

    async def arun(self) -> Any:
        raise NotImplementedError


class Call(Op):
    """`fn(*args)` for the sync driver, `await afn(*args)` for the async one."""

    __slots__ = ("fn", "afn", "args")

    def __init__(self, fn: Callable[..., Any], afn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self.fn, self.afn, self.args = fn, afn, args

    def run(self) -> Any:
        return self.fn(*self.args)

    async def arun(self) -> Any:
        return await self.afn(*self.args)


def on_thread(fn: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """`fn` for async code: on a thread (in a copy of the context), the loop free meanwhile."""

    async def call(*args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    return call


class RunStopped(BaseException):
    """Thrown into a loop whose driver stops before its end, so its cleanup runs."""


def events(gen: Core) -> Iterator[Any]:
    """Drive a loop with the blocking calls; yields its events."""
    send, throw = gen.send, gen.throw
    try:
        item = send(None)
        while True:
            if isinstance(item, Op):
                try:
                    value = item.run()
                except BaseException as exc:
                    item = throw(exc)
                    continue
                item = send(value)
            else:
                yield item
                item = send(None)
    except StopIteration:
        return
    finally:
        _unwind(gen)


async def aevents(gen: Core) -> AsyncIterator[Any]:
    """Drive a loop on the running event loop; yields its events."""
    send, throw = gen.send, gen.throw
    try:
        item = send(None)
        while True:
            if isinstance(item, Op):
                try:
                    value = await item.arun()
                except BaseException as exc:
                    item = throw(exc)
                    continue
                item = send(value)
            else:
                yield item
                item = send(None)
    except StopIteration:
        return
    finally:
        await _aunwind(gen)


def _unwind(gen: Core) -> None:
    if gen.gi_frame is None:
        return
    try:
        item = gen.throw(RunStopped())
        for _ in range(_UNWIND_LIMIT):
            try:
                value = item.run() if isinstance(item, Op) else None
            except BaseException as exc:
                item = gen.throw(exc)
                continue
            item = gen.send(value)
    except (StopIteration, RunStopped):
        return
    finally:
        gen.close()


async def _aunwind(gen: Core) -> None:
    if gen.gi_frame is None:
        return
    try:
        item = gen.throw(RunStopped())
        for _ in range(_UNWIND_LIMIT):
            try:
                value = await item.arun() if isinstance(item, Op) else None
            except BaseException as exc:
                item = gen.throw(exc)
                continue
            item = gen.send(value)
    except (StopIteration, RunStopped):
        return
    finally:
        gen.close()


_SUSPENDED = ("a sync call awaited something that suspends (it has no event loop to wait on): "
              "use the async API (arun, astream, acomplete) for async models, tools and executors")


def result(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to its end, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError(_SUSPENDED)


class SyncAsAsync:
    """A blocking reply stream (a scripted one: it never waits) as an async one."""

    __slots__ = ("_it",)

    def __init__(self, it: Any) -> None:
        self._it = it

    def __aiter__(self) -> SyncAsAsync:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._it.close()

    def reply(self, **options: Any) -> Any:
        return self._it.reply(**options)
