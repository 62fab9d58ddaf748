"""A host tool as the step sees it: its arguments cross into plain data inside the step, it runs
with the host's capabilities (the step's guard stands aside), and its result comes back a copy;
its failures reach the model as one ToolError worded for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...base import FinalAnswer, ToolError
from ...worker.codec import Crossing, TooLargeToCross, decode_value, decode_values, encode_value
from ..capabilities import GUARD
from ..compiler.names import LIVE
from ..guards.errors import LimitExceeded
from ..limits.budget import RunState
from ..limits.step_streams import set_aside, take_back
from ..limits.watchdog import WATCHDOG, Interrupt
from .tracing import resume as resume_tracing
from .tracing import suspend as suspend_tracing

__all__ = ["tool_proxy"]


def tool_proxy(name: str, fn: Callable[..., Any], state: RunState) -> Callable[..., Any]:
    """What the namespace binds `name` to: calls `fn` for the step running under `state`."""
    lock = WATCHDOG.lock
    current = GUARD.current

    def tool(*args: Any, **kwargs: Any) -> Any:
        with lock:
            if state.ns[LIVE] is not True:
                state.dead()
            state.in_tool = True
        # The arguments become plain data here, in the step (a model's __repr__ may run, under
        # the guard): the tool never holds an object the model made.
        try:
            args, kwargs = _across(args, kwargs)
        except TooLargeToCross as exc:
            state.in_tool = False
            raise ToolError(exc.for_tool(name)) from None
        except BaseException:
            state.in_tool = False
            raise
        # A tool is host code: it runs with the host's capabilities, not the step's.
        step = current()
        if step is not None:
            step.suspended += 1
        printing = set_aside()  # (what the tool prints is the host's)
        try:
            resume_tracing(state)  # a breakpoint in a tool stops (host/tracing.py)
            # ... and what it returns is a copy: the host's object is not the model's to change
            result = decode_value(encode_value(fn(*args, **kwargs), binary=True))
        except (FinalAnswer, LimitExceeded, Interrupt):
            raise
        except ToolError as exc:  # already worded for the model: say it once
            raise ToolError(_safe_text(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any tool failure is reported to the model
            raise ToolError(f"tool '{name}' failed: {type(exc).__name__}: {_safe_text(exc)}") from None
        finally:
            state.in_tool = False
            # (what the host's tracing is now: the tool may have started or ended a debugger)
            suspend_tracing(state)
            take_back(printing)
            if step is not None:
                step.suspended -= 1
        state.check_clock()
        return result

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = getattr(fn, "__doc__", None)
    return tool


def _across(args: tuple, kwargs: dict) -> tuple[list, dict]:
    """A tool call's arguments as fresh plain data (decoded from the codec's trees), within one
    budget of the bounds table; TooLargeToCross when they are over it (a tool handed a cut
    marker instead of its data would act on the wrong thing)."""
    if not args and not kwargs:
        return [], {}
    crossing = Crossing(binary=True)
    trees = [crossing.encode(a, cut=False) for a in args]
    names = list(kwargs)
    trees += [crossing.encode(kwargs[k], cut=False) for k in names]
    plain = decode_values(trees)
    return plain[:len(args)], dict(zip(names, plain[len(args):], strict=True))


def _safe_text(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text if type(text) is str else type(exc).__name__
    except Exception:  # noqa: BLE001 - a hostile __str__
        return type(exc).__name__
