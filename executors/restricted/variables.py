"""The model's variables as the host may hold them: plain data copied, anything else as text.

A value built only of plain data (None, bool, int, float, str, bytes, and lists, tuples, sets,
frozensets and dicts of those, exact types only) is handed over as a copy: copying it runs no
model code, and the host gets no live model object whose methods would run model code later.
Anything else (a model's class instance, a function, a subclass of a builtin) is rendered with
its repr, by the runtime, under the sandbox's limits.
"""

from __future__ import annotations

from typing import Any

_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_CONTAINERS = frozenset({list, tuple, set, frozenset, dict})
# Deeper than this is not what a variable for the host looks like; it becomes its repr.
MAX_DEPTH = 100


class NotPlain(Exception):
    """The value holds something that is not plain data (or a cycle, or is too deep)."""


_BUSY = object()  # memo marker: this container is being copied (seeing it again is a cycle)


def plain_copy(value: Any) -> Any:
    """A copy of `value` if it is plain data; raises NotPlain otherwise. Shared parts stay
    shared (so a structure with much sharing is copied in time linear in its distinct parts)."""
    try:
        return _copy(value, {}, 0)
    except RecursionError:  # another thread's run lowered the process's recursion limit
        raise NotPlain from None


def _copy(value: Any, memo: dict[int, Any], depth: int) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind not in _CONTAINERS or depth >= MAX_DEPTH:
        raise NotPlain
    key = id(value)
    done = memo.get(key)
    if done is _BUSY:
        raise NotPlain  # a cycle: JSON cannot hold it
    if done is not None:
        return done
    memo[key] = _BUSY
    depth += 1
    if kind is dict:
        # keys of exact builtin types hash and compare in C: no model code runs
        copied: Any = {_copy(k, memo, depth): _copy(v, memo, depth) for k, v in value.items()}
    else:
        copied = kind(_copy(item, memo, depth) for item in value)
    memo[key] = copied
    return copied

