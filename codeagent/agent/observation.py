"""What the model sees after its code ran (shared by CodeAgent and the MCP server's run_python):
printed output, then the error with what to do, or the last value, then one line per figure, all
within a budget of characters."""

from __future__ import annotations

from executors.base import ExecutionResult

from .memory import truncate_middle

__all__ = ["observation_text", "NOTHING_TO_SHOW", "NOTHING_RAN"]

NOTHING_TO_SHOW = (
    "The code ran; it printed nothing and its last line has no value. "
    "Use print() to see values, or call final_answer(...) when you are done."
)
# ExecutionError types that mean no line of the code ran (it was refused before running).
NOTHING_RAN = frozenset({"SyntaxError", "PolicyError"})


def observation_text(result: ExecutionResult, budget: int, *, final: bool = False, figures: str = "") -> str:
    """What the model sees after its code ran: printed output, error or last value, then one line
    per figure (`figures`, kept whole), within `budget`."""
    if figures:
        figures = truncate_middle(figures, budget // 3)
        budget = max(budget - len(figures) - 1, 200)
    parts: list[str] = []
    if result.state_lost:
        parts.append("Note: the Python process was restarted; variables from earlier steps are gone.")
    tail: list[str] = []
    if result.error is not None:
        if result.error.type in NOTHING_RAN:
            hint = "None of this code ran. Fix it and try again."
        else:
            hint = "Fix the code and try again. Variables assigned before the error still exist."
        tail.append(truncate_middle(f"Error: {result.error}", 2_000) + "\n" + hint)
    elif result.output_repr is not None:
        label = "Final answer: " if final else "Last value: "
        tail.append(label + truncate_middle(result.output_repr, budget // 3))
    if result.logs:
        room = max(budget - sum(len(p) for p in parts + tail) - 40, 200)
        parts.append("Printed output:\n" + truncate_middle(result.logs.rstrip("\n"), room))
    parts.extend(tail)
    if not parts:
        return figures or NOTHING_TO_SHOW
    text = truncate_middle("\n".join(parts), budget)
    return f"{text}\n{figures}" if figures else text
