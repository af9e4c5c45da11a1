"""The gateway's MCP server: the SDK's low-level `Server` with one handler per request kind.

What answers the requests is a `GatewayHandlers`: the station's (`server.Gateway`) or, while a
stdio gateway's station starts, `_starting.StartingGateway`. This module imports neither the
station nor the store, so a gateway can answer its client before it has loaded them.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions

GATEWAY_NAME = "mcpstation"
GATEWAY_VERSION = "0.1.0"
INSTRUCTIONS = "mcpstation gateway: the tools, prompts and resources of every server in the station."

Ctx = ServerRequestContext[Any, Any]


class GatewayHandlers(Protocol):
    """What the gateway server hands each request kind to."""

    def lifespan(self, server: Server[Any]) -> AbstractAsyncContextManager[dict[str, Any]]: ...
    def input_schema(self, name: str) -> Mapping[str, Any] | None: ...
    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult: ...
    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult: ...
    async def list_resources(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult: ...
    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult: ...
    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult: ...
    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult: ...
    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult: ...
    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult: ...
    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult: ...
    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult: ...
    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult: ...
    async def listen(
        self, ctx: Ctx, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult: ...
    async def initialized(self, ctx: Ctx, params: types.NotificationParams) -> None: ...


class _GatewayServer(Server[Any]):
    """A low-level server whose handshake advertises `listChanged` for all three lists."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def gateway_server(handlers: GatewayHandlers) -> Server[Any]:
    """A low-level MCP server named "mcpstation" whose requests `handlers` answer."""
    server = _GatewayServer(
        GATEWAY_NAME,
        version=GATEWAY_VERSION,
        instructions=INSTRUCTIONS,
        lifespan=handlers.lifespan,
        get_tool_input_schema=handlers.input_schema,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_prompts=handlers.list_prompts,
        on_get_prompt=handlers.get_prompt,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
        on_completion=handlers.complete,
        on_subscriptions_listen=handlers.listen,
    )
    # Registered directly: the constructor keywords for these warn that the methods are deprecated
    # in 2026-07-28, but handshake-era clients still send them.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, handlers.set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, handlers.initialized)
    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, handlers.subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, handlers.unsubscribe)
    return server
