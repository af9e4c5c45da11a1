"""An in-process server with one tool per way a request can end, for the pipeline's outcome tests."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

BIG_BYTES = 4096  # the `big` tool's answer; over a 1024-byte hard cap set by the tests

_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
_URL: dict[str, Any] = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}

TOOLS = [
    types.Tool(name="ok", input_schema=_OBJECT),
    types.Tool(name="says_no", description="Succeeds, saying success: false in its own data.", input_schema=_OBJECT),
    types.Tool(name="tool_error", input_schema=_OBJECT),
    types.Tool(name="rpc_error", input_schema=_OBJECT),
    types.Tool(
        name="invalid",
        input_schema=_OBJECT,
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ),
    types.Tool(name="slow", input_schema=_OBJECT),
    types.Tool(name="big", input_schema=_OBJECT),
    types.Tool(name="open_page", description="Opens a web page, like a browser.", input_schema=_URL),
]


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def build_outcome_server(name: str = "outcomes", *, opened: list[str] | None = None) -> Server[Any]:
    """The server; `opened` collects every URL `open_page` or the `page` prompt was asked for."""
    seen = opened if opened is not None else []

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        tool, args = params.name, params.arguments or {}
        if tool == "ok":
            return _text("fine")
        if tool == "says_no":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text='{"success": false}')],
                structured_content={"success": False, "reason": "the record does not exist"},
            )
        if tool == "tool_error":
            return _text("the tool could not do it", is_error=True)
        if tool == "rpc_error":
            raise MCPError(code=types.INVALID_PARAMS, message="no such widget")
        if tool == "invalid":
            return types.CallToolResult(content=[], structured_content={"n": "not a number"})
        if tool == "slow":
            await anyio.sleep(30)
            return _text("late")
        if tool == "big":
            return _text("x" * BIG_BYTES)
        if tool == "open_page":
            seen.append(str(args.get("url")))
            return _text(f"opened {args.get('url')}")
        return _text(f"Unknown tool: {tool}", is_error=True)

    async def list_prompts(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListPromptsResult:
        argument = types.PromptArgument(name="url", required=True)
        return types.ListPromptsResult(prompts=[types.Prompt(name="page", arguments=[argument])])

    async def get_prompt(ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams) -> Any:
        url = (params.arguments or {}).get("url", "")
        seen.append(url)
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"page {url}"))
        return types.GetPromptResult(messages=[message])

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate(uri_template="page://{+url}", name="page")]
        )

    async def read_resource(ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
        uri = str(params.uri)
        seen.append(uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text="page")])

    return Server(
        name,
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
