"""`aexecute` (and `areset`) for any worker: the same step as `RemoteExecutor.execute`, awaited on
an event loop.

The frames go out and come back through the worker's channel waited on by the loop (its
descriptors, `Channel.fileno`), so a step holds no thread; the worker's tool calls are answered
on the loop (`answers.atool_reply`: a coroutine tool is awaited there, a plain one runs on a
thread). What may block for long runs on a thread: starting a worker (spawn, configure, a
container) and taking a failed one apart. A channel with nothing to wait on is served by
`execute` on a thread.

Cancelled mid-step (the task awaiting it was cancelled), the worker is killed at once and not
replaced until the next call, which starts a fresh one and says its variables are lost: nothing
keeps running, nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import Any

from ..base import ExecutionResult, check_code
from .answers import atool_reply
from .link import DeadlinePassed, WorkerDied, remaining
from .protocol import ProtocolError, ToolCall

__all__ = ["AwaitedSteps"]

_POLL_S = 0.002  # how often a second caller on the same executor looks for its turn


class AwaitedSteps:
    """`aexecute` for RemoteExecutor (a mixin: it uses the executor's link, lock and steps)."""

    _astepping = False  # an awaited step holds the executor (its lock is the loop thread's)
    #: killing a worker is a slow call (a container's removal): done on a thread, off the loop
    slow_kill = False

    async def aexecute(self, code: str) -> ExecutionResult:
        """`execute(code)`, awaited without a thread; see the module docstring."""
        refused = check_code(code)
        if refused is not None:
            return ExecutionResult(error=refused)
        async with self._turn():
            self._check_open()
            started = time.perf_counter()
            self._replace_if_unclean()
            if self._link.handle is None or self._configure_id is not None:
                await asyncio.to_thread(self._ready)  # (spawn and configure: blocking work)
            if not self._link.waitable():  # (the executor is held: the blocking step, on a thread)
                return await asyncio.to_thread(self._step, code, started)
            step = self._begin_step(code)
            if isinstance(step, ExecutionResult):
                return step
            rid, frame, deadline, lost = step
            try:
                result = await self._arun_step(rid, frame, deadline, started)
            except (DeadlinePassed, WorkerDied, ProtocolError) as exc:
                return await asyncio.to_thread(self._step_failed, exc, started)
            except BaseException:  # cancelled (or a tool's BaseException): the worker is mid-step
                if self.slow_kill:
                    await asyncio.shield(asyncio.to_thread(self._abandon))
                else:
                    self._abandon()
                raise
            return dataclasses.replace(result, state_lost=True) if lost else result

    async def _arun_step(self, rid: int, frame: bytes, deadline: float | None, started: float) -> ExecutionResult:
        link = self._link
        await link.asend(frame, deadline)
        while True:
            msg = await link.arecv(deadline)
            if isinstance(msg, ToolCall) and msg.id == rid:
                try:  # the step's deadline bounds its tools too
                    async with asyncio.timeout(remaining(deadline)):
                        reply = await atool_reply(self._tools, msg, self.max_frame_bytes)
                except TimeoutError:
                    raise DeadlinePassed from None
                await link.asend(reply, deadline)
                continue
            return self._step_result(msg, rid, started)

    @property
    def warm(self) -> bool:
        """A worker is up and configured: a step starts without waiting for one."""
        return self._link.handle is not None and self._configure_id is None

    async def areset(self) -> None:
        """`reset()` awaited: like `reset()` it sends nothing now (the next request's frame carries
        it), so it only waits for its turn on the loop."""
        async with self._turn():
            self._check_open()
            self._ask_reset()

    def _ask_reset(self) -> None:
        """The worker forgets at the start of the next request (that request's frame says so): a
        reset costs no round trip of its own. A fresh worker has nothing to forget."""
        if self._link.handle is not None and self._dirty:
            self._reset_next = True
            self._lost = False  # nothing the caller wanted kept was lost
            self._dirty = False

    def _abandon(self) -> None:
        """Kill the worker in the middle of its step; the next call starts a fresh one (and its
        result says the variables are lost)."""
        self._discard()
        self._restarts += 1
        self._lost = True

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """Hold the executor for one awaited step. Its lock belongs to a thread, and coroutines on
        this loop share one: `_astepping` keeps them apart, the lock keeps other threads out."""
        lock: Any = self._lock
        while self._astepping or not lock.acquire(blocking=False):
            await asyncio.sleep(_POLL_S)
        self._astepping = True
        try:
            yield
        finally:
            self._astepping = False
            lock.release()
