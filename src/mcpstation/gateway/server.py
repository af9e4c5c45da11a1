"""`build_gateway_server`: the station's whole catalog served as one MCP server.

Lists are the catalog under its public names, with each server's own definitions otherwise
untouched (input schemas byte-for-byte: `$schema`, `$defs`, `additionalProperties` survive).
Calls go through `Station.call_tool` (policy, audit, bounds apply) and come back as the upstream
server's own result. While a call runs, the upstream's progress, log messages and questions
(sampling, elicitation, roots) travel to the downstream client on the same request, and a
downstream cancellation cancels the upstream call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, NoReturn, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types import SERVER_INFO_META_KEY

from mcpstation.calls import Caller
from mcpstation.catalog import ToolResult
from mcpstation.errors import CallError, RemoteError, ServerError, StationError, ToolNotFound
from mcpstation.gateway._sessions import connection_of
from mcpstation.gateway.relay import GatewayRelay
from mcpstation.station import Station

logger = logging.getLogger(__name__)

GATEWAY_NAME = "mcpstation"
GATEWAY_VERSION = "0.1.0"
GATEWAY_CALLER = Caller(identity="gateway")

ChangeKind = str  # "tools" | "prompts" | "resources"
_ResultT = TypeVar("_ResultT", bound=types.Result)


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


class Gateway:
    """The handlers behind the gateway server; one per station."""

    def __init__(self, station: Station, relay: GatewayRelay | None) -> None:
        self.station = station
        self.relay = relay if relay is not None else GatewayRelay()
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.subscribers: dict[str, dict[int, ServerSession]] = {}  # uri -> downstream sessions

    # -- lists ----------------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[entry.definition.model_copy(update={"name": entry.name}) for entry in self.station.tools]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        originals = self._originals("prompts", lambda p: p.name)
        prompts = []
        for entry in self.station.prompts:
            original = originals.get((entry.server, entry.prompt))
            if original is not None:
                prompts.append(original.model_copy(update={"name": entry.name}))
            else:
                prompts.append(
                    types.Prompt(
                        name=entry.name, description=entry.description or None, arguments=list(entry.arguments)
                    )
                )
        return types.ListPromptsResult(prompts=prompts)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        originals = self._originals("resources", lambda r: str(r.uri))
        resources = []
        for entry in self.station.resources:
            original = originals.get((entry.server, entry.uri))
            resources.append(
                original
                if original is not None
                else types.Resource(
                    uri=entry.uri, name=entry.name, description=entry.description or None, mime_type=entry.mime_type
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        originals = self._originals("templates", lambda t: t.uri_template)
        templates = []
        for entry in self.station.templates:
            original = originals.get((entry.server, entry.uri_template))
            templates.append(
                original
                if original is not None
                else types.ResourceTemplate(
                    uri_template=entry.uri_template,
                    name=entry.name,
                    description=entry.description or None,
                    mime_type=entry.mime_type,
                )
            )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    def _originals(self, kind: str, key: Callable[[Any], str]) -> dict[tuple[str, str], Any]:
        """Each server's own entries of `kind`, by (server, original name), for full-fidelity lists."""
        found: dict[tuple[str, str], Any] = {}
        for server, connection in self.station.connections.items():
            for item in getattr(connection.listing, kind):
                found.setdefault((server, key(item)), item)
        return found

    # -- calls ----------------------------------------------------------------------------------

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        entry = self.station.catalog.tools.get(params.name)
        # Always asked for: `report_progress` is a no-op when the downstream did not ask, and the
        # in-process dispatcher carries the downstream's callback without a token to test for.
        progress = ctx.session.report_progress
        with self.relay.serving(entry.server if entry is not None else None, ctx):
            result = await self.station.call_tool(
                params.name, params.arguments or {}, progress=progress, caller=GATEWAY_CALLER
            )
        return _without_upstream_identity(_as_sdk_result(result))

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        entry = self.station.catalog.prompts.get(params.name)
        with _mcp_errors(), self.relay.serving(entry.server if entry is not None else None, ctx):
            return _without_upstream_identity(await self.station.get_prompt(params.name, params.arguments))

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        owner = self.station.catalog.resource_owner(str(params.uri))
        with _mcp_errors(resource=True), self.relay.serving(owner, ctx):
            return _without_upstream_identity(await self.station.read_resource(str(params.uri)))

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        context = params.context.arguments if params.context is not None else None
        with _mcp_errors():
            result = await self.station.complete(
                params.ref, {"name": params.argument.name, "value": params.argument.value}, context
            )
        return _without_upstream_identity(result)

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.relay.sessions.set_level(ctx.session, params.level)
        return types.EmptyResult()

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """A downstream client wants `resources/updated` for a URI: subscribe upstream once."""
        uri = str(params.uri)
        sessions = self.subscribers.setdefault(uri, {})
        if not sessions:
            with _mcp_errors(resource=True):
                await self.station.subscribe_resource(uri)
        sessions[id(connection_of(ctx.session))] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        sessions = self.subscribers.get(uri, {})
        sessions.pop(id(connection_of(ctx.session)), None)
        if not sessions:
            self.subscribers.pop(uri, None)
            with _mcp_errors(resource=True):
                await self.station.unsubscribe_resource(uri)
        return types.EmptyResult()

    async def resource_updated(self, uri: str) -> None:
        notification = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        for key, session in list(self.subscribers.get(uri, {}).items()):
            try:
                await session.send_notification(notification)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.subscribers.get(uri, {}).pop(key, None)
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def initialized(self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams) -> None:
        self.relay.sessions.add(ctx.session)

    # -- change notifications -------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_catalog)
            try:
                yield {}
            finally:
                self.listen.close()
                tg.cancel_scope.cancel()

    async def watch_catalog(self) -> None:
        """Tell downstream clients when the catalog's lists change (from the station's events)."""
        with self.station.events.subscribe() as events:
            async for event in events:
                if event.kind == "resource":
                    await self.resource_updated(event.data["uri"])
                elif event.kind == "catalog":
                    for kind in event.data.get("changed", ()):
                        if kind in _CHANGE:
                            await self.announce(kind)

    async def announce(self, kind: ChangeKind) -> None:
        notification, event = _CHANGE[kind]
        sent = await self.relay.sessions.broadcast(notification)
        await self.bus.publish(event)
        logger.info("catalog %s changed; told %d handshake-era sessions and every listener", kind, sent)


