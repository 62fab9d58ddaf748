"""`ScriptedModel`: a model that replays fixed replies (tests, examples, offline demos, replays of a
saved run). It behaves like an endpoint (stop sequences, estimated usage, constraints recorded)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..aio import SyncAsAsync
from ..parsing.reasoning import split_reasoning
from ..runs.record import RunResult
from .constrain.request import Constraint, check_constrain
from .openai_model import Message, ModelError, _short, cut_at_stop
from .openai_stream import thread_stream
from .replies import ModelReply, Usage
from .streaming import Delta, ReplyAssembler, ReplyStream, estimate_usage

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """Replays fixed replies in order: for tests, examples and offline demos.

    It behaves like a server that honors `stop` (each reply is cut at the first stop sequence) and
    reports an estimated usage. `scripted = True` lets the agent and the CLI say so in their output.
    Streamed (`stream`, `astream`: what `agent.stream()` asks for), a reply comes in deltas of
    `chunk_chars` characters; `.cut` counts the replies whose reader stopped before their end.
    constrain: a constraint spelling to act as if the endpoint honoured (agents then build their
        constrained prompts and constraints); each call's `Constraint` is kept in `.constraints`.
    """

    scripted = True
    provider_name = "codeagent.scripted"  # gen_ai.provider.name in traces

    def __init__(self, replies: Iterable[str | ModelReply], *, model_id: str = "scripted",
                 vision: bool = False, constrain: str | None = None, chunk_chars: int = 16) -> None:
        if isinstance(replies, (str, bytes, ModelReply)) or not isinstance(replies, Iterable):
            shown = _short(repr(replies), 60)
            raise TypeError(f"ScriptedModel takes a list of replies, one per model call, got "
                            f"{type(replies).__name__} {shown}: wrap it in a list, ScriptedModel([{shown}])")
        self.replies = [r if isinstance(r, ModelReply) else ModelReply(text=str(r)) for r in replies]
        self.model_id = model_id
        self.vision = bool(vision)  # True: the agent sends it figures as image parts (see .calls)
        self.calls: list[list[dict[str, Any]]] = []
        self.stops: list[list[str] | None] = []
        self.tools: list[list[dict[str, Any]] | None] = []  # the `tools=` of each call
        if check_constrain(constrain) == "auto":
            raise ValueError("ScriptedModel has no endpoint to probe: give it a spelling, e.g. constrain='grammar'")
        self.constrain = constrain
        self.constraints: list[Constraint | None] = []  # the `constraint=` of each call
        if not isinstance(chunk_chars, int) or isinstance(chunk_chars, bool) or chunk_chars < 1:
            raise ValueError(f"chunk_chars must be an integer >= 1, got {chunk_chars!r}")
        self.chunk_chars = chunk_chars
        self.cut = 0  # streamed replies closed before their end
        self._next = 0

    @classmethod
    def from_run(cls, run: Any) -> ScriptedModel:
        """Replay a saved `RunResult` (or its JSON path): the same replies, step by step."""
        if isinstance(run, (str, os.PathLike)):
            run = RunResult.load(run)
        return cls(run.replies(), model_id=f"scripted (replay of {run.model})")

    @property
    def remaining(self) -> int:
        return len(self.replies) - self._next

    def constraint_spelling(self) -> str | None:
        return self.constrain

    def complete(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> ModelReply:
        self.constraints.append(constraint)
        self.calls.append([dict(m) for m in messages])
        self.stops.append(list(stop) if stop else None)
        self.tools.append([dict(t) for t in tools] if tools else None)
        if self._next >= len(self.replies):
            raise ModelError(f"ScriptedModel ran out of replies after {len(self.replies)}: give it one reply per model call")
        reply = self.replies[self._next]
        self._next += 1
        text, think = split_reasoning(reply.text)
        text = cut_at_stop(text, stop)
        reasoning = "\n\n".join(r for r in (reply.reasoning, think) if r) or None
        usage = reply.usage
        if usage == Usage():
            usage = estimate_usage(messages, reply.text)
        return ModelReply(
            text=text, usage=usage, reasoning=reasoning, finish_reason="tool_calls" if reply.tool_calls else "stop",
            tool_calls=reply.tool_calls,
        )

    def stream(
        self,
        messages: Sequence[Message],
        stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        constraint: Constraint | None = None,
    ) -> ReplyStream:
        """The next reply in deltas of `chunk_chars` characters (see `codeagent.models.streaming`)."""
        whole = ReplyAssembler.of(self.complete(messages, stop, tools, constraint), messages)
        text, size = whole.text, self.chunk_chars
        assembler = ReplyAssembler(messages, None, cut_stop=False)
        assembler.reasoning, assembler.calls = whole.reasoning, whole.calls
        assembler.usage, assembler.finish_reason = whole.usage, whole.finish_reason

        def deltas() -> Iterator[Delta]:
            if whole.reasoning:
                yield Delta("".join(whole.reasoning), reasoning=True)
            for i in range(0, len(text), size):
                yield assembler.feed_text(text[i:i + size]) or Delta("")

        def close() -> None:
            if len(assembler.text) < len(text):
                self.cut += 1

        return ReplyStream(assembler, deltas(), close)

    async def acomplete(self, messages: Sequence[Message], stop: Sequence[str] | None = None,
                        tools: Sequence[Mapping[str, Any]] | None = None,
                        constraint: Constraint | None = None) -> ModelReply:
        if self._blocks():
            return await asyncio.to_thread(self.complete, messages, stop, tools, constraint)
        return self.complete(messages, stop, tools, constraint)

    async def astream(self, messages: Sequence[Message], stop: Sequence[str] | None = None,
                      tools: Sequence[Mapping[str, Any]] | None = None,
                      constraint: Constraint | None = None) -> Any:
        if self._blocks():
            return thread_stream(await asyncio.to_thread(self.stream, messages, stop, tools, constraint))
        return SyncAsAsync(self.stream(messages, stop, tools, constraint))

    def _blocks(self) -> bool:
        """A subclass's own `complete` may wait (a scripted latency): the async API runs it on a thread."""
        return type(self).complete is not ScriptedModel.complete

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self.replies)} replies, {self.remaining} left)"

