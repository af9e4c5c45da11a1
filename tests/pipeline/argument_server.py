"""An in-process server whose tools have input schemas to get wrong, and which records what reaches it."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

SEND: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["message"],
    "additionalProperties": False,
}
SEARCH: dict[str, Any] = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
UNKNOWN_DIALECT: dict[str, Any] = {
    "$schema": "https://schemas.example/private-dialect",
    "type": "object",
    "properties": {"x": {"type": "integer"}},
}
INVALID: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "whole number"}}}

TOOLS = [
    types.Tool(name="send", input_schema=SEND),
    types.Tool(name="search", input_schema=SEARCH),
    types.Tool(name="dialect", input_schema=UNKNOWN_DIALECT),
    types.Tool(name="invalid", input_schema=INVALID),
]


def build_argument_server(received: list[tuple[str, dict[str, Any]]]) -> Server[Any]:
    """The server; every call that reaches it is appended to `received` as (tool, arguments)."""

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        received.append((params.name, dict(params.arguments or {})))
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ran")])

    return Server("arguments", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