_CHANGE: dict[ChangeKind, tuple[types.ServerNotification, ServerEvent]] = {
    "tools": (types.ToolListChangedNotification(), ToolsListChanged()),
    "prompts": (types.PromptListChangedNotification(), PromptsListChanged()),
    "resources": (types.ResourceListChangedNotification(), ResourcesListChanged()),
}


def build_gateway_server(station: Station, *, relay: GatewayRelay | None = None) -> Server[Any]:
    """A low-level MCP server named "mcpstation" that serves `station`'s catalog.

    `relay` relays upstream sampling, elicitation, roots and log messages to the downstream
    client; by default the one the station was built with (`Station(config, hooks=relay)`), if any.
    Without one, progress and cancellation still pass through.
    """
    if relay is None and isinstance(station.hooks, GatewayRelay):
        relay = station.hooks
    gateway = Gateway(station, relay)

    def input_schema(name: str) -> Mapping[str, Any] | None:
        entry = station.catalog.tools.get(name)
        return entry.input_schema if entry is not None else None

    server = _GatewayServer(
        GATEWAY_NAME,
        version=GATEWAY_VERSION,
        instructions="mcpstation gateway: the tools, prompts and resources of every server in the station.",
        lifespan=gateway.lifespan,
        get_tool_input_schema=input_schema,
        on_list_tools=gateway.list_tools,
        on_call_tool=gateway.call_tool,
        on_list_prompts=gateway.list_prompts,
        on_get_prompt=gateway.get_prompt,
        on_list_resources=gateway.list_resources,
        on_list_resource_templates=gateway.list_templates,
        on_read_resource=gateway.read_resource,
        on_completion=gateway.complete,
        on_subscriptions_listen=gateway.listen,
    )
    # Registered directly: the constructor keywords for these warn that the methods are deprecated
    # in 2026-07-28, but handshake-era clients still send them.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, gateway.set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, gateway.initialized)
    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, gateway.subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, gateway.unsubscribe)
    return server


def _without_upstream_identity(result: _ResultT) -> _ResultT:
    """`result` without the upstream's identity stamp; the gateway's own is stamped on the way out."""
    meta = result.meta
    if not meta or SERVER_INFO_META_KEY not in meta:
        return result
    rest = {key: value for key, value in meta.items() if key != SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


def _as_sdk_result(result: ToolResult) -> types.CallToolResult:
    """The upstream's own result (content cut to the station's bounds), or an error result."""
    if result.raw is None:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.error or result.text)], is_error=True
        )
    raw = result.raw
    if tuple(raw.content) != result.content:
        raw = raw.model_copy(update={"content": list(result.content)})
    return raw


@contextmanager
def _mcp_errors(*, resource: bool = False) -> Iterator[None]:
    """Station errors out of a prompt, resource or completion request become JSON-RPC errors."""
    try:
        yield
    except StationError as exc:
        _raise_mcp(exc, resource=resource)


def _raise_mcp(exc: StationError, *, resource: bool) -> NoReturn:
    cause = exc.__cause__
    if isinstance(exc, RemoteError) and isinstance(cause, MCPError):
        raise MCPError.from_error_data(cause.error) from exc
    if isinstance(exc, ToolNotFound):
        if resource:
            raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": exc.tool}) from exc
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
    if isinstance(exc, CallError | ServerError):
        raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc
    raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc
