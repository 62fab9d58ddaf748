"""One daemon thread per process that enforces the deadlines of in-process runs.

At a run's deadline it flips the run's `_live` flag (so the next loop head, function entry or
except handler stops the code) and raises an asynchronous exception in the running thread (so a
long stretch of bytecode without such a check stops too), again every few milliseconds until the
run ends. Never while the run is inside a host tool: host code is not interrupted; the tool
wrapper re-checks the deadline when the tool returns.
"""

from __future__ import annotations

import ctypes
import heapq
import os
import signal
import threading
import time
from typing import Protocol

from ..capabilities.guard import GUARD

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
_set_async_exc.restype = ctypes.c_int
# The same C function with a nullable pointer: passing NULL clears a pending exception.
# PYFUNCTYPE: the call keeps the GIL, which this API requires.
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class _Dropped(BaseException):
    """What `_drop_pending` puts in a pending interrupt's place, and takes at once."""


def _drop_pending(thread_id: int) -> None:
    """Drop an interrupt sent to a thread but not delivered yet. In the thread itself, not with
    PyThreadState_SetAsyncExc(id, NULL) alone: when nothing was pending (the interrupt was
    delivered already, the usual case) that leaves the interpreter's async-exception flag raised
    for good (CPython 3.11 lowers it only as it delivers one), so every later call and loop back
    edge of the process takes the eval loop's slow path (~5% on calls), and under a host trace
    function the loop spins at the next function entry: the host hung (a step that hit its time
    limit under sys.settrace). A marker takes the pending one's place and is delivered here, at
    the loop's first back edge, which lowers the flag."""
    # From CPython 3.14 every ctypes call is an audit event (ctypes.call_function), which the
    # step's guard refuses on its thread: the runtime's own call is the host's, as a tool's is.
    step = GUARD.current()
    if step is not None:
        step.suspended += 1
    try:
        if thread_id != _get_ident():
            _clear_async_exc(thread_id, None)
            return
        # (our signal handlers raise nothing here: the run is settling or ended by then)
        try:
            if _set_async_exc(thread_id, _Dropped) == 1:  # (a C call's return may deliver it)
                while True:
                    pass
        except _Dropped:
            pass
    finally:
        if step is not None:
            step.suspended -= 1


REFIRE_S = 0.02
_NEVER = float("inf")  # the deadline of a run without a timeout
# Host tools are not interrupted at the deadline, but a tool that is still running this long
# after it (or model code it called back) is interrupted anyway: the limit must hold.
TOOL_GRACE_S = 0.5


class Interrupt(BaseException):
    """Delivered asynchronously into model code at the deadline (a BaseException on purpose)."""


class Run(Protocol):
    deadline: float
    thread_id: int
    in_tool: bool
    settling: bool
    ended: bool
    fired: bool
    generation: int

    def expire(self, reason: str) -> None: ...


# _LOCK_NOTE: the run's thread takes the lock with `with self.lock:` (a C-level __enter__), never
# `with self._cond:`. Condition.__enter__ is Python code: an interrupt pending while the thread
# waited for the lock is delivered right after the acquire, inside Condition.__enter__, before
# the with block is set up — the lock stays held and the next pause() (and the watchdog thread)
# wait for it forever. Seen as a rare hang of test_interrupt_storm_never_escapes_execute.


