"""What the `codeagent` command prints: a run's events for humans (or as NDJSON), final answers,
and where the run and its figures were saved."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..events import (
    NOT_JSON,
    CodeAction,
    ErrorEvent,
    Event,
    FinalAnswerEvent,
    ModelReplyEvent,
    Observation,
    RunEnd,
    RunStart,
    TextDelta,
    plain_json,
)
from ..runs.record import ErrorKind, RunInterrupted

__all__ = ["HumanPrinter", "drive", "show_answer", "save_run", "show_saved"]



def _held(text: str) -> int:
    """How many characters at the end of `text` may be the start of an action marker."""
    return max((k for marker in ("<code>", "```") for k in range(1, len(marker))
                if text.endswith(marker[:k])), default=0)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines()) or prefix


def show_answer(output: Any, output_repr: str | None) -> str:
    """A final answer for humans: strings as they are, other values as the sandbox rendered them."""
    if type(output) is str:
        return output
    if output_repr is not None:
        return output_repr
    safe = plain_json(output)
    return "None" if safe is NOT_JSON else json.dumps(safe, ensure_ascii=False)


# where the action starts in a reply: the thought before it is what the stream shows as it comes
_ACTION = re.compile(r"<code>|^[ \t]*```", re.M)


class HumanPrinter:
    """Shows each step as it happens: the model's thought as it streams in (TextDelta events),
    then the code, the observation, progress."""

    def __init__(self, out: TextIO, *, scripted_note: str | None = None) -> None:
        self.out = out
        self.scripted_note = scripted_note
        self.max_steps = 0
        self.tokens = 0
        self.streamed: tuple[int | None, int] | None = None  # (step, attempt) being streamed
        self.text = ""  # the streamed reply so far
        self.shown = 0  # how much of its thought is on screen (-1: the action began)

    def _delta(self, event: TextDelta) -> None:
        """The thought, as it streams: the step's header at its first piece, the code not (it is
        shown once, below, as "code:"), reasoning not (its length is, with the reply)."""
        if event.reasoning:
            return
        w = self.out.write
        if self.streamed != (event.step, event.attempt):
            if self.streamed is None or self.streamed[0] != event.step:
                w(f"\n── step {event.step}/{self.max_steps} ──\n")
            self.streamed, self.text, self.shown = (event.step, event.attempt), "", 0
        if self.shown < 0:
            return
        self.text += event.text
        action = _ACTION.search(self.text)
        limit = action.start() if action else len(self.text) - _held(self.text)
        visible = self.text[:limit].rstrip()  # (trailing blanks wait for what follows them)
        start = max(self.shown, len(visible) - len(visible.lstrip()))
        if len(visible) > start:
            w(("  " if not self.shown else "") + visible[start:].replace("\n", "\n  "))
            self.shown = len(visible)
        if action:
            if self.shown:
                w("\n")
            self.shown = -1

    def _reply(self, event: ModelReplyEvent) -> None:
        w = self.out.write
        streamed = self.streamed is not None and self.streamed[0] == event.step
        stats = f"model {event.duration_s:.2f} s, {event.usage.total_tokens} tokens"
        if streamed:
            if self.shown > 0:
                w("\n")
            w(f"  ({stats})\n")
        else:
            w(f"\n── step {event.step}/{self.max_steps} ── {stats}\n")
        if event.reasoning:
            w(f"  (reasoning: {len(event.reasoning)} characters, kept out of the code)\n")
        if not streamed:  # the words before the action: its code is shown once, below, as "code:"
            thought = _ACTION.split(event.text, maxsplit=1)[0].strip()
            if thought:
                w(_indent(thought[:600], "  ") + "\n")

    def __call__(self, event: Event) -> None:
        w = self.out.write
        if isinstance(event, TextDelta):
            self._delta(event)
        elif isinstance(event, RunStart):
            self.max_steps = event.max_steps
            label = f"{event.model} (scripted)" if event.scripted else event.model
            w(f"task: {event.task}\nmodel: {label} · executor: {event.executor} · tools: "
              f"{', '.join(event.tools) or '(none)'} · max {event.max_steps} steps\n")
            if event.scripted and self.scripted_note:
                w(self.scripted_note + "\n")
        elif isinstance(event, ModelReplyEvent):
            self.tokens += event.usage.total_tokens
            self._reply(event)
        elif isinstance(event, CodeAction):
            w("  code:\n" + _indent(event.code, "  │ ") + "\n")
        elif isinstance(event, Observation):
            w(f"  observation ({event.duration_s * 1000:.1f} ms):\n" + _indent(event.observation[:2000], "  │ ") + "\n")
        elif isinstance(event, ErrorEvent):
            if event.kind != ErrorKind.EXECUTION:  # execution errors are already in the observation
                w(f"  error ({event.kind}): {event.message}\n")
        elif isinstance(event, FinalAnswerEvent):
            w(f"  final_answer called at step {event.step}\n")
        elif isinstance(event, RunEnd):
            w("\n")
            if event.status == "success":
                w(f"✓ answer: {show_answer(event.output, event.output_repr)}\n")
            else:
                w(f"✗ {event.status}: {event.error}\n")
            w(f"  {event.steps} step(s), {event.duration_s:.2f} s, {event.usage.total_tokens} tokens "
              f"({event.usage.prompt_tokens} prompt + {event.usage.completion_tokens} completion)\n")
        self.out.flush()


def drive(agent: Any, task: str, *, as_json: bool, out: TextIO, scripted_note: str | None = None) -> Any:
    """Stream the run to `out` (NDJSON or human) and return the RunResult."""
    printer = HumanPrinter(out, scripted_note=scripted_note)
    end: RunEnd | None = None
    try:
        for event in agent.stream(task):
            if as_json:
                out.write(event.to_json() + "\n")
                out.flush()
            else:
                printer(event)
            if isinstance(event, RunEnd):
                end = event
    except RunInterrupted as exc:  # Ctrl-C: its RunEnd was shown; the run so far is the result
        return exc.result
    assert end is not None
    return end.result


def save_run(result: Any, out_dir: str | Path) -> list[Path]:
    """Save the run as `<out_dir>/<run_id>.json` with its figures beside it; the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = result.save(out / f"{result.run_id}.json")
    return [path, *result.saved_files()]


def show_saved(paths: Sequence[Path], out: TextIO) -> None:
    for path in paths:
        out.write(f"saved: {Path(path).absolute()}\n")
    out.flush()
