"""ExecutorPool: a fixed set of warm executors handed out one per agent run."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
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
    """

    def __init__(self, factory: Callable[[], Any], n: int) -> None:
        if n < 1:
            raise ValueError("a pool needs at least one executor")
        self._all = [factory() for _ in range(n)]
        self._free: queue.Queue = queue.Queue()
        for ex in self._all:
            self._free.put(ex)
        self._closed = False

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
            try:
                ex.reset()
                if hasattr(ex, "start"):  # a worker replaced during the run: ready before reuse
                    ex.start()
            except Exception:
                pass
            self._free.put(ex)

    def close(self) -> None:
        self._closed = True
        for ex in self._all:
            ex.close()

    def __enter__(self) -> ExecutorPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
