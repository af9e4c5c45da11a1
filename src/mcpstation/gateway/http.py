"""The gateway over streamable HTTP: an ASGI app serving `/mcp`, both protocol eras."""

from __future__ import annotations

from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpstation.gateway._events import MemoryEventStore
from mcpstation.gateway.relay import GatewayRelay
from mcpstation.gateway.server import GatewayInstrument, build_gateway_server
from mcpstation.pipeline import CALLER_SCOPE_KEY, Caller
from mcpstation.station import Station

GATEWAY_PATH = "/mcp"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOCAL_ORIGINS: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
SSE_RETRY_MS = 100  # the `retry:` hint on SSE streams, so a client that was cut off polls back quickly


def gateway_asgi_app(
    station: Station,
    *,
    json_response: bool = False,
    stateless: bool = False,
    allowed_hosts: Sequence[str] = LOCAL_HOSTS,
    allowed_origins: Sequence[str] = LOCAL_ORIGINS,
    relay: GatewayRelay | None = None,
    caller: Caller | None = None,
    instrument: GatewayInstrument | None = None,
) -> Starlette:
    """A Starlette app serving `station` at `/mcp` (streamable HTTP, with the SDK's session manager).

    Each request runs as the `Caller` in its ASGI scope, which an access guard in front puts there
    (`mcpstation.api.AccessGuard`: bearer tokens); a request without one is refused. `caller`
    instead runs every request as that caller: only for a trusted, local setup.

    DNS-rebinding protection is on: a request whose `Host` is not in `allowed_hosts` (or whose
    `Origin`, when sent, is not in `allowed_origins`) is refused. The app's lifespan runs the
    session manager; run it under uvicorn (or enter its lifespan) while `station` is running.
    """
    server = build_gateway_server(station, relay=relay, instrument=instrument)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=_with_default_ports(allowed_hosts),
        allowed_origins=list(allowed_origins),
    )
    app = server.streamable_http_app(
        streamable_http_path=GATEWAY_PATH,
        json_response=json_response,
        stateless_http=stateless,
        event_store=None if stateless else MemoryEventStore(),
        retry_interval=None if stateless else SSE_RETRY_MS,
        transport_security=security,
    )
    if caller is not None:
        app.add_middleware(_FixedCaller, caller=caller)
    return app


def _with_default_ports(patterns: Sequence[str]) -> list[str]:
    """`name:*` also allows plain `name`: behind a balancer on port 80 or 443 clients send no port
    (the SDK's check, unlike ours, matches `name:*` only when a port is present)."""
    found = list(patterns)
    found += [pattern.removesuffix(":*") for pattern in patterns if pattern.endswith(":*")]
    return list(dict.fromkeys(found))


class _FixedCaller:
    """ASGI middleware running every request as one caller (a trusted local gateway)."""

    def __init__(self, app: ASGIApp, caller: Caller) -> None:
        self.app = app
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, CALLER_SCOPE_KEY: self.caller}
        await self.app(scope, receive, send)
