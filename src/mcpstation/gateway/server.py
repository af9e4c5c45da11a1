"""`build_gateway_server`: the station's whole catalog served as one MCP server.

Lists are the catalog under its public names, with each server's own definitions otherwise
untouched (input schemas byte-for-byte: `$schema`, `$defs`, `additionalProperties` survive).
Every request goes through the station's pipeline as its own caller (visibility, audit, the URL
guard and bounds apply) and comes back as the upstream server's own result. While a call runs,
the upstream's progress, log messages and questions (sampling, elicitation, roots) travel to the
downstream client on the same request, and a downstream cancellation cancels the upstream call.

Errors keep their kind and code (SEP-2322): an upstream's JSON-RPC error stays that error (code,
message, data); an upstream's `isError` result stays a result; a tool that the caller does not have
is a JSON-RPC error (-32602), as the spec lists unknown tools among protocol errors. A tool call the
station could not complete (refused, timed out, server down) is an error result the model can read.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NoReturn, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types import SERVER_INFO_META_KEY

from mcpstation.catalog import AnyResult, ToolResult
from mcpstation.gateway._serving import gateway_server
from mcpstation.gateway._sessions import connection_of
from mcpstation.gateway._snapshot import ServedLists
from mcpstation.gateway.confirm import elicitation_ask
from mcpstation.gateway.relay import GatewayRelay
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import AUTHORIZATION_URL, CALLER_SCOPE_KEY, Caller
from mcpstation.station import Station

logger = logging.getLogger(__name__)

ChangeKind = str  # "tools" | "prompts" | "resources"
_ResultT = TypeVar("_ResultT", bound=types.Result)
GatewayInstrument = Callable[[Server[Any], Station], None]
"""Adds middleware to the finished gateway server (telemetry: `integrations.otel.instrument_gateway`)."""


class Gateway:
    """The handlers behind the gateway server; one per station.

    Each request runs as its own caller: over HTTP the one the access guard put in the request's
    scope (its bearer token's), over stdio the configured `local_caller`. Lists hold what that
    caller may see; requests go through the station's pipeline like every other face's.
    """

    def __init__(self, station: Station, relay: GatewayRelay | None, local_caller: Caller | None) -> None:
        self.station = station
        self.relay = relay if relay is not None else GatewayRelay()
        self.local_caller = local_caller
        self.bus = InMemorySubscriptionBus()
        self.streams = ListenHandler(self.bus)
        self.subscribers: dict[str, dict[int, ServerSession]] = {}  # uri -> downstream sessions
        self.listening: Counter[str] = Counter()  # uri -> open listen streams that asked for it

    def caller_of(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        """The request's caller: its HTTP scope's (set by the access guard), else the local one.

        Raises:
            MCPError: an HTTP request that was not authenticated (the app was built without auth).
        """
        scope = getattr(ctx.request, "scope", None)
        if scope is not None:
            caller = scope.get(CALLER_SCOPE_KEY)
            if isinstance(caller, Caller):
                return caller
        elif self.local_caller is not None:
            return self.local_caller
        raise MCPError(
            code=types.INVALID_REQUEST, message="this gateway needs an API token (no caller for the request)"
        )

    # -- lists ----------------------------------------------------------------------------------

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self.tools_result(self.caller_of(ctx))

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return self.prompts_result(self.caller_of(ctx))

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return self.resources_result(self.caller_of(ctx))

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return self.templates_result(self.caller_of(ctx))

    def served_lists(self, caller: Caller) -> ServedLists:
        """The four lists as `caller` is served them now."""
        return ServedLists(
            tools=self.tools_result(caller),
            prompts=self.prompts_result(caller),
            resources=self.resources_result(caller),
            templates=self.templates_result(caller),
        )

    def tools_result(self, caller: Caller) -> types.ListToolsResult:
        tools = self.station.tools_for(caller)
        return types.ListToolsResult(
            tools=[entry.definition.model_copy(update={"name": entry.name}) for entry in tools]
        )

    def prompts_result(self, caller: Caller) -> types.ListPromptsResult:
        originals = self._originals("prompts", lambda p: p.name)
        prompts = []
        for entry in self.station.prompts_for(caller):
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

    def resources_result(self, caller: Caller) -> types.ListResourcesResult:
        originals = self._originals("resources", lambda r: str(r.uri))
        resources = []
        for entry in self.station.resources_for(caller):
            original = originals.get((entry.server, entry.uri))
            resources.append(
                original
                if original is not None
                else types.Resource(
                    uri=entry.uri, name=entry.name, description=entry.description or None, mime_type=entry.mime_type
                )
            )
        return types.ListResourcesResult(resources=resources)

    def templates_result(self, caller: Caller) -> types.ListResourceTemplatesResult:
        originals = self._originals("templates", lambda t: t.uri_template)
        templates = []
        for entry in self.station.templates_for(caller):
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

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A tool's input schema by its public name (the HTTP face checks `Mcp-Param` headers with it)."""
        entry = self.station.catalog.tools.get(name)
        return entry.input_schema if entry is not None else None

    def _originals(self, kind: str, key: Callable[[Any], str]) -> dict[tuple[str, str], Any]:
        """Each server's own entries of `kind`, by (server, original name), for full-fidelity lists."""
        found: dict[tuple[str, str], Any] = {}
        for server, connection in self.station.connections.items():
            for item in getattr(connection.listing, kind):
                found.setdefault((server, key(item)), item)
        return found

    # -- requests --------------------------------------------------------------------------------

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = self.caller_of(ctx)
        owner = self.station.requests.tool_owner(params.name, params.arguments)  # through mcp_call_tool too
        # Always asked for: `report_progress` is a no-op when the downstream did not ask, and the
        # in-process dispatcher carries the downstream's callback without a token to test for.
        progress = ctx.session.report_progress
        ask = elicitation_ask(ctx, self.relay.sessions)  # a confirm-tier call asks the client's person
        with self.relay.serving(owner, ctx):
            result = await self.station.requests.call_tool(
                params.name, params.arguments or {}, caller=caller, progress=progress, ask=ask
            )
        if result.outcome is Outcome.NOT_FOUND and not self._answers_itself(params.name):
            # The tool named is not one this caller has (unknown, or hidden: the same words): a
            # protocol error, as the spec's tools page has it. A meta-tool's target that is not
            # found stays that tool's error result, which the model reads and corrects.
            raise MCPError(code=types.INVALID_PARAMS, message=result.error or f"no tool {params.name!r}.")
        url = _authorization_url(result)
        if url is not None and _takes_url_elicitation(ctx):
            # The caller must authorize the upstream first (user-oauth): a client that can open a
            # URL is asked to, as the spec's URL elicitation (-32042); others read it in the result.
            elicitation = types.ElicitRequestURLParams(
                message=result.error or "authorize the station", url=url, elicitation_id=secrets.token_urlsafe(16)
            )
            raise UrlElicitationRequiredError([elicitation])
        return _without_upstream_identity(_as_sdk_result(result))

    def _answers_itself(self, name: str) -> bool:
        """Whether `name` is a meta-tool the station answers (tool search, code mode)."""
        surface = self.station.requests.surface
        return surface is not None and surface.answers(name)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        caller = self.caller_of(ctx)
        entry = self.station.catalog.prompts.get(params.name)
        with self.relay.serving(entry.server if entry is not None else None, ctx):
            result = await self.station.requests.get_prompt(params.name, params.arguments, caller=caller)
        if result.raw is None:
            _raise_for(result, resource=False)
        return _without_upstream_identity(result.raw)

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        caller = self.caller_of(ctx)
        owner = self.station.catalog.resource_owner(str(params.uri))
        with self.relay.serving(owner, ctx):
            result = await self.station.requests.read_resource(str(params.uri), caller=caller)
        if result.raw is None:
            _raise_for(result, resource=True)
        return _without_upstream_identity(result.raw)

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        context = params.context.arguments if params.context is not None else None
        result = await self.station.requests.complete(
            params.ref,
            {"name": params.argument.name, "value": params.argument.value},
            context,
            caller=self.caller_of(ctx),
        )
        if result.raw is None:
            _raise_for(result, resource=False)
        return _without_upstream_identity(result.raw)

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.relay.sessions.set_level(ctx.session, params.level)
        return types.EmptyResult()

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """A downstream client wants `resources/updated` for a URI: subscribe upstream once, for
        the first caller (every later one must be able to see it too)."""
        uri = str(params.uri)
        refused = await self._subscribe_upstream(uri, self.caller_of(ctx))
        if refused is not None:
            _raise_for(refused, resource=True)
        self.subscribers.setdefault(uri, {})[id(connection_of(ctx.session))] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        caller = self.caller_of(ctx)
        sessions = self.subscribers.get(uri, {})
        sessions.pop(id(connection_of(ctx.session)), None)
        if not sessions:
            self.subscribers.pop(uri, None)
            if not self._wanted(uri):
                result = await self.station.requests.unsubscribe(uri, caller=caller)
                if not result.ok:
                    _raise_for(result, resource=True)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """`subscriptions/listen` (2026-07-28): each resource URI the stream asks for is subscribed
        upstream, through the pipeline as this caller, for as long as a stream or a handshake-era
        session wants it. A URI the pipeline refuses (hidden, no clear owner, not subscribable) is
        left out of what the stream honors, so its updates never reach this caller."""
        asked = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        caller = self.caller_of(ctx)
        held: list[str] = []
        try:
            for uri in asked:
                if await self._subscribe_upstream(uri, caller) is None:
                    held.append(uri)
                    self.listening[uri] += 1
            honored = params.notifications.model_copy(update={"resource_subscriptions": held or None})
            return await self.streams(ctx, params.model_copy(update={"notifications": honored}))
        finally:
            with anyio.CancelScope(shield=True):
                for uri in held:
                    await self._stop_listening(uri, caller)

    async def _stop_listening(self, uri: str, caller: Caller) -> None:
        self.listening[uri] -= 1
        if self.listening[uri] <= 0:
            del self.listening[uri]
        if not self._wanted(uri):
            result = await self.station.requests.unsubscribe(uri, caller=caller)
            if not result.ok:
                logger.warning("unsubscribing %r upstream after its last listener left: %s", uri, result.error)

    async def _subscribe_upstream(self, uri: str, caller: Caller) -> AnyResult | None:
        """Subscribe `uri` upstream for `caller` unless it is held already and theirs to see; the
        refusal when the pipeline refused (hidden, no clear owner, not subscribable), else None."""
        if self._wanted(uri) and self.station.requests.can_see_uri(uri, caller):
            return None
        result = await self.station.requests.subscribe(uri, caller=caller)
        return None if result.ok else result

    def _wanted(self, uri: str) -> bool:
        """Whether a handshake-era session or a listen stream holds a subscription to `uri`."""
        return bool(self.subscribers.get(uri)) or self.listening.get(uri, 0) > 0

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
                self.streams.close()
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


def build_gateway_server(
    station: Station,
    *,
    relay: GatewayRelay | None = None,
    local_caller: Caller | None = None,
    instrument: GatewayInstrument | None = None,
) -> Server[Any]:
    """A low-level MCP server named "mcpstation" that serves `station`'s catalog.

    `relay` relays upstream sampling, elicitation, roots and log messages to the downstream
    client; by default the one the station was built with (`Station(config, hooks=relay)`), if any.
    Without one, progress and cancellation still pass through. `local_caller` is who requests
    without an HTTP scope (stdio) run as; HTTP requests run as the caller their scope carries.
    `instrument` is called with the finished server, to add its own middleware (telemetry:
    `mcpstation.integrations.otel.instrument_gateway`).
    """
    if relay is None and isinstance(station.hooks, GatewayRelay):
        relay = station.hooks
    gateway = Gateway(station, relay, local_caller)
    server = gateway_server(gateway)
    if instrument is not None:
        instrument(server, station)
    return server


def _without_upstream_identity(result: _ResultT) -> _ResultT:
    """`result` without the upstream's identity stamp; the gateway's own is stamped on the way out."""
    meta = result.meta
    if not meta or SERVER_INFO_META_KEY not in meta:
        return result
    rest = {key: value for key, value in meta.items() if key != SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


def _authorization_url(result: ToolResult) -> str | None:
    """Where the caller authorizes the server a refused call needed (user-oauth), if that is why."""
    structured = result.structured if result.outcome is Outcome.REFUSED else None
    url = structured.get(AUTHORIZATION_URL) if structured is not None else None
    return url if isinstance(url, str) else None


def _takes_url_elicitation(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return (
        capabilities is not None and capabilities.elicitation is not None and capabilities.elicitation.url is not None
    )


def _as_sdk_result(result: ToolResult) -> types.CallToolResult:
    """The upstream's own result (content cut to the station's bounds; an `isError` result stays
    one), or an error result for a call the station could not complete.

    Raises:
        MCPError: the upstream answered with a JSON-RPC error: a protocol error stays one on the
            way through, with its code, message and data (SEP-2322), rather than becoming a result.
    """
    if result.upstream_error is not None:
        raise MCPError.from_error_data(result.upstream_error)
    if result.raw is None or result.outcome not in (Outcome.OK, Outcome.TOOL_ERROR):
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.error or result.text)], is_error=True
        )
    raw = result.raw
    if tuple(raw.content) != result.content:
        raw = raw.model_copy(update={"content": list(result.content)})
    return raw


