"""One agent per mode, a model wrapper that counts calls, and a per-run summary row.

Shared by the data-task suite and the real-weak-model end-to-end command. A row's `place` is where
its actions ran: `<mode>/<executor>` for the modes that run code (code, single_call), and
`tool_calling` alone (its tools run on host threads, whatever the executor).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from codeagent import CodeAgent, SingleCallAgent, ToolCallingAgent
from codeagent.models.openai_model import ModelReply
from codeagent.runs.record import ErrorKind

MODES = ("code", "single_call", "tool_calling")
# Steps whose error the loop fed back to the model so it could try again (format problems).
RECOVERABLE_KINDS = frozenset({ErrorKind.PARSE, ErrorKind.INVALID_ACTION, ErrorKind.REPEATED_ACTION})


class CountingModel:
    """Passes calls through to `model` and counts them (empty-reply retries included)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.model_id = getattr(model, "model_id", type(model).__name__)
        self.scripted = bool(getattr(model, "scripted", False))
        self.vision = getattr(model, "vision", False)  # the agent asks the model it talks to
        self.calls = 0

    def complete(
        self, messages: Sequence[Mapping[str, Any]], stop: Sequence[str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> ModelReply:
        self.calls += 1
        if tools is not None:
            return self.model.complete(messages, stop=stop, tools=tools)
        return self.model.complete(messages, stop=stop)


def make_agent(mode: str, model: Any, tools: Sequence[Any], max_steps: int, executor: Any = None,
               **options: Any) -> Any:
    """The agent for `mode`; `executor` (not owned: the caller closes it) runs code and single-call
    actions; the tool-calling agent runs its tools on host threads and ignores it."""
    if mode == "code":
        return CodeAgent(model, tools, executor=executor, max_steps=max_steps, **options)
    if mode == "single_call":
        # every tool of these suites is a read-only lookup: all may be bundled
        return SingleCallAgent(model, tools, executor=executor, max_steps=max_steps,
                               bundleable=[t.name for t in tools], **options)
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
    executor: str = "local"  # local | subprocess | docker; "host" for tool_calling
    figures: int = 0  # attachments the run produced (ExecutionResult.attachments)

    @property
    def place(self) -> str:
        return self.mode if self.mode == "tool_calling" else f"{self.mode}/{self.executor}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _format_error(step: Any) -> bool:
    """A reply the model was told was malformed: unparseable, not an allowed call, a repeat, bad syntax."""
    if step.error_kind in RECOVERABLE_KINDS:
        return True
    # an execution error is recorded as str(ExecutionError): "<type>: <message> ..."
    return step.error_kind == ErrorKind.EXECUTION and (step.error or "").startswith("SyntaxError:")


def run_one(task_id: str, prompt: str, mode: str, model: Any, tools: Sequence[Any], *, max_steps: int,
            check: Any = None, executor: Any = None, executor_name: str = "local", **options: Any) -> RunRow:
    """Run one task in one mode; never raises for what the model or the tools did."""
    counting = CountingModel(model)
    t = time.perf_counter()
    with make_agent(mode, counting, tools, max_steps, executor=executor, **options) as agent:
        result = agent.run(prompt)
    wall = time.perf_counter() - t
    status = result.status
    if status == "success" and check is not None and not check(result.output):
        status = "wrong_answer"
    recovered = sum(1 for s in result.steps if _format_error(s))
    shown = result.output_repr if result.output_repr is not None else (repr(result.output) if result.success else None)
    return RunRow(task_id, mode, status, len(result.steps), counting.calls, result.usage.total_tokens, recovered,
                  round(wall, 3), shown, result.error, "host" if mode == "tool_calling" else executor_name,
                  len(result.attachments))


SHORT_STATUS = {"success": "ok", "wrong_answer": "WRONG", "max_steps": "MAX_STEPS", "failed": "FAILED"}


def compact(row: RunRow) -> str:
    """A narrow cell: `ok 2/1148` (status, model calls / tokens)."""
    return f"{SHORT_STATUS.get(row.status, row.status)} {row.model_calls}/{row.tokens}"


def table(rows: Sequence[RunRow], columns: Sequence[str] = ("status", "steps", "model_calls", "tokens", "recovered"),
          cell_text: Callable[[RunRow], str] | None = None, legend: str | None = None) -> str:
    """task × place (mode, and executor where code runs), one cell per run: the columns joined by
    '/', or `cell_text(row)` (then `legend` is the header's second line)."""
    tasks = list(dict.fromkeys(r.task for r in rows))
    modes = list(dict.fromkeys(r.place for r in rows))
    show = cell_text or (lambda r: " / ".join(str(getattr(r, c)) for c in columns))
    legend = legend or " / ".join(columns)
    cell = {(r.task, r.place): show(r) for r in rows}
    width = max([len(v) for v in cell.values()] + [len(m) for m in modes] + [len(legend)])
    first = max([len(t) for t in tasks] + [4])
    lines = [f"{'task':<{first}}  " + "  ".join(f"{m:<{width}}" for m in modes)]
    lines.append(f"{'':<{first}}  " + "  ".join(f"{legend:<{width}}" for _ in modes))
    for t in tasks:
        lines.append(f"{t:<{first}}  " + "  ".join(f"{cell.get((t, m), '-'):<{width}}" for m in modes))
    return "\n".join(lines)


def summary(rows: Sequence[RunRow]) -> str:
    """Per place (mode/executor): successes, model calls, tokens, recoveries, figures, wall time."""
    width = max([len(r.place) for r in rows] + [5]) + 2
    lines = [f"{'place':<{width}}{'success':>9}{'model calls':>13}{'tokens':>9}{'recovered':>11}{'figures':>9}"
             f"{'wall s':>9}"]
    for place in dict.fromkeys(r.place for r in rows):
        mine = [r for r in rows if r.place == place]
        ok = sum(r.status == "success" for r in mine)
        lines.append(
            f"{place:<{width}}{f'{ok}/{len(mine)}':>9}{sum(r.model_calls for r in mine):>13}"
            f"{sum(r.tokens for r in mine):>9}{sum(r.recovered for r in mine):>11}"
            f"{sum(r.figures for r in mine):>9}{sum(r.wall_s for r in mine):>9.2f}"
        )
    return "\n".join(lines)
