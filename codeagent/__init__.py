"""codeagent: agents that act by writing Python, run by the `executors` package.

Public names only, imported lazily so that `import codeagent` stays cheap. The map of the
modules and of one agent step: docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

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

__all__ = sorted(_LAZY)


def _version() -> str:
    """The installed distribution's version (pyproject.toml is its one source)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codeagent")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codeagent' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
