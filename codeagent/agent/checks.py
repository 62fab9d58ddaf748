"""An agent's arguments checked when it is made, each refusal with its fix: the model, tools and
executor in their places, the numbers in range, and the grants, imports and limits that configure
the default executor (only when no executor is passed)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from executors.base import normalize_imports
from executors.importable import ensure_importable

from ..models.openai_model import check_model

__all__ = ["check_agent_arguments", "check_access", "check_int", "default_executor_imports"]


def check_agent_arguments(model: Any, tools: Any, executor: Any) -> None:
    """Fail when the agent is made, with the fix, rather than at its first step."""
    if isinstance(model, (list, tuple)) and callable(getattr(tools, "complete", None)):
        raise TypeError("the model comes first: CodeAgent(model, tools=[...]) (smolagents puts tools "
                        "first); pass both by keyword to be safe")
    check_model(model)
    if isinstance(executor, str):
        raise TypeError(f"executor must be an executor object, not the string {executor!r}: pass e.g. "
                        "executor=SubprocessExecutor(), LocalExecutor() or DockerExecutor() from the "
                        "executors package (None: a SubprocessExecutor, the default)")
    if executor is not None and not callable(getattr(executor, "execute", None)):
        raise TypeError(f"executor must have an execute(code) method (an executors.Executor), got "
                        f"{type(executor).__name__}")


def check_access(access: Any, executor: Any) -> None:
    if access is None:
        return
    from executors.access import Access

    if not isinstance(access, Access):
        raise TypeError(f"access must be an executors.Access, e.g. Access(read=['data/']), not "
                        f"{type(access).__name__}")
    if executor is not None:
        raise ValueError("access configures the default executor; when you pass executor=..., give "
                         "access=... to that executor's constructor instead (the agent reads its grants)")


def check_int(name: str, value: Any, minimum: int, *, none: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        also = f" (or {none})" if none else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{also}, got {value!r}")


def default_executor_imports(
    authorized_imports: Iterable[str] | None, alias: Iterable[str] | None, executor: Any, limits: Any,
) -> Iterable[str] | None:
    """The imports of the default executor, checked: valid names, installed on this host."""
    if alias is not None:
        if authorized_imports is not None:
            raise ValueError("pass authorized_imports or its smolagents name additional_authorized_imports, "
                             "not both")
        authorized_imports = alias
    if executor is not None and (authorized_imports is not None or limits is not None):
        raise ValueError(
            "authorized_imports and limits configure the default executor; when you pass "
            "executor=..., give them to that executor's constructor instead"
        )
    if authorized_imports is not None:
        normalize_imports(authorized_imports)  # a string, or a name that is not a module name
        ensure_importable(authorized_imports)  # the default worker runs this Python: same modules
    return authorized_imports
