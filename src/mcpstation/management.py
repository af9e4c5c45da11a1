"""The management tools as an MCP server of the station's own, reached in process.

"Connect the MCP server on local port 3000" becomes `mcp_add_server`, which goes through exactly
the same allowlists, command policy, persistence and audit as every other dynamic change, and
answers in words the LLM can read. The server is an ordinary entry of the roster (origin `host`,
`min_role = admin`, bare names that no other server may take), so the pipeline lists, guards,
audits and routes its tools like any other; the caller reaches it in the request's `_meta`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from mcpstation.config.models import InProcessServerSpec, Role
from mcpstation.dynamic import ServerChange
from mcpstation.errors import StationError
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import CALLER_META_KEY, OUTCOME_META_KEY
from mcpstation.status import ServerStatus

MANAGEMENT_SERVER = "mcpstation"  # the roster name of the station's own server; no configured server can take it

_NAME = {"type": "string", "description": "The server's name (its key), e.g. 'local-api'."}
_NAME_ONLY = {"type": "object", "properties": {"name": _NAME}, "required": ["name"], "additionalProperties": False}

_ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": _NAME,
        "transport": {
            "type": "string",
            "enum": ["stdio", "streamable_http", "sse", "websocket"],
            "description": "stdio runs a local command; the others connect to a URL.",
        },
        "command": {"type": "string", "description": "For stdio: the executable."},
        "args": {"type": "array", "items": {"type": "string"}, "description": "For stdio: its arguments."},
        "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "For stdio."},
        "url": {"type": "string", "description": "For remote servers, e.g. http://localhost:3000/sse."},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "namespace": {"type": "string", "description": "Prefix for its tools in namespace naming."},
        "enabled": {"type": "boolean", "default": True},
    },
    "required": ["name", "transport"],
    "additionalProperties": False,
}

_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "mcp_add_server": (
        "Add an MCP server at run time and connect it. Allowed commands and URLs are limited by the "
        "operator's policy; the answer says whether it connected and how many tools it brought, or "
        "that it waits for a person's approval.",
        _ADD_SCHEMA,
    ),
    "mcp_remove_server": ("Remove a server that was added at run time.", _NAME_ONLY),
    "mcp_list_servers": (
        "List every MCP server with its origin (static or dynamic), state and tool count.",
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
    "mcp_reload_server": ("Reconnect a server and re-list its tools.", _NAME_ONLY),
    "mcp_enable_server": ("Enable a server added at run time and connect it.", _NAME_ONLY),
    "mcp_disable_server": ("Disable a server added at run time (kept, not connected).", _NAME_ONLY),
}
MANAGEMENT_TOOLS: tuple[str, ...] = tuple(_TOOLS)


class ServerAdmin(Protocol):
    """What the management tools may do: the station's own run-time server changes."""

    async def add_server(self, spec: dict[str, Any], *, actor: str) -> ServerChange: ...

    async def remove_server(self, name: str, *, actor: str) -> ServerChange: ...

    async def reload_server(self, name: str, *, actor: str) -> ServerChange: ...

    async def enable_server(self, name: str, *, actor: str) -> ServerChange: ...

    async def disable_server(self, name: str, *, actor: str) -> ServerChange: ...

    def list_servers(self) -> list[ServerStatus]: ...


def management_spec(admin: ServerAdmin) -> InProcessServerSpec:
    """The roster entry of the management server: admin only, its tools under their fixed names."""
    return InProcessServerSpec(
        name=MANAGEMENT_SERVER,
        server=build_management_server(admin),
        naming="bare",
        min_role=Role.ADMIN,
    )


def build_management_server(admin: ServerAdmin) -> Server[Any]:
    """A low-level MCP server whose tools change `admin`'s servers, as the calling LLM's actor."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema) in _TOOLS.items()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = (ctx.meta or {}).get(CALLER_META_KEY)
        identity = caller.get("identity") if isinstance(caller, dict) else None
        actor = f"llm:{identity or 'unknown'}"
        args = params.arguments or {}
        refused = False
        try:
            text, ok = await _run(admin, params.name, args, actor)
            refused = not ok  # a change the rules said no to
        except StationError as exc:  # boundary: a management tool answers the LLM, it never raises at it
            text, ok = f"{params.name} failed: {exc}", False
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=not ok,
            _meta={OUTCOME_META_KEY: str(Outcome.REFUSED)} if refused else None,
        )

    return Server(MANAGEMENT_SERVER, version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def _run(admin: ServerAdmin, tool: str, args: dict[str, Any], actor: str) -> tuple[str, bool]:
    if tool == "mcp_list_servers":
        servers = [
            {"name": s.name, "origin": str(s.origin), "state": str(s.state), "tools": s.tools, "error": s.error}
            for s in admin.list_servers()
        ]
        return json.dumps(servers, indent=1), True
    changes: dict[str, Callable[[str], Awaitable[ServerChange]]] = {
        "mcp_remove_server": lambda name: admin.remove_server(name, actor=actor),
        "mcp_reload_server": lambda name: admin.reload_server(name, actor=actor),
        "mcp_enable_server": lambda name: admin.enable_server(name, actor=actor),
        "mcp_disable_server": lambda name: admin.disable_server(name, actor=actor),
    }
    if tool == "mcp_add_server":
        change = await admin.add_server(dict(args), actor=actor)
    elif tool in changes:
        change = await changes[tool](str(args.get("name", "")))
    else:
        return f"unknown tool {tool!r}", False
    return change.message, change.ok
