"""ToolCallingAgent's tool calls: run concurrently, each result as the step reads it.

Under `run` / `stream` the calls of one reply run on host threads; under `arun` / `astream` as
tasks on the run's loop (each through `Tool.acall`: an async tool awaited there, a plain one on a
thread). Either way at most `max_parallel` at once, the results in the order the model made the
calls, and figures a tool returned recorded as the step's own (a mixin of the agent's run).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from executors.base import FINAL_ANSWER_NAME, Attachment

from ..runs.record import Step
from ..tools.attachments import AttachmentRecord, describe_line, is_sendable_image
from ..tools.tool import collecting_attachments
from ..tracing.tools import tool_call_id
from .memory import truncate_middle

__all__ = ["Call", "CallRunner", "python_call"]


def python_call(name: str, arguments: Any) -> str:
    if isinstance(arguments, Mapping):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return f"{name}(<arguments not JSON: {truncate_middle(str(arguments), 200)!r}>)"


@dataclass
class Call:
    id: str
    name: str
    arguments: Any  # dict, or the raw text when it was not a JSON object


class CallRunner:
    """The tool calls of a `_ToolRun` (see the module docstring)."""

    agent: Any
    rec: Any

    def _run_calls(self, calls: Sequence[Call]) -> list[tuple[bool, Any]]:
        """(ok, text) for each call, in the order given (a tuple of Attachments, after the text if
        any, for a call that returned or attach()ed figures); the calls run concurrently."""
        if not calls:
            return []
        if len(calls) == 1:
            return [self._run_one(calls[0])]
        # each call runs in a copy of this context: the step's span stays its parent on any thread
        contexts = [contextvars.copy_context() for _ in calls]
        with ThreadPoolExecutor(max_workers=min(len(calls), self.agent.max_parallel), thread_name_prefix="tool-call") as pool:
            return list(pool.map(lambda call, context: context.run(self._run_one, call), calls, contexts))

    async def _arun_calls(self, calls: Sequence[Call]) -> list[tuple[bool, Any]]:
        """`_run_calls` for an async run: the calls as tasks on this loop (at most max_parallel at
        once), each tool through `Tool.acall` (awaited here, or a plain one on a thread)."""
        limit = asyncio.Semaphore(self.agent.max_parallel)

        async def one(call: Call) -> tuple[bool, Any]:
            async with limit:
                return await self._arun_one(call)

        return list(await asyncio.gather(*(one(c) for c in calls)))

    async def _arun_one(self, call: Call) -> tuple[bool, Any]:
        refused = self._refused(call)
        if refused is not None:
            return refused
        try:
            with tool_call_id(call.id), collecting_attachments() as attached:  # (MCP image blocks)
                value = await self.agent.tools[call.name].acall(**call.arguments)
        except Exception as exc:  # ToolError and friends: written for the model already
            return False, truncate_middle(f"Error: {exc}", self.agent.max_observation_chars // 2)
        return self._value(value, attached)

    def _refused(self, call: Call) -> tuple[bool, Any] | None:
        agent = self.agent
        if call.name not in agent.tools:
            return False, f"Error: there is no tool named {call.name!r}. The tools are: {', '.join([*agent.tools, FINAL_ANSWER_NAME])}."
        if not isinstance(call.arguments, Mapping):
            return False, f"Error: the arguments of {call.name} were not a JSON object: {truncate_middle(str(call.arguments), 200)}"
        return None

    def _run_one(self, call: Call) -> tuple[bool, Any]:
        refused = self._refused(call)
        if refused is not None:
            return refused
        try:
            with tool_call_id(call.id), collecting_attachments() as attached:  # (MCP image blocks)
                value = self.agent.tools[call.name](**call.arguments)
        except Exception as exc:  # ToolError and friends: written for the model already
            return False, truncate_middle(f"Error: {exc}", self.agent.max_observation_chars // 2)
        return self._value(value, attached)

    def _value(self, value: Any, attached: list[Any]) -> tuple[bool, Any]:
        """A call's value as the step reads it: its figures, else its repr (cut), images after."""
        budget = self.agent.max_observation_chars // 2
        figures = _attachments_in(value)
        if figures:
            return True, (*figures, *attached)
        if attached:  # the value reads as text, the images follow it
            return True, (truncate_middle(repr(value), budget), *attached)
        return True, truncate_middle(repr(value), budget)

    def _attach(
        self, step: Step, done: list[tuple[Call, tuple[bool, Any]]]
    ) -> tuple[list[tuple[Call, tuple[bool, str]]], list[AttachmentRecord]]:
        """Record the figures the tools returned; each such result reads as its figures' lines.
        Returns the (call, (ok, text)) pairs and the figures to show the model as images."""
        out: list[tuple[Call, tuple[bool, str]]] = []
        shown: list[AttachmentRecord] = []
        sees = getattr(self.agent.model, "vision", False) is True
        for call, (ok, result) in done:
            if isinstance(result, tuple):
                records = self.rec.attach(step, tuple(a for a in result if isinstance(a, Attachment)))
                visible = [r for r in records if sees and is_sendable_image(r.media_type)]
                shown.extend(visible)
                result = "\n".join([*(t for t in result if isinstance(t, str)),
                                    *(describe_line(r, shown=r in visible) for r in records)])
            out.append((call, (ok, result)))
        return out, shown


def _attachments_in(value: Any) -> tuple[Attachment, ...]:
    """The figures a tool returned: an Attachment, or a non-empty list or tuple of them; else ()."""
    if isinstance(value, Attachment):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Attachment) for v in value):
        return tuple(value)
    return ()
