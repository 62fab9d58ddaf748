"""MCPTools: the tools of MCP servers as ordinary codeagent `Tool`s, for every agent and executor.

    with MCPTools(command="python", args=["-m", "mcp_server_time"]) as time_tools:
        CodeAgent(model, tools=[*time_tools.tools, add]).run("What time is it in Tokyo?")

Each MCP tool becomes a `Tool` (`MCPTool`) whose signature comes from its `inputSchema`
(`schema.py`): the prompt shows it as a typed Python stub with the server's description, the
constrained-decoding and function-calling schemas follow from it, and pydantic checks the
arguments before anything is sent. The executors call these tools like any host tool (over their
tool channel, from the sandbox); the call itself runs on the host, on the toolset's event loop
(`connection.py`). Several servers: `MCPTools(servers=[{...}, {...}])`; a tool name two servers
share is prefixed with each server's name (`time_convert`, `clock_convert`).
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ..tools.tool import Tool, attach
from .connection import EventLoop, MCPStartError, ServerConnection, ServerSpec, require_mcp
from .results import result_value
from .schema import describe, python_name, returns_of, signature_of

__all__ = ["MCPTools", "MCPTool", "MCPStartError", "ServerSpec"]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_START_TIMEOUT_S = 30.0
DEFAULT_MAX_RESULT_CHARS = 200_000


class MCPTool(Tool):
    """One tool of an MCP server. `server` is its ServerSpec, `mcp_name` its name on the server,
    `input_schema` / `output_schema` the server's schemas."""

    def __init__(self, toolset: MCPTools, connection: ServerConnection, definition: Any, name: str) -> None:
        self.mcp_name = str(definition.name)
        self.server = connection.spec
        self.input_schema = dict(definition.input_schema or {})
        self.output_schema = dict(definition.output_schema) if definition.output_schema else None
        params = signature_of(self.input_schema, returns_of(self.output_schema))
        self._wire = params.wire
        self._connection = connection
        self._toolset = toolset

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(params.signature.bind(*args, **kwargs).arguments)

        async def acall(*args: Any, **kwargs: Any) -> Any:  # natively async: an async run's loop
            return await self._acall(params.signature.bind(*args, **kwargs).arguments)

        call.__signature__ = params.signature  # type: ignore[attr-defined]
        call.__annotations__ = {p.name: p.annotation for p in params.signature.parameters.values()}
        call.__name__ = name
        description = describe(definition.description or definition.title or "", params, self.output_schema)
        super().__init__(call, name=name, description=description)
        self.afn = acall

    def _call(self, arguments: Mapping[str, Any]) -> Any:
        timeout = self._toolset.timeout_s
        return self._value(self._connection.call(self.mcp_name, self._sent(arguments), timeout, self.name))

    async def _acall(self, arguments: Mapping[str, Any]) -> Any:
        timeout = self._toolset.timeout_s
        return self._value(await self._connection.acall(self.mcp_name, self._sent(arguments), timeout, self.name))

    def _sent(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {self._wire[k]: v for k, v in arguments.items() if not (v is None and self._omittable(k))}

    def _value(self, result: Any) -> Any:
        value, images = result_value(result, tool=self.name, output_schema=self.output_schema,
                                     max_chars=self._toolset.max_result_chars)
        if images:
            attach(*images)  # to the calling step; nobody collecting (a direct call): they are dropped
        return value

    def _omittable(self, name: str) -> bool:
        """An optional argument left at None is not sent: the server applies its own default."""
        param = self.signature.parameters[name]
        return param.default is None

    def __repr__(self) -> str:
        return f"MCPTool({self.signature_text()}, server={self.server.label!r})"


class MCPTools:
    """A context manager holding sessions with MCP servers; `.tools` are their tools as `Tool`s.

    One server: `MCPTools(command=..., args=[...], env=None, cwd=None)` (stdio: the command is
    started and spoken to over its stdin/stdout) or `MCPTools(url=..., headers=None)` (streamable
    HTTP; `headers` e.g. {"Authorization": "Bearer ..."}). Several: `servers=[{"command": ...},
    {"url": ...}, ...]` (dicts of those same keys, plus `name`, or ServerSpec objects).

    timeout_s: the limit of one tool call (the model is told when a call times out, and a server
        that stopped answering is restarted at the next call). start_timeout_s: the limit of
        starting and listing a server. max_result_chars: longer results are cut head and tail,
        with a note for the model.
    Opening raises `MCPStartError` (which server, why, the end of its stderr); a server that dies
    later is one `ToolError` for the call that found it dead, and restarted at the next call.
    """

    def __init__(
        self,
        command: str | None = None,
        args: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        *,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        servers: Iterable[ServerSpec | Mapping[str, Any]] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        if isinstance(args, str):
            raise TypeError(f"args must be a list of strings, e.g. args={shlex.split(args)!r}")
        one = command is not None or url is not None
        if one == (servers is not None):
            raise ValueError("pass one server (command=... or url=...) or servers=[...], not both and not neither")
        if one:
            specs = [ServerSpec(command=command, args=tuple(args), env=dict(env) if env else None, cwd=cwd,
                                url=url, headers=dict(headers) if headers else None, name=name)]
        else:
            specs = [s if isinstance(s, ServerSpec) else _spec(s) for s in servers or ()]
            if not specs:
                raise ValueError("servers=[...] is empty: name at least one MCP server")
        for label, value in (("timeout_s", timeout_s), ("start_timeout_s", start_timeout_s)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{label} must be a number of seconds > 0, got {value!r}")
        if not isinstance(max_result_chars, int) or max_result_chars < 1000:
            raise ValueError(f"max_result_chars must be an int >= 1000, got {max_result_chars!r}")
        self.specs = specs
        self.timeout_s = float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.max_result_chars = max_result_chars
        self._loop: EventLoop | None = None
        self._connections: list[ServerConnection] = []
        self._tools: list[MCPTool] = []
        self._lock = threading.Lock()

    @property
    def tools(self) -> list[MCPTool]:
        if self._loop is None:
            raise RuntimeError("MCPTools is not open: use it as `with MCPTools(...) as m:` (or call m.open())")
        return list(self._tools)

    def open(self) -> MCPTools:
        """Start (or reach) every server and list its tools; `MCPStartError` if one fails."""
        with self._lock:
            if self._loop is not None:
                return self
            require_mcp()
            self._loop = EventLoop()
            try:
                for spec in self.specs:
                    connection = ServerConnection(spec, self._loop, self.start_timeout_s)
                    self._connections.append(connection)
                    connection.start()
                self._tools = self._named_tools()
            except BaseException:
                self._shutdown()
                raise
        return self

    def close(self) -> None:
        """End every session (a stdio server is asked to exit, then killed)."""
        with self._lock:
            self._shutdown()

    def __enter__(self) -> MCPTools:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"{len(self._tools)} tools" if self._loop is not None else "closed"
        return f"MCPTools({', '.join(s.label for s in self.specs)}; {state})"

    def _shutdown(self) -> None:
        for connection in self._connections:
            connection.close()
        self._connections, self._tools = [], []
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def _named_tools(self) -> list[MCPTool]:
        """The tools of all servers; a name two servers share gets each server's name as prefix."""
        plain = [(c, d, python_name(str(d.name))) for c in self._connections for d in c.listing]
        counts: dict[str, int] = {}
        for _, _, name in plain:
            counts[name] = counts.get(name, 0) + 1
        taken: set[str] = set()
        tools = []
        for connection, definition, name in plain:
            if counts[name] > 1:
                name = f"{self._server_prefix(connection)}_{name}"
            name = python_name(name, taken=taken)
            taken.add(name)
            tools.append(MCPTool(self, connection, definition, name))
        return tools

    def _server_prefix(self, connection: ServerConnection) -> str:
        spec = connection.spec
        own = spec.name or connection.server_name or (spec.command or spec.url or "server").rsplit("/", 1)[-1]
        return python_name(own)


def _spec(entry: Mapping[str, Any]) -> ServerSpec:
    known = {"command", "args", "env", "cwd", "url", "headers", "name"}
    unknown = set(entry) - known
    if unknown:
        raise ValueError(f"unknown MCP server setting(s) {sorted(unknown)}: use {sorted(known)}")
    values = dict(entry)
    if isinstance(values.get("args"), str):
        raise TypeError(f"args must be a list of strings, e.g. 'args': {shlex.split(values['args'])!r}")
    values["args"] = tuple(values.get("args") or ())
    return ServerSpec(**values)
