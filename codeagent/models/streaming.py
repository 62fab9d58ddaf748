"""A reply as it streams: text deltas as they arrive, then the whole `ModelReply`.

`ReplyStream` (sync) and `AsyncReplyStream` iterate `Delta`s (a piece of text, or of reasoning);
`close()` / `aclose()` stops reading and closes the connection (the server stops generating:
tokens not paid for), and `reply()` puts together what was read: the text (reasoning split out,
cut at a stop sequence), the native tool calls, the usage and the finish reason.

The `ReplyAssembler` does the putting together for any source: OpenAI chat-completion chunks
(`content`, `reasoning_content`, `tool_calls` fragments, the last chunk's `usage` when the request
asked for it) or plain text (ScriptedModel). A stop sequence the server did not honour is cut
here, and the text that might be its start is held back until it is known not to be.
A reply cut before its end ("cut": the caller stopped reading, the code block had closed) has no
usage from the server; it is estimated (~4 characters a token) from the messages and the text read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..parsing.reasoning import split_reasoning
from ..tools.attachments import IMAGE_TOKENS, content_text
from .replies import ModelReply, ToolCall, Usage

__all__ = ["Delta", "ReplyAssembler", "ReplyStream", "AsyncReplyStream", "CUT", "estimate_usage", "usage_from", "tool_calls_from"]

CUT = "cut"  # the finish reason of a reply the caller stopped reading (its code block had closed)


@dataclass(frozen=True, slots=True)
class Delta:
    text: str
    reasoning: bool = False  # a piece of the model's reasoning (reasoning_content), not its reply


def usage_from(raw: Any) -> Usage:
    """An OpenAI `usage` object as Usage (zeros when there is none)."""
    if raw is None:
        return Usage()
    p = int(getattr(raw, "prompt_tokens", 0) or 0)
    c = int(getattr(raw, "completion_tokens", 0) or 0)
    t = int(getattr(raw, "total_tokens", 0) or 0) or p + c
    return Usage(prompt_tokens=p, completion_tokens=c, total_tokens=t)


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def estimate_usage(messages: Sequence[Any], text: str) -> Usage:
    """Usage estimated at ~4 characters a token (a server that reported none)."""
    prompt = sum(_tokens(content_text(m.get("content"))) for m in messages)
    prompt += IMAGE_TOKENS * sum(1 for m in messages if isinstance(m.get("content"), list)
                                 for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url")
    completion = _tokens(text)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


class ReplyAssembler:
    """Deltas in, one ModelReply out (see the module docstring)."""

    def __init__(self, messages: Sequence[Any], stop: Sequence[str] | None, *, cut_stop: bool) -> None:
        self.messages = messages
        self.stops = [s for s in (stop or ()) if s] if cut_stop else []
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.text = ""
        self.shown = 0  # characters of `text` handed out as deltas
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.stopped = False  # a stop sequence ended the reply here

    @classmethod
    def of(cls, reply: ModelReply, messages: Sequence[Any]) -> ReplyAssembler:
        """A whole reply (a server that would not stream) as if it had streamed."""
        done = cls(messages, None, cut_stop=False)
        done.text = done_text = reply.text
        done.shown = len(done_text)
        done.reasoning = [reply.reasoning] if reply.reasoning else []
        done.calls = {i: {"id": c.id, "name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                          else json.dumps(c.arguments)} for i, c in enumerate(reply.tool_calls)}
        done.usage, done.finish_reason = reply.usage, reply.finish_reason
        return done

    def whole(self) -> list[Delta]:
        """The deltas of a whole reply: its reasoning, then its text."""
        return [d for d in (Delta("".join(self.reasoning), reasoning=True), Delta(self.text)) if d.text]

    def feed_text(self, piece: str) -> Delta | None:
        """Add reply text; the delta that may be shown now (None: nothing new yet)."""
        if self.stopped or not piece:
            return None
        self.text += piece
        if self.stops:
            start = max(0, self.shown - self.hold)
            cuts = [i for i in (self.text.find(s, start) for s in self.stops) if i != -1]
            if cuts:
                self.text, self.stopped, self.finish_reason = self.text[:min(cuts)], True, "stop"
                return self._show(len(self.text))
            return self._show(len(self.text) - self.hold)
        return self._show(len(self.text))

    def _show(self, upto: int) -> Delta | None:
        if upto <= self.shown:
            return None
        piece, self.shown = self.text[self.shown:upto], upto
        return Delta(piece)

    def flush(self) -> Delta | None:
        """The text held back, once the reply has ended."""
        return self._show(len(self.text))

    def feed_chunk(self, chunk: Any) -> list[Delta]:
        """One OpenAI `ChatCompletionChunk`: the deltas it brings."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage_from(usage)
        out: list[Delta] = []
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0):
                continue  # (n=1: one choice)
            delta = getattr(choice, "delta", None)
            if getattr(choice, "finish_reason", None) and not self.stopped:
                self.finish_reason = choice.finish_reason
            if delta is None:
                continue
            reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                out.append(Delta(reasoning, reasoning=True))
            content = getattr(delta, "content", None)
            if isinstance(content, str):
                shown = self.feed_text(content)
                if shown is not None:
                    out.append(shown)
            for call in getattr(delta, "tool_calls", None) or ():
                self._call_fragment(call)
        return out

    def _call_fragment(self, call: Any) -> None:
        entry = self.calls.setdefault(int(getattr(call, "index", 0) or 0), {"id": "", "name": "", "arguments": ""})
        if getattr(call, "id", None):
            entry["id"] = call.id
        function = getattr(call, "function", None)
        if function is not None:
            entry["name"] += getattr(function, "name", None) or ""
            entry["arguments"] += getattr(function, "arguments", None) or ""

    def reply(self, *, cut: bool = False, keep: int | None = None) -> ModelReply:
        """What was read, as a ModelReply. cut: the caller stopped reading (keep: the characters
        of the text to keep, where its code block closed)."""
        raw = self.text if keep is None else self.text[:keep]
        text, think = split_reasoning(raw)
        reasoning = "\n\n".join(r for r in ("".join(self.reasoning), think) if r) or None
        finish = CUT if cut and not self.stopped else self.finish_reason
        usage = self.usage if self.usage is not None else estimate_usage(self.messages, self.text)
        return ModelReply(text=text, usage=usage, reasoning=reasoning, finish_reason=finish,
                          tool_calls=tuple(_tool_call(c) for _, c in sorted(self.calls.items()) if c["name"]))


