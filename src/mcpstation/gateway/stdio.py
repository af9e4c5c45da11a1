"""The gateway over stdio: stdin and stdout carry the protocol, nothing else may write to stdout."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from mcpstation.gateway.relay import GatewayRelay
from mcpstation.gateway.server import build_gateway_server
from mcpstation.station import Station


async def serve_stdio(station: Station, *, relay: GatewayRelay | None = None) -> None:
    """Serve `station` on this process's stdin/stdout until stdin closes."""
    server = build_gateway_server(station, relay=relay)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