# The JSON-RPC error a downstream client gets for a request that produced no answer.
OUTCOME_CODES: dict[Outcome, int] = {
    Outcome.OK: types.INTERNAL_ERROR,  # never raised: an OK result has an answer
    Outcome.TOOL_ERROR: types.INTERNAL_ERROR,
    Outcome.REFUSED: types.INVALID_PARAMS,
    Outcome.NOT_FOUND: types.INVALID_PARAMS,
    Outcome.UNAVAILABLE: types.INTERNAL_ERROR,
    Outcome.TIMEOUT: types.REQUEST_TIMEOUT,
    Outcome.CONNECTION_LOST: types.INTERNAL_ERROR,
    Outcome.REMOTE_ERROR: types.INTERNAL_ERROR,  # the upstream's own error is relayed when known
    Outcome.TOO_LARGE: types.INTERNAL_ERROR,
    Outcome.INVALID_RESULT: types.INTERNAL_ERROR,
    Outcome.CANCELLED: types.INTERNAL_ERROR,
    Outcome.STORE_DOWN: types.INTERNAL_ERROR,
}


def _raise_for(result: AnyResult, *, resource: bool) -> NoReturn:
    """A failed prompt, resource, subscription or completion as the JSON-RPC error it is."""
    if result.upstream_error is not None:
        raise MCPError.from_error_data(result.upstream_error)
    message = result.error or str(result.outcome)
    if result.outcome is Outcome.NOT_FOUND and resource:
        # The spec's words; `reason` says why (an owner not clear names the candidates).
        raise MCPError(
            code=types.INVALID_PARAMS, message="Resource not found", data={"uri": result.name, "reason": message}
        )
    raise MCPError(code=OUTCOME_CODES[result.outcome], message=message)
