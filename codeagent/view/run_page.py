"""A run's page: the task, how it was run (mode, model, executor and its isolation table), each
step, and the final answer or the status and why."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..batch.worker import model_calls
from ..events import NOT_JSON, plain_json
from .html import Safe, tag
from .steps import step_html

__all__ = ["RunContext", "run_body", "answer_text", "run_title"]


@dataclass(frozen=True)
class RunContext:
    """Where a run sits when it is one task of a batch (or one side of a comparison)."""

    back: str  # relative link to the page that lists it
    back_label: str
    task_id: str | None = None
    expected: Any = None
    has_expected: bool = False
    correct: bool | None = None


def answer_text(output: Any, output_repr: str | None) -> str:
    """A final answer as text: strings as they are, JSON values pretty-printed, else the sandbox's repr."""
    if type(output) is str:
        return output
    safe = plain_json(output)
    if (output is None and output_repr is not None) or safe is NOT_JSON:
        return output_repr if output_repr is not None else "None"
    return json.dumps(safe, ensure_ascii=False, indent=2 if isinstance(safe, (dict, list)) else None)


def run_title(run: Any) -> str:
    first = " ".join(run.task.split())
    return f"{run.status} · {first[:70] + ('…' if len(first) > 70 else '')}"


def _meta(run: Any) -> Safe:
    usage = run.usage
    exec_s = sum(s.execution_duration_s for s in run.steps)
    model_s = sum(s.model_duration_s for s in run.steps)
    rows = [
        ("mode", run.mode or "(not recorded)"),
        ("model", f"{run.model} (scripted: no model was called)" if run.scripted else run.model),
        ("executor", run.executor or "(not recorded)"),
        ("tools", ", ".join(run.tools) or "(none)" if run.mode else "(not recorded)"),
        ("steps", f"{len(run.steps)}" + (f" of at most {run.max_steps}" if run.max_steps else "")
         + f" · {model_calls(run.steps)} model call(s)"),
        ("time", f"{run.duration_s:.2f} s (model {model_s:.2f} s, execution {exec_s:.2f} s)"),
        ("tokens", f"{usage.total_tokens:,} ({usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion)"),
        ("run id", run.run_id),
    ]
    return tag("table", [tag("tr", tag("td", k), tag("td", v)) for k, v in rows], class_="meta")


def _isolation(report: dict[str, Any] | None) -> Safe | None:
    if not isinstance(report, dict):
        return None
    layers = report.get("layers") if isinstance(report.get("layers"), dict) else {}
    missing = [str(m) for m in report.get("missing") or () if isinstance(report.get("missing"), list)]
    summary = f"isolation: {report.get('place', '?')} — {len(layers)} layer(s)" + (
        f", {len(missing)} missing" if missing else "")
    kernel = report.get("kernel_layers") if isinstance(report.get("kernel_layers"), dict) else {}
    rows = [tag("tr", tag("td", str(k)), tag("td", str(v))) for k, v in layers.items()]
    rows += [tag("tr", tag("td", f"kernel: {k}"), tag("td", str(v))) for k, v in kernel.items()]
    rows += [tag("tr", tag("td", "missing", class_="k-warn"), tag("td", m)) for m in missing]
    return tag("details", tag("summary", summary), tag("table", rows), class_="iso", id="isolation")


def _outcome(run: Any, context: RunContext | None) -> Safe:
    parts: list[Any] = []
    if run.status == "success":
        parts.append(tag("div", tag("div", "final answer", class_="label"),
                         tag("div", answer_text(run.output, run.output_repr), class_="text mono"), class_="box answer"))
    else:
        parts.append(tag("div", tag("b", f"{run.status}: "), tag("span", run.error or "no final answer", class_="text"),
                         class_="box error"))
    if context is not None and context.has_expected:
        verdict = {True: ("correct", "s-success"), False: ("wrong", "s-failed"), None: ("not checked", "")}[context.correct]
        parts.append(tag("p", "expected: ", tag("span", answer_text(context.expected, None), class_="mono"), " ",
                         tag("span", verdict[0], class_=f"badge {verdict[1]}")))
    return tag("section", parts, class_="outcome", id="outcome")


def run_body(run: Any, context: RunContext | None = None) -> Safe:
    """The body of a run's page (`RunResult`)."""
    nav = None
    if context is not None:
        nav = tag("p", tag("a", f"← {context.back_label}", href=context.back),
                  f" · task {context.task_id}" if context.task_id else None)
    head = tag("div", tag("h1", f"Run {run.run_id}"), tag("span", run.status, class_=f"badge s-{run.status}"),
               class_="head")
    jump = None
    if len(run.steps) > 3:
        links = [tag("a", str(s.step), href="#" + f"step-{s.step}") for s in run.steps]
        jump = tag("p", "steps: ", Safe(" ".join(links)), " · ", tag("a", "outcome", href="#outcome"), class_="muted")
    return Safe("".join([
        nav or "", head, tag("div", run.task, class_="task text"), _meta(run), _isolation(run.isolation) or "",
        jump or "", *(step_html(s, max_steps=run.max_steps) for s in run.steps), _outcome(run, context),
    ]))

