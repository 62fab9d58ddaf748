"""What every raw-memory check shares: when it applies (a step's thread, outside trusted
imports and host code) and how it refuses (a PolicyError that names the route and the way on)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...capabilities import GUARD
from ...guards.errors import PolicyError

in_step = GUARD.in_step


def refusal(what: str, why: str, instead: str = "") -> PolicyError:
    tail = f"; {instead}" if instead else ""
    return PolicyError(f"{what} is not allowed in the sandbox: {why}{tail}")


def checked(original: Callable[..., Any], check: Callable[..., Any]) -> Callable[..., Any]:
    """`original`, with `check(*args, **kwargs)` first on a step's thread. `check` may return
    replacement (args, kwargs) (normalized arguments: what was checked is what runs) or None."""

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if in_step():
            replaced = check(*args, **kwargs)
            if replaced is not None:
                args, kwargs = replaced
        return original(*args, **kwargs)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.codeagent_checked = True  # type: ignore[attr-defined]
    return wrapper


def replace_in(module: Any, name: str, check: Callable[..., Any]) -> bool:
    """Put a checked version of `module.name` in place (once); False when it has none."""
    original = getattr(module, name, None)
    if original is None or getattr(original, "codeagent_checked", False):
        return False
    setattr(module, name, checked(original, check))
    return True


def refused(what: str, why: str, instead: str = "") -> Callable[..., Any]:
    """A check that always refuses (in a step)."""

    def check(*args: Any, **kwargs: Any) -> None:
        raise refusal(what, why, instead)

    return check
