"""The journal of a step's tool calls: how a durable run records them, a resumed one answers them
from its record, and a tool that needs approval pauses the run.

Tools run on the host (the executors call `Tool` objects through their tool channel), so the
journal sits in `Tool.__call__` / `Tool.acall` (`codeagent.tools.tool.journaling`). A live call is
saved when it returns, with its result or error (one log line: record_file.py). Its intent is not
written before it runs: a call cut off by a kill is made again on resume either way (below), and a
second write per call would double what durability costs a step of many small calls. Arguments and results are kept as the executors'
codec trees, what crossed the sandbox's boundary, so a replayed call hands the code the very data
it had.

Replaying a step, call i is answered from the record's call i when it is the same call (name and
arguments); a different call, or one more than the record has in a step that ended, is a
divergence: the journal stops the step (every later call fails) and says where. A recorded call
with no result (made by hand, or by an older writer) is made again, as is a call a kill cut off
(it is not in the record): at-least-once for the one call a kill interrupted, exactly-once for
every call whose result was saved.

Approval: a call to a tool that needs it, with no decision yet, is not made: the journal keeps it
as the run's pending call and stops the step there (this and every later call of the step fail);
the run is saved "paused". On approval the step is replayed up to that call, which is then made
live; on rejection it fails with the user's message, which the model reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from executors.base import ToolError
from executors.worker.codec import decode_value, encode_value
from executors.worker.codec.small import NotSmall, small_tree

from ..tools.tool import safe_repr
from .result import PendingCall, StepRecord, ToolCallRecord

__all__ = ["Journal", "Decision", "REJECTED_NOTE", "call_text"]

# approvals: {(step, index): True (approved) or the rejection's message}
Decision = Mapping[tuple[int, int], "bool | str"]

REJECTED_NOTE = "The user rejected this call to {name}(): {message}. Do not call it again this way."
_STOPPED = "the run is stopped here ({why}); this call was not made"


def call_text(name: str, args: Any, kwargs: Any) -> str:
    """`name(arg, key=value)` from codec trees, each value shown as a plain repr (never its own)."""
    try:
        parts = [safe_repr(v, 60) for v in decode_value(args) or ()]
        parts += [f"{k}={safe_repr(v, 60)}" for k, v in (decode_value(kwargs) or {}).items()]
    except Exception:  # (a record edited by hand: show what is there)
        parts = [safe_repr(args, 60), safe_repr(kwargs, 60)]
    return f"{name}({', '.join(parts)})"


class Journal:
    """One step's tool calls. `recorded`: the record's calls of this step (replay); `strict`: the
    recorded step ended, so a call past them is a divergence; `save`: write the run's record."""

    def __init__(self, step: StepRecord, recorded: list[ToolCallRecord] | None = None, *, strict: bool = False,
                 save: Callable[[dict[str, Any]], None] = lambda entry: None, needs_approval: Callable[[Any, Any, Any], bool] | None = None,
                 decisions: Decision | None = None) -> None:
        self.step = step
        self.recorded = list(recorded or ())
        self.strict = strict
        self.save = save
        self.needs_approval = needs_approval
        self.decisions = decisions or {}
        self.index = 0
        self.diverged: str | None = None
        self.pending: PendingCall | None = None
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        return self.diverged is not None or self.pending is not None

    def replayed_all(self) -> bool:
        """Every recorded call was asked for again (a step that ended must make them all)."""
        return self.index >= len(self.recorded)

    def call(self, tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any], invoke: Callable[..., Any]) -> Any:
        index = self._live_index()
        if index is not None:
            return self._live_call(tool.name, args, kwargs, index, invoke)
        answered, entry, index = self._enter(tool, args, kwargs)
        if answered:
            return self._answer(entry)
        try:
            value = invoke(*args, **kwargs)
        except ToolError as exc:
            self._done(entry, index, error=str(exc))
            raise
        self._done(entry, index, value=value)
        return value

    async def acall(self, tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ainvoke: Callable[..., Any]) -> Any:
        index = self._live_index()
        if index is not None:
            return await self._alive_call(tool.name, args, kwargs, index, ainvoke)
        answered, entry, index = self._enter(tool, args, kwargs)
        if answered:
            return self._answer(entry)
        try:
            value = await ainvoke(*args, **kwargs)
        except ToolError as exc:
            self._done(entry, index, error=str(exc))
            raise
        self._done(entry, index, value=value)
        return value

    # -- a live call: nothing to answer from the record, nothing to approve ------------------

    def _live_index(self) -> int | None:
        """The next call's index when it is simply made and saved (no recorded call to answer it,
        no approval to ask), else None: then `_enter` decides."""
        with self._lock:
            if self.needs_approval is not None or self.strict or self.stopped or self.index < len(self.recorded):
                return None
            index = self.index
            self.index += 1
            return index

    def _live_call(self, name: str, args: Any, kwargs: Any, index: int, invoke: Callable[..., Any]) -> Any:
        trees = _tree(args), _tree(kwargs) if kwargs else {}  # (before the tool runs: it may change them)
        try:
            value = invoke(*args, **kwargs)
        except ToolError as exc:
            self._save_made(name, trees, index, error=str(exc))
            raise
        except BaseException:
            self._save_made(name, trees, index, done=False)
            raise
        self._save_made(name, trees, index, value=value)
        return value

    async def _alive_call(self, name: str, args: Any, kwargs: Any, index: int, ainvoke: Callable[..., Any]) -> Any:
        trees = _tree(args), _tree(kwargs) if kwargs else {}
        try:
            value = await ainvoke(*args, **kwargs)
        except ToolError as exc:
            self._save_made(name, trees, index, error=str(exc))
            raise
        except BaseException:
            self._save_made(name, trees, index, done=False)
            raise
        self._save_made(name, trees, index, value=value)
        return value

    def _save_made(self, name: str, trees: tuple[Any, Any], index: int, *, value: Any = None,
                    error: str | None = None, done: bool = True) -> None:
        """The call's record, made in one go once the tool has returned (a record made before it
        and filled after costs three of pydantic's setattrs), and its log line."""
        entry = ToolCallRecord(name=name, args=trees[0], kwargs=trees[1], done=done,
                               result=_tree(value) if done and error is None else None, error=error)
        with self._lock:
            self.step.tool_calls.append(entry)
        if done:
            self._log("call", index, entry)

    # -- the journal's moves -----------------------------------------------------------------

    def _enter(self, tool: Any, args: Any, kwargs: Any) -> tuple[bool, ToolCallRecord, int]:
        with self._lock:
            if self.stopped:
                why = "waiting for approval" if self.pending is not None else "the replay diverged"
                raise ToolError(_STOPPED.format(why=why))
            name, enc_args, enc_kwargs = tool.name, _tree(args), _tree(kwargs) if kwargs else {}
            index = self.index
            self.index += 1
            if index < len(self.recorded):
                old = self.recorded[index]
                if (old.name, old.args, old.kwargs) != (name, enc_args, enc_kwargs):
                    self._diverge(f"its call {index + 1} was {call_text(old.name, old.args, old.kwargs)} in the "
                                  f"record, {call_text(name, enc_args, enc_kwargs)} in the replay")
                if old.done:  # answered from the record: the tool is not called again
                    self.step.tool_calls.append(old)
                    return True, old, index
            elif self.strict:
                self._diverge(f"the replay made a call the record does not have: {call_text(name, enc_args, enc_kwargs)}")
            entry = ToolCallRecord(name=name, args=enc_args, kwargs=enc_kwargs)
            if self.needs_approval is not None and self.needs_approval(tool, args, kwargs):
                decision = self.decisions.get((self.step.step, index))
                if decision is None or decision is False:
                    self.pending = PendingCall(step=self.step.step, index=index, name=name,
                                               arguments=call_text(name, enc_args, enc_kwargs))
                    raise ToolError(_STOPPED.format(why=f"{name}() needs the user's approval"))
                if decision is not True:
                    entry.done, entry.rejected = True, True
                    entry.error = REJECTED_NOTE.format(name=name, message=decision)
                    self.step.tool_calls.append(entry)
                    self._log("call", index, entry)
                    return True, entry, index
            self.step.tool_calls.append(entry)
        return False, entry, index

    def _answer(self, entry: ToolCallRecord) -> Any:
        if entry.error is not None:
            raise ToolError(entry.error)
        return decode_value(entry.result)

    def _done(self, entry: ToolCallRecord, index: int, *, value: Any = None, error: str | None = None) -> None:
        # (the fields set in one go: pydantic's __setattr__ costs a microsecond each, a step of 33
        # calls 3 % of its time; these are the fields' types, there is nothing to validate)
        entry.__dict__.update(result=_tree(value) if error is None else None, error=error, done=True)
        self._log("call", index, entry)

    def _log(self, kind: str, index: int, entry: ToolCallRecord) -> None:
        call = {"name": entry.name, "args": entry.args, "kwargs": entry.kwargs, "done": entry.done,
                "result": entry.result, "error": entry.error, "rejected": entry.rejected}  # (model_dump: 10x the time)
        self.save({"t": kind, "step": self.step.step, "index": index, "call": call})

    def _diverge(self, why: str) -> None:
        self.diverged = why
        raise ToolError(_STOPPED.format(why="the replay diverged from the record"))


def _tree(value: Any) -> Any:
    """The codec's tree of a call's arguments or result, as `encode_value` makes it; small builtin
    data (most tool calls) the short way (codec/small.py: a quarter of the time)."""
    try:
        return small_tree(value)
    except NotSmall:
        return encode_value(value)
