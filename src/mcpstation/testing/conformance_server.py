"""The surface the MCP conformance *server* suite expects, to run it directly and through the gateway.

    python -m mcpstation.testing.conformance_server [--transport stdio|http] [--port N]

Names are the suite's, exactly (tools `test_simple_text` ... `json_schema_2020_12_tool`,
resources `test://static-text` ..., prompts `test_simple_prompt` ...), so the gateway must front
it in `bare` naming. Built on `MCPServer`, plus the low-level handlers it lacks
(`logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`). Over HTTP it prints
`listening on URL` to stderr once ready and binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import BaseModel, Field

from mcpstation.gateway import MemoryEventStore

LOOPBACK_HOST = "127.0.0.1"
SSE_RETRY_MS = 100  # what the suite's SSE polling scenario expects to be told
STEP_PAUSE_S = 0.05  # between the log and progress messages of one call

# A 1×1 PNG and a silent WAV header: the suite checks types, not pixels.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_EMPTY = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


class Reply(BaseModel):
    response: str = Field(description="User's response")


class Defaults(BaseModel):
    """Every primitive type with a default (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active", description="User status", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    verified: bool = Field(default=True, description="Verification status")


class Enums(BaseModel):
    """The enum shapes of SEP-1330."""

    untitledSingle: str = Field(
        description="Simple enum without titles", json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ]
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


async def _elicit_summary(ctx: Context, message: str, schema: type[BaseModel], label: str) -> str:
    try:
        answer = await ctx.elicit(message=message, schema=schema)
    except Exception as exc:  # boundary: the suite reads the failure from the tool's text
        return f"Elicitation not supported or error: {exc}"
    content = answer.data.model_dump_json() if answer.action == "accept" else "{}"
    return f"{label}: action={answer.action}, content={content}"


def build_conformance_server() -> MCPServer:
    """A fresh server with the suite's tools, resources, prompts and extra handlers."""
    mcp = MCPServer("mcpstation-conformance", version="0.1.0")
    subscriptions: set[str] = set()

    @mcp.tool()
    def test_simple_text() -> str:
        """Returns simple text content."""
        return "This is a simple text response for testing."

    @mcp.tool()
    def test_image_content() -> list[types.ImageContent]:
        """Returns an image."""
        return [types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png")]

    @mcp.tool()
    def test_audio_content() -> list[types.AudioContent]:
        """Returns audio."""
        return [types.AudioContent(type="audio", data=WAV_EMPTY, mime_type="audio/wav")]

    @mcp.tool()
    def test_embedded_resource() -> list[types.EmbeddedResource]:
        """Returns an embedded text resource."""
        contents = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return [types.EmbeddedResource(type="resource", resource=contents)]

    @mcp.tool()
    def test_multiple_content_types() -> list[types.TextContent | types.ImageContent | types.EmbeddedResource]:
        """Returns text, an image and a resource."""
        contents = types.TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test": "data", "value": 123}'
        )
        return [
            _text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
            types.EmbeddedResource(type="resource", resource=contents),
        ]

    @mcp.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Logs three messages while it runs."""
        for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.info(line)
            await anyio.sleep(STEP_PAUSE_S)
        return "Tool with logging executed successfully"

    @mcp.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50, 100 of 100."""
        for step in (0, 50, 100):
            await ctx.report_progress(progress=step, total=100, message=f"Completed step {step} of 100")
            await anyio.sleep(STEP_PAUSE_S)
        meta = ctx.request_context.meta if ctx.request_context is not None else None
        return str((meta or {}).get("progress_token", 0))

    @mcp.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's LLM."""
        try:
            result = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=_text(prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:  # boundary: the suite reads the failure from the tool's text
            return f"Sampling not supported or error: {exc}"
        reply = result.content.text if isinstance(result.content, types.TextContent) else "No response"
        return f"LLM response: {reply}"

    @mcp.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user for a reply."""
        return await _elicit_summary(ctx, message, Reply, "User response")

    @mcp.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks with defaults for every primitive type."""
        return await _elicit_summary(ctx, "Please provide user information", Defaults, "Elicitation result")

    @mcp.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks with every enum shape."""
        message = "Please select values using different enum schema types"
        return await _elicit_summary(ctx, message, Enums, "Elicitation completed")

    @mcp.tool()
    def test_error_handling() -> str:
        """Always fails."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    @mcp.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Closes its SSE stream mid-call; the client resumes it."""
        await ctx.info("Before disconnect")
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)
        await ctx.info("After reconnect")
        return "Reconnection test completed"

    @mcp.tool(name="json_schema_2020_12_tool")
    def json_schema_2020_12_tool() -> str:
        """Its input schema uses JSON Schema 2020-12 keywords, which must survive unchanged."""
        return "json_schema_2020_12_tool"

    # MCPServer derives input schemas from signatures and has no override; the suite wants this one
    # verbatim, so it is set on the registered tool.
    mcp._tool_manager._tools["json_schema_2020_12_tool"].parameters = SCHEMA_2020_12

    @mcp.resource("test://static-text")
    def static_text() -> str:
        """Static text."""
        return "This is the content of the static text resource."

    @mcp.resource("test://static-binary")
    def static_binary() -> bytes:
        """A static PNG."""
        return base64.b64decode(PNG_1X1)

    @mcp.resource("test://template/{id}/data")
    def template_data(id: str) -> str:
        """Data for an id."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @mcp.resource("test://watched-resource")
    def watched() -> str:
        """A resource clients may subscribe to."""
        return "Watched resource content"

    @mcp.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """No arguments."""
        return [UserMessage(role="user", content=_text("This is a simple prompt for testing."))]

    @mcp.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """Two required arguments."""
        return [UserMessage(role="user", content=_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]

    @mcp.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        """Embeds the resource it is given."""
        contents = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(role="user", content=types.EmbeddedResource(type="resource", resource=contents)),
            UserMessage(role="user", content=_text("Please process the embedded resource above.")),
        ]

    @mcp.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """Includes an image."""
        return [
            UserMessage(role="user", content=types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png")),
            UserMessage(role="user", content=_text("Please analyze the image above.")),
        ]

    @mcp.completion()  # type: ignore[untyped-decorator, no-untyped-call]  # the SDK's decorator has no annotations
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion:
        return types.Completion(values=[], total=0, has_more=False)

    async def set_level(ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscriptions.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        subscriptions.discard(str(params.uri))
        return types.EmptyResult()

    # MCPServer has no public registration for these; its low-level server takes them directly.
    lowlevel = mcp._lowlevel_server
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    return mcp


class _AnnouncingServer(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            print(f"listening on http://{host}:{port}/mcp", file=sys.stderr, flush=True)


def serve(transport: str = "stdio", *, port: int = 0) -> None:
    mcp = build_conformance_server()
    if transport == "stdio":
        print("listening on stdio", file=sys.stderr, flush=True)
        mcp.run("stdio")
        return
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp", host=LOOPBACK_HOST, event_store=MemoryEventStore(), retry_interval=SSE_RETRY_MS
    )
    _AnnouncingServer(uvicorn.Config(app, host=LOOPBACK_HOST, port=port, log_level="warning")).run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpstation.testing.conformance_server", description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one (default)")
    args = parser.parse_args(argv)
    serve(args.transport, port=args.port)


if __name__ == "__main__":
    main()
