"""The SDK's own low-level server with one `echo` tool and nothing else: the floor under a gateway.

    python bench/servers/sdk_echo_server.py [--wire ours|sdk]

`mcpstation gateway --stdio` is an SDK `Server` whose handler runs the station's pipeline. This one
is the same `Server` with a handler that answers at once, so `gateway_cost.py` can show what the
SDK's request handling costs a call before the station does anything. `--wire ours` (the default)
serves it on the gateway's own stdin/stdout streams (`mcpstation.gateway._stdio_wire`, no thread
hops); `--wire sdk` on the SDK's `stdio_server`, as a server written with the SDK alone is.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from mcpstation.gateway._stdio_wire import stdio_streams

ECHO = types.Tool(
    name="echo",
    description="Answers with its message.",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    message = (params.arguments or {}).get("message", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(message))])


async def serve(wire: str) -> None:
    server: Server[Any] = Server("sdk-echo", on_list_tools=list_tools, on_call_tool=call_tool)
    streams = stdio_streams() if wire == "ours" else stdio_server()
    async with streams as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wire", choices=("ours", "sdk"), default="ours")
    anyio.run(serve, parser.parse_args().wire)


if __name__ == "__main__":
    main()
