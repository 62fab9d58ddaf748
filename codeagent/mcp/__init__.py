"""MCP both ways: MCP servers' tools in every agent (`MCPTools`), and the sandbox served to any MCP
client (`codeagent mcp-serve`, `serve.py`). Needs the extra `codeagent[mcp]` (the official `mcp`
2.x package); importing this package does not import it, opening a toolset or a server does.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "MCPTools": ".client",
    "MCPTool": ".client",
    "MCPStartError": ".connection",
    "ServerSpec": ".connection",
    "require_mcp": ".connection",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codeagent.mcp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
