"""One step of a run as HTML: the thought, the code (highlighted), what it printed and returned,
its figures, the error with its kind, and the step's model and execution time and tokens.

Every way a step can go shows differently: no code found (parse), an action refused before it ran
(repeated, not one allowed call), code refused by the policy, a tool that failed, a limit that
broke (time, operations, memory), a figure that was not returned (too large, out of time), a
model or executor failure that ended the run.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .figures import figure_html
from .html import Safe, tag

__all__ = ["step_html", "highlight", "error_label", "thought_of", "not_returned"]

# What each ErrorKind value means on the page (codeagent.runs.record.ErrorKind).
KIND_LABELS = {
    "parse": "no code found in the reply",
    "invalid_action": "action refused: not one allowed call",
    "repeated_action": "action refused: the same code already ran",
    "execution": "the code failed",
    "tool": "a tool call failed",
    "empty_reply": "the model replied nothing",
    "model": "the model endpoint failed",
    "executor": "the executor failed",
}
# ExecutionError.type values (executors.base): what the policy refused, and the limits
_REFUSED_TYPES = frozenset({"PolicyError", "SecurityError", "CapabilityError"})
_LIMIT_TYPES = frozenset({"TimeoutError", "OperationLimitError", "MemoryError", "RecursionError",
                          "OutputLimitError", "LimitError"})
# The note a runtime adds to the logs for a figure it did not send (executors.worker.figures).
_NOT_RETURNED = re.compile(r"^\[(?P<what>[^\[\]\n]{1,200}) not returned: (?P<why>[^\n]*)\]$", re.MULTILINE)


def error_label(kind: str | None, error: str | None) -> tuple[str, str]:
    """(words, css class) for a step's error: what kind of failure it is, for the badge."""
    if kind == "execution" and error:
        etype = error.split(":", 1)[0].strip()
        if etype in _REFUSED_TYPES or (etype == "ImportError" and "is not allowed" in error):
            return f"refused by the policy ({etype})", "k-error"
        if etype in _LIMIT_TYPES:
            return f"limit reached ({etype})", "k-error"
        if etype == "ToolError":
            return "a tool call failed (ToolError)", "k-error"
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]{0,60}", etype):
            return f"the code failed ({etype})", "k-error"
    label = KIND_LABELS.get(kind or "", f"error ({kind})" if kind else "error")
    return label, "k-warn" if kind in ("parse", "invalid_action", "repeated_action") else "k-error"


@functools.cache
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True)


@functools.cache
def _lexer() -> Any:
    from pygments.lexers import PythonLexer

    return PythonLexer(stripnl=False, ensurenl=False)


def highlight(code: str) -> Safe:
    """Python code as a highlighted block (Pygments escapes every token it emits)."""
    from pygments import highlight as pygmentize

    return tag("pre", Safe(pygmentize(code, _lexer(), _formatter())), class_="hl")


def thought_of(reply: str) -> str:
    """What the model wrote before its code: the reply up to the first code tag or fence."""
    cut = min((i for i in (reply.find("<code>"), reply.find("```")) if i >= 0), default=len(reply))
    return reply[:cut].strip()


def not_returned(logs: str) -> tuple[str, list[tuple[str, str]]]:
    """The logs without the runtime's "[figure 1 not returned: why]" lines, and those notes."""
    notes = [(m["what"], m["why"]) for m in _NOT_RETURNED.finditer(logs)]
    return (_NOT_RETURNED.sub("", logs).strip("\n") if notes else logs), notes


def _block(label: str, body: Safe | str) -> Safe:
    """A labelled block: Safe markup as it is, text in a <pre>."""
    return Safe(tag("div", label, class_="label") + (body if isinstance(body, Safe) else tag("pre", body)))


def _timing(step: Any) -> str:
    usage = step.usage
    parts = [f"model {step.model_duration_s:.2f} s"]
    if step.code is not None and step.error_kind not in ("repeated_action", "invalid_action"):
        parts.append(f"execution {step.execution_duration_s * 1000:.1f} ms")
    if usage.total_tokens:
        parts.append(f"{usage.total_tokens:,} tokens ({usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion)")
    if step.empty_replies:
        parts.append(f"{step.empty_replies} empty repl{'y' if step.empty_replies == 1 else 'ies'} retried")
    if step.finish_reason == "cut":  # a streamed reply read only up to its closed code block
        parts.append("reply cut once its code block closed (tokens estimated)")
    elif step.finish_reason == "length":
        parts.append("reply cut at the token limit (finish reason: length)")
    return " · ".join(parts)


def step_html(step: Any, *, max_steps: int = 0) -> Safe:
    """One `StepRecord` as a section of the run page (id `step-<n>`)."""
    logs, notes = not_returned(step.logs or "")
    badges = []
    if step.error:
        words, css = error_label(step.error_kind, step.error)
        badges.append(tag("span", words, class_=f"badge {css}"))
    if notes:
        badges.append(tag("span", f"{len(notes)} figure(s) not returned", class_="badge k-warn"))
    if step.is_final_answer:
        badges.append(tag("span", "final answer", class_="badge s-success"))
    of = f" of {max_steps}" if max_steps else ""
    head = tag("div", tag("h2", f"Step {step.step}{of}"), badges, tag("span", _timing(step), class_="muted"),
               class_="head")
    parts: list[Any] = [head]
    if step.reasoning:
        parts.append(tag("details", tag("summary", f"reasoning ({len(step.reasoning):,} characters)"),
                         tag("pre", step.reasoning), id=f"reasoning-{step.step}"))
    thought = thought_of(step.model_output) if step.code is not None else step.model_output.strip()
    if thought:
        parts.append(tag("details", tag("summary", "thought" if step.code is not None else "reply"),
                         tag("div", thought, class_="text"), open=True, id=f"thought-{step.step}"))
    if step.code is not None:
        parts.append(_block("code", highlight(step.code)))
    if logs:
        parts.append(_block("printed", logs))
    if step.output_repr is not None and not step.is_final_answer:
        parts.append(_block("value", step.output_repr))
    parts.extend(figure_html(a) for a in step.attachments)
    for what, why in notes:
        parts.append(tag("div", tag("b", f"{what} not returned: "), why, class_="box warning"))
    if step.error:
        words, css = error_label(step.error_kind, step.error)
        message = step.error
        etype = message.split(":", 1)[0]
        if f"({etype})" in words:  # the badge names the type already
            message = message[len(etype) + 1:].lstrip()
        parts.append(tag("div", tag("b", f"{words}: "), tag("span", message, class_="text"),
                         class_="box " + ("warning" if css == "k-warn" else "error")))
    if step.observation:
        parts.append(tag("details", tag("summary", "what the model was told next"), tag("pre", step.observation),
                         id=f"observation-{step.step}"))
    if step.model_output and step.code is not None:
        parts.append(tag("details", tag("summary", "the model's whole reply"), tag("pre", step.model_output),
                         id=f"reply-{step.step}"))
    css = "step " + ("err" if step.error else "final" if step.is_final_answer else "warn" if notes else "ok")
    return tag("section", parts, class_=css, id=f"step-{step.step}", data_kind=step.error_kind or "")
