"""The gateway over stdio: stdin and stdout carry the protocol, nothing else may write to stdout."""

from __future__ import annotations

from mcpstation.config.models import Role
from mcpstation.gateway._stdio_wire import stdio_streams
from mcpstation.gateway.relay import GatewayRelay
from mcpstation.gateway.server import GatewayInstrument, build_gateway_server
from mcpstation.pipeline import Caller, Face
from mcpstation.station import Station

LOCAL_CALLER = Caller("local", Role.ADMIN, Face.GATEWAY)
"""Who a stdio gateway's client is by default: the person who started it, on this machine."""


async def serve_stdio(
    station: Station,
    *,
    relay: GatewayRelay | None = None,
    caller: Caller = LOCAL_CALLER,
    instrument: GatewayInstrument | None = None,
) -> None:
    """Serve `station` on this process's stdin/stdout until stdin closes; every request runs as `caller`."""
    server = build_gateway_server(station, relay=relay, local_caller=caller, instrument=instrument)
    async with stdio_streams() as (read, write):
        await server.run(read, write, server.create_initialization_options())
