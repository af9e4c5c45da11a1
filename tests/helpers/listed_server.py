"""An in-process server that lists the tools it is given and answers each call with what it was asked.

Its tool lists are real ones (`stored_tools`: the listings of public MCP servers kept in
bench/search/servers) or generated (`generated_tools`), so tool search runs over a catalog of the
size and shape the tests need without a subprocess per server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

STORED = Path(__file__).resolve().parents[2] / "bench" / "search" / "servers"


def stored_tools(server: str) -> list[types.Tool]:
    """The tools public server `server` listed (bench/search/servers/<server>.json)."""
    record = json.loads((STORED / f"{server}.json").read_text())
    return [types.Tool.model_validate(tool) for tool in record["tools"]]


def generated_tools(count: int, *, topic: str = "widget") -> list[types.Tool]:
    """`count` distinct tools about `topic`, each with one string parameter."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": f"The {topic}'s id."}}}
    return [
        types.Tool(name=f"{topic}_step_{i}", description=f"Step {i} of handling a {topic}.", input_schema=schema)
        for i in range(count)
    ]


def build_listed_server(name: str, tools: list[types.Tool], *, instructions: str | None = None) -> Server[Any]:
    """A low-level server listing `tools`; a call answers `{"server", "tool", "arguments"}` (text and structured).

    Output schemas are left out of the listing: an echo could not meet them.
    """
    tools = [tool.model_copy(update={"output_schema": None}) for tool in tools]
    known = {tool.name for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        if params.name not in known:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True
            )
        answer = {"server": name, "tool": params.name, "arguments": params.arguments or {}}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(answer))], structured_content=answer
        )

    return Server(name, version="1", instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool)