def tool_calls_from(raw: Any) -> tuple[ToolCall, ...]:
    """OpenAI `message.tool_calls` as ToolCall objects; arguments that are not JSON stay text."""
    calls = []
    for item in raw or ():
        function = getattr(item, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str):
            continue
        arguments: Any = getattr(function, "arguments", None) or "{}"
        if isinstance(arguments, str):
            try:
                decoded = json.loads(arguments)
            except ValueError:
                decoded = None
            arguments = decoded if isinstance(decoded, dict) else arguments
        calls.append(ToolCall(id=str(getattr(item, "id", "") or ""), name=name, arguments=arguments))
    return tuple(calls)



def _tool_call(entry: dict[str, Any]) -> ToolCall:
    arguments: Any = entry["arguments"] or "{}"
    try:
        decoded = json.loads(arguments)
    except ValueError:
        decoded = None
    return ToolCall(id=entry["id"], name=entry["name"], arguments=decoded if isinstance(decoded, dict) else arguments)


class ReplyStream:
    """A streamed reply, read with a blocking iterator (see the module docstring)."""

    def __init__(self, assembler: ReplyAssembler, deltas: Iterator[Delta], close: Callable[[], None]) -> None:
        self.assembler = assembler
        self._deltas = deltas
        self._close = close
        self.closed = False

    def __iter__(self) -> ReplyStream:
        return self

    def __next__(self) -> Delta:
        if self.closed:
            raise StopIteration
        return next(self._deltas)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._close()

    def reply(self, *, cut: bool = False, keep: int | None = None) -> ModelReply:
        return self.assembler.reply(cut=cut, keep=keep)


class AsyncReplyStream:
    """A streamed reply, read with `async for`; `aclose()` closes it."""

    def __init__(self, assembler: ReplyAssembler, deltas: Any, close: Callable[[], Any]) -> None:
        self.assembler = assembler
        self._deltas = deltas
        self._close = close
        self.closed = False

    def __aiter__(self) -> AsyncReplyStream:
        return self

    async def __anext__(self) -> Delta:
        if self.closed:
            raise StopAsyncIteration
        return await self._deltas.__anext__()

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self._close()

    def reply(self, *, cut: bool = False, keep: int | None = None) -> ModelReply:
        return self.assembler.reply(cut=cut, keep=keep)
