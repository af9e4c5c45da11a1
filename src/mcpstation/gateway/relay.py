"""`GatewayRelay`: upstream servers' questions, answered by the downstream client mid-call.

An upstream server may ask its client something while a tool call runs: sampling, elicitation,
roots, or it may log. The SDK runs those callbacks in a task of the upstream *session*, not in
the task that made the call, so a context variable set around `station.call_tool` is not seen
there. The relay therefore keeps a registry: for each upstream server, the downstream requests
the gateway is serving right now (`serving(...)`). A callback for server `s` goes to the
downstream request in flight for `s`:

| in flight for `s` | sampling / elicitation / roots | log message |
|---|---|---|
| none | the fallback hooks (the station's `Host`), else an error | logged locally only |
| one downstream session | that session, on the request's own stream | relayed on the request's stream |
| several sessions | fallback, else an error: never guess whose user to ask | logged locally only |

A downstream client that did not declare the capability, or cannot take a server-initiated
request (the 2026-07-28 era has no back-channel), also falls back. Registering a callback is what
declares a capability to an upstream server, so the relay declares the ones in `relay` for every
server (a server may only ask if it was told it can).

```python
relay = GatewayRelay(fallback=host)
async with Station(config, hooks=relay) as station:
    server = build_gateway_server(station)     # finds the relay on station.hooks
```
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.config.models import AnyServerSpec
from mcpstation.connection import NO_HOOKS, SessionHooks
from mcpstation.connection.log_levels import PYTHON_LEVELS
from mcpstation.gateway._sessions import DownstreamSessions

logger = logging.getLogger(__name__)

Capability = Literal["sampling", "elicitation", "roots"]
SamplingAnswer = types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData
ALL_CAPABILITIES: frozenset[Capability] = frozenset({"sampling", "elicitation", "roots"})
DEFAULT_UPSTREAM_LOG_LEVEL: types.LoggingLevel = "debug"  # modern upstreams log only when asked; relay all


@dataclass(eq=False)
class DownstreamRequest:
    """One downstream request the gateway is serving, and how to talk back on it."""

    session: ServerSession
    request_id: types.RequestId
    protocol_version: str
    meta: types.RequestParamsMeta | None
    connection_key: object
    sessions: DownstreamSessions = field(repr=False)

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any, Any], sessions: DownstreamSessions) -> DownstreamRequest:
        assert ctx.request_id is not None
        return cls(
            session=ctx.session,
            request_id=ctx.request_id,
            protocol_version=ctx.protocol_version,
            meta=ctx.meta,
            connection_key=sessions.key_of(ctx.session),
            sessions=sessions,
        )

    def declared(self, capability: Capability) -> bool:
        wanted = {
            "sampling": types.ClientCapabilities(sampling=types.SamplingCapability()),
            "elicitation": types.ClientCapabilities(elicitation=types.ElicitationCapability()),
            "roots": types.ClientCapabilities(roots=types.RootsCapability()),
        }[capability]
        return self.session.can_send_request and self.session.check_client_capability(wanted)

    def wants_log(self, level: types.LoggingLevel) -> bool:
        if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return level in allowed_log_levels(self.protocol_version, self.meta)
        return self.sessions.wants_log(self.connection_key, level)

    async def ask(self, request: Any, result_type: type[Any]) -> Any:
        """Send a server-initiated request on this request's own stream; JSON-RPC errors stay errors."""
        try:
            return await self.session.send_request(
                request, result_type, metadata=ServerMessageMetadata(related_request_id=self.request_id)
            )
        except MCPError as exc:
            return exc.error

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.wants_log(params.level):
            await self.session.send_notification(
                types.LoggingMessageNotification(params=params), related_request_id=self.request_id
            )


