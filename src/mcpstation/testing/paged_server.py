"""A stdio MCP server whose lists come in pages, for testing cursor walking and its guards.

    python -m mcpstation.testing.paged_server [--tools N] [--page-size K]
        [--repeat-cursor] [--endless] [--init-delay S]

Tools `t0..t{N-1}` (each returns its own name), prompts `p0..` and resources `paged://r{i}` are
listed K per page; a cursor is the offset of the page's first item. `--repeat-cursor` answers
every page from page 2 on with the cursor that fetched page 2, forever. `--endless` always hands
out a fresh cursor (pages of ever-new names). `--init-delay S` waits S seconds before serving.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

T = TypeVar("T")
Context = ServerRequestContext[Any]


@dataclass(frozen=True)
class Paging:
    """How lists are cut into pages."""

    total: int = 7
    page_size: int = 3
    repeat_cursor: bool = False
    endless: bool = False

    def page(self, params: types.PaginatedRequestParams | None, make: Callable[[int], T]) -> tuple[list[T], str | None]:
        """The items of the page `params.cursor` points at, and the next cursor (None on the last page)."""
        cursor = params.cursor if params else None
        try:
            start = int(cursor) if cursor else 0
        except ValueError:
            raise MCPError(types.INVALID_PARAMS, f"bad cursor {cursor!r}") from None
        limit = sys.maxsize if self.endless else self.total
        if not 0 <= start <= limit:
            raise MCPError(types.INVALID_PARAMS, f"bad cursor {cursor!r}")
        end = min(start + self.page_size, limit)
        items = [make(i) for i in range(start, end)]
        if self.repeat_cursor and start >= self.page_size:
            return items, str(self.page_size)  # the cursor that fetched page 2, forever
        return items, (str(end) if end < limit else None)


def build_paged_server(paging: Paging) -> Server[Any]:
    """A low-level server listing `paging.total` tools, prompts and resources page by page."""

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools, cursor = paging.page(params, lambda i: types.Tool(name=f"t{i}", input_schema={"type": "object"}))
        return types.ListToolsResult(tools=tools, next_cursor=cursor)

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    async def list_prompts(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        prompts, cursor = paging.page(params, lambda i: types.Prompt(name=f"p{i}"))
        return types.ListPromptsResult(prompts=prompts, next_cursor=cursor)

    async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=params.name))
        return types.GetPromptResult(messages=[message])

    async def list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources, cursor = paging.page(params, lambda i: types.Resource(name=f"r{i}", uri=f"paged://r{i}"))
        return types.ListResourcesResult(resources=resources, next_cursor=cursor)

    async def read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=uri.removeprefix("paged://"))
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "paged",
        version="0.1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def _serve(server: Server[Any], init_delay_s: float) -> None:
    await anyio.sleep(init_delay_s)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcpstation.testing.paged_server",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tools", type=int, default=7, metavar="N", help="items per list (default 7)")
    parser.add_argument("--page-size", type=int, default=3, metavar="K", help="items per page (default 3)")
    parser.add_argument("--repeat-cursor", action="store_true", help="repeat one cursor forever after page 2")
    parser.add_argument("--endless", action="store_true", help="hand out a fresh cursor forever")
    parser.add_argument("--init-delay", type=float, default=0.0, metavar="S", help="seconds before serving")
    args = parser.parse_args(argv)
    if args.page_size < 1 or args.tools < 0:
        parser.error("--page-size must be at least 1 and --tools at least 0")
    paging = Paging(args.tools, args.page_size, args.repeat_cursor, args.endless)
    anyio.run(_serve, build_paged_server(paging), args.init_delay)


if __name__ == "__main__":
    main()
