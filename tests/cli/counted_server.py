"""A stdio MCP server that counts its starts and lists the tools a file names.

    python counted_server.py STARTS_FILE TOOLS_FILE [GATE_FILE]

Each start appends a line to STARTS_FILE, each call the tool's name to STARTS_FILE.calls. Its tools
are the words of TOOLS_FILE, read at start (so its listing can change between runs while its
config entry stays the same); a call of any of them answers `ran NAME`. With GATE_FILE, it
answers nothing until that file exists (a server that takes its time to start).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server


def build(tools: list[str], calls: Path) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in tools])

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        with calls.open("a") as log:
            log.write(f"{params.name}\n")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

    return Server("counted", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


GATE_POLL_S = 0.05  # how often a gated start looks for its gate file
GATE_TIMEOUT_S = 300.0  # a gate nobody opens: start anyway


def main(starts: Path, tools: Path, gate: Path | None) -> None:
    with starts.open("a") as log:
        log.write("started\n")
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while gate is not None and not gate.exists() and time.monotonic() < deadline:
        time.sleep(GATE_POLL_S)
    anyio.run(serve, build(tools.read_text().split(), starts.with_name(starts.name + ".calls")))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
