"""A host's trace and profile functions stand aside while a step runs in their thread.

A debugger (pdb with a breakpoint, an IDE's debugger), coverage or a Python-level profiler sets a
function that CPython calls for every frame the thread runs: inside a step, the model's frames.
That is host code handed model-made objects (a frame's locals, a 'return' event's value), under
the step's capability guard. And it broke the host: the watchdog's interrupt could land inside
the trace function; CPython then removes it with `sys.settrace(None)`, whose audit event the
guard refuses (model code may not set or clear tracing), so the function stayed, failed again,
and the host hung (found with a plain `sys.settrace` tracer and a step that hit its time limit).

So the step's thread runs without them: saved before the guard is entered, put back after it is
left, and put back around each host tool call (a tool is host code; a breakpoint in it still
stops). Only what can be put back is taken off: a function set with sys.settrace/setprofile (or
a C tracer that is callable, as coverage's is). A C profiler that is not callable (cProfile's)
stays: setting it again from Python would break it, and C code meets no interrupt mid-call.
From CPython 3.12, tools may use sys.monitoring instead: monitoring.py hides the step's events
from them at the same two places.
"""

from __future__ import annotations

import sys
from typing import Any

from . import monitoring

__all__ = ["resume", "suspend"]

_gettrace, _settrace = sys.gettrace, sys.settrace
_getprofile, _setprofile = sys.getprofile, sys.setprofile
# (3.11 has no sys.monitoring: no call at all)
_hide = monitoring.hide if hasattr(sys, "monitoring") else None
_show = monitoring.show


def suspend(state: Any) -> None:
    """Take this thread's trace and profile functions off, into `state.host_tracing` (None:
    nothing to put back)."""
    state.host_tracing = None
    state.host_monitoring = _hide is not None and _hide()
    trace, profile = _gettrace(), _getprofile()
    if trace is None and profile is None:  # (every step: two C calls when nothing is set)
        return
    if not callable(trace):
        trace = None
    if not callable(profile):
        profile = None
    if trace is None and profile is None:
        return
    if trace is not None:
        _settrace(None)
    if profile is not None:
        _setprofile(None)
    state.host_tracing = (trace, profile)


def resume(state: Any) -> None:
    """Put back what `suspend` took off."""
    if state.host_monitoring:
        state.host_monitoring = False
        _show()
    saved = state.host_tracing
    if saved is None:
        return
    state.host_tracing = None
    trace, profile = saved
    if trace is not None:
        _settrace(trace)
    if profile is not None:
        _setprofile(profile)
