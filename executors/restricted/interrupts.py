"""Ctrl-C during an in-process step reaches the host as KeyboardInterrupt, as it does out of process.

Without this, SIGINT's KeyboardInterrupt lands in the model's code, which reports it like any
exception of its own ("KeyboardInterrupt was raised"), and an agent asks the model to fix it. So
while a step runs in the main thread (and the host kept Python's default SIGINT handler), the
handler below marks the step interrupted by the host: the step is expired (every loop head,
function entry and except handler of model code stops it, so `except BaseException: pass`
cannot keep it going) and `HostInterrupts.raise_if_interrupted()` raises KeyboardInterrupt once the
runtime has finished the step and put everything back. A KeyboardInterrupt the model's code
raises itself stays the model's error.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from .names import LIVE

__all__ = ["HostInterrupts"]


class HostInterrupts:
    """`with HostInterrupts(state) as interrupts: <run the step>`, then
    `interrupts.raise_if_interrupted()`."""

    __slots__ = ("state", "fired", "_previous")

    def __init__(self, state: Any) -> None:
        self.state = state
        self.fired = False
        self._previous: Any = None

    def __enter__(self) -> HostInterrupts:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _on_sigint(self, signum: int, frame: Any) -> None:
        state = self.state
        running = state.ns.get(LIVE) is True and not state.settling
        self.fired = True
        state.expire("interrupted")
        if running:  # stop the code now; the runtime's own bookkeeping is never cut
            raise KeyboardInterrupt

    def raise_if_interrupted(self) -> None:
        if self.fired:
            raise KeyboardInterrupt
