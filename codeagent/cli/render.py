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
    plain_json,
)
from ..runs.record import ErrorKind, RunInterrupted

__all__ = ["HumanPrinter", "drive", "show_answer", "save_run", "show_saved"]



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


class HumanPrinter:
    """Shows each step as it happens: reply, code, observation, progress."""

    def __init__(self, out: TextIO, *, scripted_note: str | None = None) -> None:
        self.out = out
        self.scripted_note = scripted_note
        self.max_steps = 0
        self.tokens = 0

    def __call__(self, event: Event) -> None:
        w = self.out.write
        if isinstance(event, RunStart):
            self.max_steps = event.max_steps
            label = f"{event.model} (scripted)" if event.scripted else event.model
            w(f"task: {event.task}\nmodel: {label} · executor: {event.executor} · tools: "
              f"{', '.join(event.tools) or '(none)'} · max {event.max_steps} steps\n")
            if event.scripted and self.scripted_note:
                w(self.scripted_note + "\n")
        elif isinstance(event, ModelReplyEvent):
            self.tokens += event.usage.total_tokens
            w(f"\n── step {event.step}/{self.max_steps} ── model {event.duration_s:.2f} s, "
              f"{event.usage.total_tokens} tokens\n")
            if event.reasoning:
                w(f"  (reasoning: {len(event.reasoning)} characters, kept out of the code)\n")
            # the words before the action: its code is shown once, below, as "code:"
            thought = re.split(r"<code>|^[ \t]*```", event.text, maxsplit=1, flags=re.M)[0].strip()
            if thought:
                w(_indent(thought[:600], "  ") + "\n")
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
