"""What a host does with the values a step hands it, done to every value of a "deferred" attempt.

A user prints the final answer, compares it, hashes it, puts it in an f-string or a JSON log,
copies it, iterates it, lets get_variables hand it over. If the value is a model-made object, each
of these runs the model's methods (or host callables it chose as methods) on the host, after the
step, with no guard: the escape the "deferred" family looks for. Each touch is bounded (at most a
few items of an iterator) and any error it raises is the value's business, not a finding.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["TOUCHES", "touch_like_a_host", "touch_result"]


def _iterate(v: Any) -> Any:
    return list(itertools.islice(iter(v), 5))


TOUCHES: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("str", str), ("repr", repr), ("format", lambda v: f"{v:>8}"), ("eq", lambda v: v == "x"),
    ("hash", hash), ("len", len), ("bool", bool), ("iterate", _iterate),
    ("json", lambda v: json.dumps(v, default=str)), ("deepcopy", copy.deepcopy),
    ("float", float), ("int", int), ("round", round), ("isoformat", lambda v: v.isoformat()),
    ("contains", lambda v: "x" in v), ("getattr", lambda v: hasattr(v, "to_dict")),
)


def touch_like_a_host(values: Iterable[Any]) -> int:
    """Every touch on every value; returns how many raised (for reports)."""
    failed = 0
    for value in values:
        for _name, touch in TOUCHES:
            try:
                touch(value)
            except Exception:  # noqa: BLE001 - a value that does not support the touch
                failed += 1
    return failed


def touch_result(ex: Any, result: Any) -> int:
    """The step's value (or final answer) and the model's variables, touched like a host would."""
    values = [result.output] if result is not None and result.output is not None else []
    try:
        values += list(ex.get_variables().values())
    except Exception:  # noqa: BLE001 - an executor without variables, or one the step broke
        pass
    return touch_like_a_host(values)
