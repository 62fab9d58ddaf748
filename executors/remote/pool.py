"""ExecutorPool: warm executors handed out one per session, fresh for every user by default."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ..base import ExecutorError

__all__ = ["ExecutorPool", "RECYCLE_POLICIES"]

#: "fresh": every session gets an executor no one used; a returned one is closed (its worker
#: killed, its workdir removed) and a new one started in its place, in the background.
#: "reset": a returned executor is reset (variables forgotten) and handed to the next session:
#: its process, imported modules and workdir files stay, so only for sessions of one user.
RECYCLE_POLICIES = ("fresh", "reset")
#: Replacements started at once (a worker's start is mostly CPU: more than the cores slows all).
REFILL_THREADS = 2


class ExecutorPool:
    """Warm executors handed out one per session.

        with SubprocessExecutor.pool(4, tools=tools) as pool:     # 4 started, ready workers
            with pool.acquire() as ex:      # a ready one in microseconds; waits if all are busy
                ex.execute("...")
            # on release: recycled per `recycle` (below); the next session starts clean

    n: how many executors exist at once (busy + ready): the most sessions at a time.
    recycle: "fresh" (default): each session gets an executor never used before, hardened and
        started; the returned one is destroyed and a replacement started in the background, so
        no state (variables, modules, files in the workdir, anything a step did to its process)
        passes from one session to the next. "reset": the returned executor is reset and reused
        (cheaper: no new worker), for sessions of one user only.
    max_uses: with recycle="reset", destroy and replace an executor after this many sessions.

    Thread-safe; executors start in parallel on `start()` (the `with` block does it).
    `async with pool.aacquire() as ex:` waits for one on the event loop (no thread parked).
    A replacement that cannot start is retried; `acquire()` raises ExecutorError with the reason
    when no executor is left at all.
    """

    def __init__(self, factory: Callable[[], Any], n: int, *, recycle: str = "fresh",
                 max_uses: int | None = None) -> None:
        if n < 1:
            raise ValueError("a pool needs at least one executor")
        if recycle not in RECYCLE_POLICIES:
            raise ValueError(f"recycle must be one of {RECYCLE_POLICIES}, not {recycle!r}")
        if max_uses is not None and (type(max_uses) is not int or max_uses < 1):
            raise ValueError("max_uses must be a positive int or None")
        self._factory = factory
        self.recycle = recycle
        self.max_uses = 1 if recycle == "fresh" else max_uses
        self._all = [factory() for _ in range(n)]
        self._uses: dict[int, int] = {}
        self._free: queue.Queue = queue.Queue()
        for ex in self._all:
            self._free.put(ex)
        self._closed = False
        self._lock = threading.Lock()
        self._waiters: collections.deque[tuple[Any, asyncio.Future[Any]]] = collections.deque()
        self._retired: queue.Queue = queue.Queue()  # used executors to destroy and replace
        self._refillers: list[threading.Thread] = []
        self.last_error: BaseException | None = None

    def __len__(self) -> int:
        return len(self._all)

    @property
    def ready(self) -> int:
        """Executors free this moment (a replacement still starting is not counted)."""
        return self._free.qsize()

    def start(self) -> ExecutorPool:
        threads = [threading.Thread(target=ex.start, daemon=True) for ex in self._all if hasattr(ex, "start")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None) -> Iterator[Any]:
        ex = self.take(timeout)
        try:
            yield ex
        finally:
            self.give_back(ex)

    def take(self, timeout: float | None = None) -> Any:
        """A ready executor for one session (`acquire()` without the `with`): waits up to
        `timeout` seconds (None: as long as it takes; 0: not at all) for one, else TimeoutError.
        Hand it back with `give_back(ex)` when the session ends."""
        # Waits in short slices, so that a pool whose replacements all failed says so instead of
        # waiting forever.
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._check_open()
            try:
                return self._free.get_nowait()
            except queue.Empty:
                pass
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"no free executor within {timeout} s")
            try:
                return self._free.get(timeout=0.5 if left is None else min(left, 0.5))
            except queue.Empty:
                continue

    def give_back(self, ex: Any) -> None:
        """The end of `ex`'s session: recycled per the policy (fresh: destroyed and replaced)."""
        self._release(ex)

    def _check_open(self) -> None:
        if self._closed:
            raise ExecutorError("the executor pool is closed")
        if not self._all:
            raise ExecutorError(f"the executor pool has no executor left: a replacement could "
                                f"not start ({self.last_error})")

    @contextlib.asynccontextmanager
    async def aacquire(self, timeout: float | None = None) -> AsyncIterator[Any]:
        """`acquire()` for async code: waits on the loop; the executor is reset on a thread."""
        self._check_open()
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

    def _worn_out(self, ex: Any) -> bool:
        """Counts a session of `ex`; True when the policy says it goes (destroyed, replaced)."""
        with self._lock:
            uses = self._uses[id(ex)] = self._uses.get(id(ex), 0) + 1
        return self.max_uses is not None and uses >= self.max_uses

    async def _arelease(self, ex: Any) -> None:
        """`_release`, the reset awaited on the loop where the executor can (`areset`)."""
        if self._worn_out(ex):
            self._retire(ex)
            return
        areset = getattr(ex, "areset", None)
        if areset is None:
            await asyncio.to_thread(self._reuse, ex)
            return
        try:
            await areset()
            if not getattr(ex, "warm", True):  # its worker was replaced: started before reuse
                await asyncio.to_thread(ex.start)
        except Exception:
            pass
        self._put(ex)

    def _release(self, ex: Any) -> None:
        if self._worn_out(ex):
            self._retire(ex)
        else:
            self._reuse(ex)

    def _reuse(self, ex: Any) -> None:
        try:
            ex.reset()
            if hasattr(ex, "start"):  # a worker replaced during the run: ready before reuse
                ex.start()
        except Exception:
            pass
        self._put(ex)

    # -- fresh executors: the used one destroyed, a new one started, off the caller's thread -------
    def _retire(self, ex: Any) -> None:
        if self._closed:  # closed while this session ran: nothing to replace
            self._destroy(ex)
            return
        with self._lock:
            self._refillers = [t for t in self._refillers if t.is_alive()]
            if len(self._refillers) < min(REFILL_THREADS, len(self._all)):
                thread = threading.Thread(target=self._refill, name="codeagent-pool-refill",
                                          daemon=True)
                thread.start()
                self._refillers.append(thread)
        self._retired.put(ex)

    def _refill(self) -> None:
        while True:
            old = self._retired.get()
            if old is None:
                return
            new = None if self._closed else self._replacement()  # first: the pool refills sooner
            if new is not None:
                with self._lock:
                    closed = self._closed
                    if not closed:
                        self._all.append(new)
                if closed:
                    self._destroy(new)
                else:
                    self._put(new)
            self._destroy(old)

    def _destroy(self, ex: Any) -> None:
        with self._lock:
            self._uses.pop(id(ex), None)
            if ex in self._all:
                self._all.remove(ex)
        with contextlib.suppress(Exception):
            ex.close()

    def _replacement(self) -> Any:
        """A new started executor (three tries), or None with `last_error` set."""
        for attempt in range(3):
            ex = None
            try:
                ex = self._factory()
                if hasattr(ex, "start"):
                    ex.start()
                return ex
            except Exception as exc:  # noqa: BLE001 - kept for acquire()'s error
                self.last_error = exc
                if ex is not None:
                    with contextlib.suppress(Exception):
                        ex.close()
                if self._closed:
                    return None
                threading.Event().wait(0.05 * (attempt + 1))
        return None

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
        """Closes every executor (busy ones too: their sessions end) and stops the refills."""
        with self._lock:
            self._closed = True
            refillers = list(self._refillers)
            executors = list(self._all)
        for _ in refillers:
            self._retired.put(None)
        for thread in refillers:
            thread.join(timeout=60)
        while True:  # any the refill thread did not get to
            try:
                ex = self._retired.get_nowait()
            except queue.Empty:
                break
            if ex is not None:
                executors.append(ex)
        for ex in executors:
            with contextlib.suppress(Exception):
                ex.close()

    def __enter__(self) -> ExecutorPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

