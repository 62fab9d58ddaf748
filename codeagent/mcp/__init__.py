"""MCP both ways: MCP servers' tools in every agent (`MCPTools`), and the sandbox served to any MCP
client (`codeagent mcp-serve`, `serve.py`). Needs the extra `codeagent[mcp]` (the official `mcp`
2.x package); importing this package does not import it, opening a toolset or a server does.
"""

from __future__ import annotations

from .client import MCPTool, MCPTools
from .connection import MCPStartError, ServerSpec, require_mcp

__all__ = ["MCPStartError", "MCPTool", "MCPTools", "ServerSpec", "require_mcp"]