class Watchdog:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._cond = threading.Condition(self.lock)
        self._heap: list[tuple[float, int, int, Run]] = []
        self._expired: set[Run] = set()
        self._seq = 0
        self._wake_at = float("inf")  # when the loop will next look at the heap
        self._queued: set[int] = set()  # ids of runs with an entry in the heap
        self._thread: threading.Thread | None = None

    def ensure_running(self) -> None:
        """Start the thread now, from host code: a step may not start threads (the capability
        guard refuses them), so the runtime calls this before it enters one."""
        if self._thread is None:  # (every step: no lock, no is_alive(), while it runs)
            with self.lock:
                self._ensure_thread()

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="codeagent-watchdog", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._loop()
        finally:  # (it never returns; should it fail, the next step starts another)
            self._thread = None

    def _forked(self) -> None:
        self._thread = None  # a forked child has no watchdog thread: the next step starts one

    def watch(self, run: Run) -> None:
        """Start watching this step of `run` (cheap: the thread is woken only when needed)."""
        if run.deadline == _NEVER:
            return  # no deadline (Limits.timeout_s=None): nothing to enforce
        with self.lock:  # the C lock, not the Condition: see _LOCK_NOTE
            if self._thread is None:
                self._ensure_thread()
            if id(run) in self._queued:
                # A run object is reused step after step and keeps one heap entry: when its old
                # entry comes due the loop re-queues it with the current deadline.
                return
            self._push(run)
            if run.deadline < self._wake_at:
                self._cond.notify()

    def _push(self, run: Run) -> None:
        self._seq += 1
        self._queued.add(id(run))
        heapq.heappush(self._heap, (run.deadline, self._seq, run.generation, run))

    def unwatch(self, run: Run) -> None:
        """Mark the run ended; afterwards no interrupt is pending or will be sent for it."""
        with self.lock:  # see _LOCK_NOTE
            run.ended = True
            self._expired.discard(run)
            if run.fired:
                _drop_pending(run.thread_id)  # one sent but not yet delivered
                run.fired = False

    def stop_now(self, run: Run, reason: str = "interrupted") -> bool:
        """Stop the run's step now, as if its deadline had passed (its caller was cancelled):
        False when no step is running. Host tools are interrupted TOOL_GRACE_S later, as at a
        deadline."""
        with self.lock:  # see _LOCK_NOTE
            if run.ended:
                return False
            run.expire(reason)
            run.deadline = min(run.deadline, time.monotonic())
            self._expired.add(run)
            self._ensure_thread()
            self._cond.notify()
            return True

    def pause(self, run: Run, paused: bool) -> None:
        """While paused no interrupt is sent to the run (the runtime is finishing the step in its
        thread: never interrupted, however late — unlike a host tool, which is interrupted
        TOOL_GRACE_S past the deadline). Pausing also clears an interrupt that was sent but not
        delivered yet. Safe to call while an interrupt may land: it retries until the change is
        made."""
        while True:
            try:
                with self.lock:  # see _LOCK_NOTE
                    run.settling = paused
                    if paused and run.fired:
                        _drop_pending(run.thread_id)
                        run.fired = False
                return
            except Interrupt:
                continue

    def _loop(self) -> None:
        with self._cond:
            # _LAZY_NOTE: an ended run leaves the heap as soon as the thread sees it (no
            # reference to a closed executor's state is kept), but the thread still wakes at that
            # entry's deadline. The same run's next step then finds a wake-up due no later than
            # its own deadline and needs no notify: a step costs no thread switch (else every step
            # woke this thread, which then took the GIL while the step ran or right after it).
            # Waking early is always safe: the loop only recomputes.
            lazy = _NEVER
            while True:
                now = time.monotonic()
                if lazy <= now:
                    lazy = _NEVER
                while self._heap and (self._heap[0][3].ended or self._heap[0][0] <= now):
                    deadline, _, generation, run = heapq.heappop(self._heap)
                    self._queued.discard(id(run))
                    if run.ended:
                        lazy = min(lazy, deadline) if deadline > now else lazy
                        continue
                    if run.generation != generation:
                        if run.deadline != _NEVER:
                            self._push(run)  # a later step of the same run: its own deadline
                    elif run.deadline <= now:
                        run.expire("timeout")
                        self._expired.add(run)
                for run in list(self._expired):
                    if run.ended:
                        self._expired.discard(run)
                    elif run.settling:
                        continue
                    elif not run.in_tool or now > run.deadline + TOOL_GRACE_S:
                        _set_async_exc(run.thread_id, Interrupt)
                        run.fired = True
                due = min(self._heap[0][0], lazy) if self._heap else lazy
                if self._expired:
                    timeout = REFIRE_S
                elif due - now < threading.TIMEOUT_MAX:
                    timeout = max(0.0, due - now)
                else:
                    timeout = None
                self._wake_at = float("inf") if timeout is None else now + timeout
                self._cond.wait(timeout)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._forked)


class CpuAlarm:
    """Backstop for C code that holds the GIL (a catastrophic regex): the watchdog thread cannot
    even run then. In the main thread, a SIGVTALRM timer on the process's CPU time fires and its
    handler interrupts the run once its wall-clock deadline has passed; C code that polls for
    signals (the re engine does) stops. The timer ticks every 50 ms of CPU time (CPU time runs
    slower than the clock on a busy machine, so one long timer would fire late). Installed only
    if the host does not use SIGVTALRM itself."""

    TICK_S = 0.05

    def __init__(self) -> None:
        self.ready = False
        self.run: Run | None = None

    def arm(self, run: Run) -> bool:
        if _get_ident() != _MAIN[0]:  # (the main thread's: signals are handled there only)
            return False
        if not self.ready:
            if signal.getsignal(signal.SIGVTALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None):
                return False
            signal.signal(signal.SIGVTALRM, self._on_signal)
            self.ready = True
        self.run = run
        _setitimer(_VIRTUAL, self.TICK_S, self.TICK_S)
        return True

    def disarm(self) -> None:
        self.run = None
        _setitimer(_VIRTUAL, 0)

    def _on_signal(self, signum: int, frame: object) -> None:
        run = self.run
        if run is None or run.ended or run.in_tool or run.settling or time.monotonic() <= run.deadline:
            return
        self.run = None
        run.expire("timeout")
        raise Interrupt()


CPU_ALARM = CpuAlarm()
_get_ident = threading.get_ident
_setitimer, _VIRTUAL = signal.setitimer, signal.ITIMER_VIRTUAL
# The main thread's ident, read once (threading.main_thread() is a Python call): a forked child's
# main thread is the one that forked.
_MAIN = [threading.main_thread().ident]
os.register_at_fork(after_in_child=lambda: _MAIN.__setitem__(0, _get_ident()))


def on_main_thread() -> bool:
    """This thread is the main one (signal handlers run there)."""
    return _get_ident() == _MAIN[0]