class GatewayRelay:
    """`SessionHooks` that relay each upstream server's requests to the downstream client.

    `fallback` answers what no downstream request can (no call in flight, a client without the
    capability, an ambiguous owner) and provides HTTP auth; `relay` names the capabilities
    declared to upstream servers and relayed. `sessions` are the downstream sessions recorded so
    far (a stdio gateway records them before its station, and this relay, exist).
    """

    def __init__(
        self,
        fallback: SessionHooks = NO_HOOKS,
        *,
        relay: Iterable[Capability] = ALL_CAPABILITIES,
        upstream_log_level: types.LoggingLevel | None = None,
        sessions: DownstreamSessions | None = None,
    ) -> None:
        self.fallback = fallback
        self.relay = frozenset(relay)
        self.upstream_log_level = upstream_log_level
        self.sessions = sessions if sessions is not None else DownstreamSessions()
        self._serving: dict[str, list[DownstreamRequest]] = {}

    # -- what the gateway tells us --------------------------------------------------------------

    @contextmanager
    def serving(self, server: str | None, ctx: ServerRequestContext[Any, Any]) -> Iterator[None]:
        """Mark `ctx` as the downstream request served by a call to upstream `server`."""
        if server is None or ctx.request_id is None:
            yield
            return
        request = DownstreamRequest.of(ctx, self.sessions)
        self._serving.setdefault(server, []).append(request)
        try:
            yield
        finally:
            in_flight = self._serving.get(server, [])
            if request in in_flight:
                in_flight.remove(request)
            if not in_flight:
                self._serving.pop(server, None)

    def target(self, server: str) -> DownstreamRequest | None:
        """The downstream request a question from `server` belongs to, or None when there is none
        or it is ambiguous (requests of several downstream sessions in flight)."""
        in_flight = self._serving.get(server)
        if not in_flight:
            return None
        if len({r.connection_key for r in in_flight}) > 1:
            logger.warning(
                "server %r asked its client something while calls from %d downstream sessions are in flight; "
                "not relaying it (cannot tell whose call it belongs to)",
                server,
                len({r.connection_key for r in in_flight}),
            )
            return None
        return in_flight[-1]

    # -- SessionHooks ---------------------------------------------------------------------------

    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        kwargs = dict(self.fallback.client_kwargs(spec))
        name = spec.name
        local_log = kwargs.get("logging_callback") or _local_logger(name)
        kwargs["logging_callback"] = self._log_callback(name, local_log)
        kwargs.setdefault("log_level", self.upstream_log_level or DEFAULT_UPSTREAM_LOG_LEVEL)
        if "sampling" in self.relay:
            kwargs["sampling_callback"] = self._sampling_callback(name, kwargs.get("sampling_callback"))
        if "elicitation" in self.relay:
            kwargs["elicitation_callback"] = self._elicitation_callback(name, kwargs.get("elicitation_callback"))
        if "roots" in self.relay:
            kwargs["list_roots_callback"] = self._roots_callback(name, kwargs.get("list_roots_callback"))
        return kwargs

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        return self.fallback.http_auth(spec)

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        await self.fallback.session_started(spec, client)

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        self.fallback.session_ended(spec, client)

    # -- the callbacks ----------------------------------------------------------------------------

    def _downstream_for(self, server: str, capability: Capability) -> DownstreamRequest | None:
        target = self.target(server)
        if target is not None and not target.declared(capability):
            logger.info(
                "server %r asked for %s; the downstream client cannot answer it (not declared, or no back-channel)",
                server,
                capability,
            )
            return None
        return target

    def _sampling_callback(self, server: str, fallback: Callable[..., Awaitable[Any]] | None) -> Any:
        async def sampling(
            ctx: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            target = self._downstream_for(server, "sampling")
            if target is not None:
                result_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
                try:
                    answer: SamplingAnswer = await target.ask(types.CreateMessageRequest(params=params), result_type)
                    return answer
                except NoBackChannelError:
                    pass
            if fallback is not None:
                sampled: SamplingAnswer = await fallback(ctx, params)
                return sampled
            return _refusal(server, "sampling")

        return sampling

    def _elicitation_callback(self, server: str, fallback: Callable[..., Awaitable[Any]] | None) -> Any:
        async def elicitation(
            ctx: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            target = self._downstream_for(server, "elicitation")
            if target is not None:
                try:
                    elicited: types.ElicitResult | types.ErrorData = await target.ask(
                        types.ElicitRequest(params=params), types.ElicitResult
                    )
                    return elicited
                except NoBackChannelError:
                    pass
            if fallback is not None:
                answered: types.ElicitResult | types.ErrorData = await fallback(ctx, params)
                return answered
            return _refusal(server, "elicitation")

        return elicitation

    def _roots_callback(self, server: str, fallback: Callable[..., Awaitable[Any]] | None) -> Any:
        async def list_roots(ctx: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
            target = self._downstream_for(server, "roots")
            if target is not None:
                try:
                    roots: types.ListRootsResult | types.ErrorData = await target.ask(
                        types.ListRootsRequest(), types.ListRootsResult
                    )
                    return roots
                except NoBackChannelError:
                    pass
            if fallback is not None:
                listed: types.ListRootsResult | types.ErrorData = await fallback(ctx)
                return listed
            return _refusal(server, "roots")

        return list_roots

    def _log_callback(self, server: str, local: Callable[..., Awaitable[None]]) -> Any:
        async def log(params: types.LoggingMessageNotificationParams) -> None:
            await local(params)
            target = self.target(server)
            if target is not None:
                await target.log(params)

        return log


def _local_logger(server: str) -> Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]:
    server_logger = logging.getLogger(f"mcpstation.server.{server}")

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        server_logger.log(PYTHON_LEVELS.get(params.level, logging.INFO), "%s", params.data)

    return log


def _refusal(server: str, capability: Capability) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST,
        message=(
            f"server {server!r} asked for {capability}, but no downstream client in this call can answer it "
            f"and the station has no {capability} handler"
        ),
    )
