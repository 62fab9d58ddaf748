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

import _signal  # signal's own C functions: its Python wrappers convert every handler to an enum
import signal
from typing import Any

from ..compiler.names import LIVE
from .watchdog import on_main_thread

__all__ = ["HostInterrupts"]

_SIGINT = int(signal.SIGINT)
_DEFAULT = signal.default_int_handler


class HostInterrupts:
    """`with HostInterrupts(state) as interrupts: <run the step>`, then
    `interrupts.raise_if_interrupted()`."""

    __slots__ = ("state", "fired", "_previous")

    def __init__(self, state: Any) -> None:
        self.state = state
        self.fired = False
        self._previous: Any = None

    def __enter__(self) -> HostInterrupts:
        # (every step: _signal's functions take ~1 µs where signal's enum wrappers took ~15)
        if on_main_thread() and _signal.getsignal(_SIGINT) is _DEFAULT:
            self._previous = _signal.signal(_SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            _signal.signal(_SIGINT, self._previous)
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
