"""ExecutorPool: a fixed set of warm executors handed out one per agent run."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..base import ExecutorError

__all__ = ["ExecutorPool"]


class ExecutorPool:
    """A fixed set of warm executors handed out one per agent run.

        with SubprocessExecutor.pool(4, tools=tools) as pool:
            with pool.acquire() as ex:      # blocks until one is free
                ex.execute("...")
            # on release the executor is reset, so the next run starts with empty state

    Thread-safe; executors start in parallel on `start()` (the `with` block does it). An
    executor goes back to the pool reset and with its worker ready (one replaced during the run,
    after a timeout, has finished starting), so `acquire()` of a free one takes microseconds.
    `async with pool.aacquire() as ex:` waits for one on the event loop (no thread parked), for
    many async runs sharing a pool.
    """

    def __init__(self, factory: Callable[[], Any], n: int) -> None:
        if n < 1:
            raise ValueError("a pool needs at least one executor")
        self._all = [factory() for _ in range(n)]
        self._free: queue.Queue = queue.Queue()
        for ex in self._all:
            self._free.put(ex)
        self._closed = False
        self._lock = threading.Lock()
        self._waiters: collections.deque[tuple[Any, asyncio.Future[Any]]] = collections.deque()

    def __len__(self) -> int:
        return len(self._all)

    def start(self) -> ExecutorPool:
        threads = [threading.Thread(target=ex.start, daemon=True) for ex in self._all if hasattr(ex, "start")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None) -> Iterator[Any]:
        if self._closed:
            raise ExecutorError("the executor pool is closed")
        try:
            ex = self._free.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no free executor within {timeout} s") from None
        try:
            yield ex
        finally:
            self._release(ex)

    @contextlib.asynccontextmanager
    async def aacquire(self, timeout: float | None = None) -> AsyncIterator[Any]:
        """`acquire()` for async code: waits on the loop; the executor is reset on a thread."""
        if self._closed:
            raise ExecutorError("the executor pool is closed")
        ex = await self._next_free(timeout)
        try:
            yield ex
        finally:
            await asyncio.shield(self._arelease(ex))

    async def _next_free(self, timeout: float | None) -> Any:
        with self._lock:
            try:
                return self._free.get_nowait()
            except queue.Empty:
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append((asyncio.get_running_loop(), waiter))
        try:
            async with asyncio.timeout(timeout):
                return await waiter
        except TimeoutError:
            raise TimeoutError(f"no free executor within {timeout} s") from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # handed one just as we gave up
                self._put(waiter.result())
            raise

    async def _arelease(self, ex: Any) -> None:
        """`_release`, the reset awaited on the loop where the executor can (`areset`)."""
        areset = getattr(ex, "areset", None)
        if areset is None:
            await asyncio.to_thread(self._release, ex)
            return
        try:
            await areset()
            if not getattr(ex, "warm", True):  # its worker was replaced: started before reuse
                await asyncio.to_thread(ex.start)
        except Exception:
            pass
        self._put(ex)

    def _release(self, ex: Any) -> None:
        try:
            ex.reset()
            if hasattr(ex, "start"):  # a worker replaced during the run: ready before reuse
                ex.start()
        except Exception:
            pass
        self._put(ex)

    def _put(self, ex: Any) -> None:
        """Hand `ex` to the oldest async waiter still waiting, else back to the free queue."""
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                if not waiter.done() and not loop.is_closed():
                    loop.call_soon_threadsafe(self._deliver, waiter, ex)
                    return
            self._free.put(ex)

    def _deliver(self, waiter: asyncio.Future[Any], ex: Any) -> None:
        if waiter.done():  # gave up meanwhile: the next one gets it
            self._put(ex)
        else:
            waiter.set_result(ex)

    def close(self) -> None:
        self._closed = True
        for ex in self._all:
            ex.close()

    def __enter__(self) -> ExecutorPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
