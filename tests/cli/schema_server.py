"""A stdio MCP server that lists the tools of a JSON file (argv[1]) as they are, input schemas and all.

For `tools export` and `tools check` on schemas no well-behaved server sends (a circular `$ref`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server


def build(tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    return Server("schemas", version="1", on_list_tools=list_tools)


async def serve(tools: list[types.Tool]) -> None:
    server = build(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, [types.Tool.model_validate(tool) for tool in json.loads(Path(sys.argv[1]).read_text())])
