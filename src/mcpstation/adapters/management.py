"""Management tools an LLM can call to manage servers in conversation (seed 003).

"Connect the MCP server on local port 3000" becomes `mcp_add_server`, which goes through exactly
the same allowlists, command policy, persistence and audit as every other dynamic change
(`Station.add_server`), and answers in words the LLM can read.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types as types

from mcpstation.calls import CallRequest
from mcpstation.catalog import CatalogTool, ToolResult
from mcpstation.errors import StationError

if TYPE_CHECKING:
    from mcpstation.station import Station

MANAGEMENT_SERVER = "mcpstation"  # the owner shown for these tools; no configured server can take it

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
        "operator's policy; the answer says whether it connected and how many tools it brought.",
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


def management_tools() -> tuple[CatalogTool, ...]:
    """The management tools as catalog entries, under their fixed names."""
    entries = []
    for name, (description, schema) in _TOOLS.items():
        definition = types.Tool(name=name, description=description, input_schema=schema)
        entries.append(CatalogTool(name, MANAGEMENT_SERVER, name, description, schema, definition))
    return tuple(entries)


async def run_management_tool(station: Station, request: CallRequest) -> ToolResult:
    """Run one management tool for `request.caller`; every outcome is a readable result."""
    tool, args, actor = request.entry.tool, request.arguments, f"llm:{request.caller.identity}"
    try:
        if tool == "mcp_list_servers":
            servers = [
                {"name": s.name, "origin": s.origin, "state": s.state, "tools": s.tools, "error": s.error}
                for s in station.list_servers()
            ]
            return _text(request, json.dumps(servers, indent=1), ok=True)
        name = str(args.get("name", ""))
        if tool == "mcp_add_server":
            change = await station.add_server(dict(args), actor=actor)
        elif tool == "mcp_remove_server":
            change = await station.remove_server(name, actor=actor)
        elif tool == "mcp_reload_server":
            change = await station.reload_server(name, actor=actor)
        elif tool == "mcp_enable_server":
            change = await station.enable_server(name, actor=actor)
        else:
            change = await station.disable_server(name, actor=actor)
    except StationError as exc:  # boundary: a management tool answers the LLM, it never raises at it
        return _text(request, f"{tool} failed: {exc}", ok=False)
    return _text(request, change.message, ok=change.ok)


def _text(request: CallRequest, text: str, *, ok: bool) -> ToolResult:
    entry = request.entry
    return ToolResult(
        ok=ok,
        name=entry.name,
        server=entry.server,
        tool=entry.tool,
        content=(types.TextContent(type="text", text=text),),
        error=None if ok else text,
    )
