"""sys.monitoring tools (CPython 3.12+) never see the model's frames, as tracing.py does for
sys.settrace.

coverage (its `sysmon` core), debuggers (bdb's monitoring backend, IDEs) and profilers (cProfile
itself from 3.12) register callbacks with sys.monitoring. Those are host code handed the model's
code objects, its frames (through sys._getframe) and its objects (a PY_RETURN's value, a CALL's
callable and first argument), under the step's capability guard. Unlike a trace function, a
monitoring event is the interpreter's, not a thread's: turned on for every thread at once,
globally or per code object. So it cannot be taken off one thread; instead, while a step runs in
a thread, every callback registered for a tool is swapped for a filter: an event on that thread
goes nowhere, and in the model's own code (`<step-N>`) it returns DISABLE where the event allows,
so that location costs nothing afterwards; an event on any other thread reaches the tool as
before. The callbacks are put back when the last running step ends and around each tool call (a
tool is host code: a breakpoint in it stops), and what a tool registered in between is kept.

Left as they are: a tool that registers its callbacks from another thread while a step runs
(the same as `threading.settrace_all_threads` for trace functions), and an event of another thread
in the instant a callback is swapped (sys.monitoring has no way to read one without replacing it).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ..compiler.names import STEP_FILE_PREFIX

__all__ = ["hide", "show"]

_monitoring: Any = getattr(sys, "monitoring", None)
_lock = threading.Lock()
_hidden: set[int] = set()  # the threads running a step now
# (tool, event) -> (the tool's callback, the filter in its place)
_swapped: dict[tuple[int, int], tuple[Any, Any]] = {}
_get_ident = threading.get_ident

if _monitoring is not None:
    _get_tool = _monitoring.get_tool
    _register = _monitoring.register_callback
    _DISABLE = _monitoring.DISABLE
    _EVENTS = tuple(sorted(value for name, value in vars(_monitoring.events).items()
                           if name.isupper() and type(value) is int and value > 0
                           and value & (value - 1) == 0))
    # Events at a place in the code (CPython's "instrumented" ones, up to STOP_ITERATION) may
    # return DISABLE; returning it from the others raises ValueError.
    _LOCAL = frozenset(e for e in _EVENTS if e <= _monitoring.events.STOP_ITERATION)


def _any_tool() -> bool:
    get = _get_tool
    return bool(get(0) or get(1) or get(2) or get(3) or get(4) or get(5))


def _filter(callback: Any, local: bool) -> Any:
    hidden, ident, prefix, disable = _hidden, _get_ident, STEP_FILE_PREFIX, _DISABLE

    def filtered(code: Any, *args: Any) -> Any:
        if ident() in hidden:
            if local and code.co_filename.startswith(prefix):
                return disable  # the model's own code: never reported again
            return None
        return callback(code, *args)

    return filtered


def _swap_in() -> None:
    """Every tool's callbacks through a filter (what is one already stays)."""
    for tool in range(6):
        if _get_tool(tool) is None:
            continue
        for event in _EVENTS:
            current = _register(tool, event, None)
            if current is None:
                continue
            mine = _swapped.get((tool, event))
            if mine is None or current is not mine[1]:
                mine = (current, _filter(current, event in _LOCAL))
                _swapped[(tool, event)] = mine
            _register(tool, event, mine[1])


def _swap_out() -> None:
    """The tools' own callbacks back, unless a tool registered another one meanwhile."""
    for (tool, event), (callback, filtered) in _swapped.items():
        if _get_tool(tool) is None:
            continue  # (the tool was freed: nothing of it to put back)
        current = _register(tool, event, callback)
        if current is not filtered:
            _register(tool, event, current)
    _swapped.clear()


def hide() -> bool:
    """Hide this thread's events from every monitoring tool; False when no tool is in use
    (nothing to undo: a few C calls a step)."""
    if _monitoring is None or not (_hidden or _any_tool()):
        return False
    with _lock:
        _hidden.add(_get_ident())
        _swap_in()
    return True


def show() -> None:
    """Undo `hide` for this thread (the tools' callbacks come back once no step runs)."""
    with _lock:
        _hidden.discard(_get_ident())
        if not _hidden:
            _swap_out()
