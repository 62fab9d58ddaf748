"""codeagent: agents that act by writing Python, run by the `executors` package.

Public names only, imported lazily so that `import codeagent` stays cheap. The map of the
modules and of one agent step: docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_LAZY = {
    "CodeAgent": ".agent.code_agent",
    "RunResult": ".runs.record",
    "RunFailed": ".runs.record",
    "RunInterrupted": ".runs.record",
    "OpenAIModel": ".models.openai_model",
    "ScriptedModel": ".models.scripted",
    "Model": ".models.openai_model",
    "ModelReply": ".models.openai_model",
    "Tool": ".tools.tool",
    "tool": ".tools.tool",
    "parse_code": ".parsing",
    "CodeParseError": ".parsing",
    "SingleCallAgent": ".agent.single_call",
    "ToolCallingAgent": ".agent.tool_calling",
    "auto_agent": ".agent.auto",
}

__all__ = [  # the keys of _LAZY (tests/test_first_day.py holds them equal)
    "CodeAgent", "CodeParseError", "Model", "ModelReply", "OpenAIModel", "RunFailed", "RunInterrupted",
    "RunResult", "ScriptedModel", "SingleCallAgent", "Tool", "ToolCallingAgent", "auto_agent", "parse_code",
    "tool",
]
# Public subpackages, reachable as attributes too (`codeagent.parsing.parse_code`).
_SUBPACKAGES = ("batch", "events", "mcp", "parsing", "tracing", "view")

if TYPE_CHECKING:  # pragma: no cover - for editors and type checkers: the same names, eagerly
    from .agent.auto import auto_agent
    from .agent.code_agent import CodeAgent
    from .agent.single_call import SingleCallAgent
    from .agent.tool_calling import ToolCallingAgent
    from .models.openai_model import Model, ModelReply, OpenAIModel
    from .models.scripted import ScriptedModel
    from .parsing import CodeParseError, parse_code
    from .runs.record import RunFailed, RunInterrupted, RunResult
    from .tools.tool import Tool, tool


def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codeagent")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __dir__() -> list[str]:
    """The public API, for completion in a REPL or a notebook (the names load lazily)."""
    return sorted({*__all__, *_SUBPACKAGES, "__version__", *(n for n in globals() if n.startswith("__") and n.endswith("__"))})


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codeagent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
