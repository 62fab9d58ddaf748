"""What `CodeAgent.resume` starts from: the record (a RunResult or its file), checked, and the
user's decision on a paused run's call; and the agent's approval policy."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..runs.record import RunResult
from ..runs.record_file import load_record
from ..runs.replay import Resumption, resumable

__all__ = ["approval_policy", "resumption_of", "NOTHING_TO_RESUME"]

NOTHING_TO_RESUME = ("success", "max_steps")  # a run that ended is given back as it is
_NO_REASON = "no reason given"


def approval_policy(approval: Any, tools: dict[str, Any]) -> Callable[[Any, Any, Any], bool] | None:
    """`needs_approval(tool, args, kwargs)`: the tool's own flag, or the agent's policy (names, or
    a callable of the tool's name and arguments); None when no call can need it."""
    if approval is None:
        names: frozenset[str] = frozenset()
        policy = None
    elif callable(approval):
        names, policy = frozenset(), approval
    elif isinstance(approval, Iterable) and not isinstance(approval, (str, bytes)):
        names, policy = frozenset(approval), None
        unknown = sorted(names - set(tools))
        if unknown:
            raise ValueError(f"approval names tools the agent does not have: {', '.join(unknown)}")
    else:
        raise TypeError(f"approval must be tool names or a callable(name, args, kwargs), got {approval!r}")
    if policy is None and not names and not any(getattr(t, "approval", False) for t in tools.values()):
        return None

    def needs_approval(tool: Any, args: Any, kwargs: Any) -> bool:
        if getattr(tool, "approval", False) or tool.name in names:
            return True
        return bool(policy(tool.name, args, kwargs)) if policy is not None else False

    return needs_approval


def resumption_of(record: RunResult | str | os.PathLike[str], approve: bool | None, message: str | None,
                  on_divergence: str) -> tuple[Resumption | None, RunResult, Path | None]:
    """The Resumption to run (None: nothing to do), the record, and where it is saved again."""
    if on_divergence not in ("stop", "continue"):
        raise ValueError(f"on_divergence must be 'stop' or 'continue', got {on_divergence!r}")
    path = None
    if not isinstance(record, RunResult):
        path = Path(record)
        record = load_record(path)
    resumable(record)
    if approve is None and message is not None:
        raise ValueError("message= goes with approve=False: it tells the model why its call was refused")
    decisions: dict[tuple[int, int], bool | str] = {}
    if approve is not None:
        pending = record.pending
        if record.status != "paused" or pending is None:
            raise ValueError(f"run {record.run_id} is not paused (its status is {record.status!r}): "
                             "there is no call to approve or reject")
        decisions[(pending.step, pending.index)] = True if approve else (message or _NO_REASON)
    if record.status in NOTHING_TO_RESUME or (record.status == "paused" and approve is None):
        return None, record, path
    return Resumption(record, decisions, on_divergence), record, path  # type: ignore[arg-type]
