"""One agent per mode, a model wrapper that counts calls, and a per-run summary row.

Shared by the data-task suite and the real-weak-model end-to-end command.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from codeagent import CodeAgent, SingleCallAgent, ToolCallingAgent
from codeagent.models import ModelReply
from codeagent.run import ErrorKind

MODES = ("code", "single_call", "tool_calling")
# Steps whose error the loop fed back to the model so it could try again (format problems).
RECOVERABLE_KINDS = frozenset({ErrorKind.PARSE, ErrorKind.INVALID_ACTION, ErrorKind.REPEATED_ACTION})


class CountingModel:
    """Passes calls through to `model` and counts them (empty-reply retries included)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.model_id = getattr(model, "model_id", type(model).__name__)
        self.scripted = bool(getattr(model, "scripted", False))
        self.calls = 0

    def complete(
        self, messages: Sequence[Mapping[str, Any]], stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> ModelReply:
        self.calls += 1
        if tools is not None:
            return self.model.complete(messages, stop=stop, tools=tools)
        return self.model.complete(messages, stop=stop)


def make_agent(mode: str, model: Any, tools: Sequence[Any], max_steps: int, **options: Any) -> Any:
    if mode == "code":
        return CodeAgent(model, tools, max_steps=max_steps, **options)
    if mode == "single_call":
        # every tool of these suites is a read-only lookup: all may be bundled
        return SingleCallAgent(model, tools, max_steps=max_steps, bundleable=[t.name for t in tools], **options)
    if mode == "tool_calling":
        return ToolCallingAgent(model, tools, max_steps=max_steps, **options)
    raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")


@dataclass
class RunRow:
    task: str
    mode: str
    status: str  # success | wrong_answer | max_steps | failed
    steps: int
    model_calls: int
    tokens: int
    recovered: int  # format errors the model was told about (parse / invalid call / repeat)
    wall_s: float
    output: str | None
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _format_error(step: Any) -> bool:
    """A reply the model was told was malformed: unparseable, not an allowed call, a repeat, bad syntax."""
    if step.error_kind in RECOVERABLE_KINDS:
        return True
    # an execution error is recorded as str(ExecutionError): "<type>: <message> ..."
    return step.error_kind == ErrorKind.EXECUTION and (step.error or "").startswith("SyntaxError:")


def run_one(task_id: str, prompt: str, mode: str, model: Any, tools: Sequence[Any], *, max_steps: int,
            check: Any = None, **options: Any) -> RunRow:
    """Run one task in one mode; never raises for what the model or the tools did."""
    counting = CountingModel(model)
    t = time.perf_counter()
    with make_agent(mode, counting, tools, max_steps, **options) as agent:
        result = agent.run(prompt)
    wall = time.perf_counter() - t
    status = result.status
    if status == "success" and check is not None and not check(result.output):
        status = "wrong_answer"
    recovered = sum(1 for s in result.steps if _format_error(s))
    shown = result.output_repr if result.output_repr is not None else (repr(result.output) if result.success else None)
    return RunRow(task_id, mode, status, len(result.steps), counting.calls, result.usage.total_tokens, recovered,
                  round(wall, 3), shown, result.error)


def table(rows: Sequence[RunRow], columns: Sequence[str] = ("status", "steps", "model_calls", "tokens", "recovered")) -> str:
    """task × mode, one cell per run: the given columns joined by '/'."""
    tasks = list(dict.fromkeys(r.task for r in rows))
    modes = list(dict.fromkeys(r.mode for r in rows))
    cell = {(r.task, r.mode): " / ".join(str(getattr(r, c)) for c in columns) for r in rows}
    width = max([len(v) for v in cell.values()] + [len(m) for m in modes] + [len(' / '.join(columns))])
    first = max([len(t) for t in tasks] + [4])
    lines = [f"{'task':<{first}}  " + "  ".join(f"{m:<{width}}" for m in modes)]
    lines.append(f"{'':<{first}}  " + "  ".join(f"{' / '.join(columns):<{width}}" for _ in modes))
    for t in tasks:
        lines.append(f"{t:<{first}}  " + "  ".join(f"{cell.get((t, m), '-'):<{width}}" for m in modes))
    return "\n".join(lines)


def summary(rows: Sequence[RunRow]) -> str:
    """Per mode: successes, model calls, tokens, wall time (totals over the tasks)."""
    lines = [f"{'mode':<14}{'success':>10}{'model calls':>13}{'tokens':>10}{'recovered':>11}{'wall s':>9}"]
    for mode in dict.fromkeys(r.mode for r in rows):
        mine = [r for r in rows if r.mode == mode]
        ok = sum(r.status == "success" for r in mine)
        lines.append(
            f"{mode:<14}{f'{ok}/{len(mine)}':>10}{sum(r.model_calls for r in mine):>13}"
            f"{sum(r.tokens for r in mine):>10}{sum(r.recovered for r in mine):>11}"
            f"{sum(r.wall_s for r in mine):>9.2f}"
        )
    return "\n".join(lines)
