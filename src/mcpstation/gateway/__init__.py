"""The gateway: the station's whole catalog served as one MCP server (streamable HTTP or stdio)."""

from mcpstation.gateway._events import MemoryEventStore
from mcpstation.gateway.http import DEFAULT_HOST, DEFAULT_PORT, GATEWAY_PATH, gateway_asgi_app
from mcpstation.gateway.relay import ALL_CAPABILITIES, DownstreamRequest, GatewayRelay
from mcpstation.gateway.server import GATEWAY_NAME, GatewayInstrument, build_gateway_server
from mcpstation.gateway.stdio import serve_stdio

__all__ = [
    "ALL_CAPABILITIES",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "GATEWAY_NAME",
    "GATEWAY_PATH",
    "DownstreamRequest",
    "GatewayInstrument",
    "GatewayRelay",
    "MemoryEventStore",
    "build_gateway_server",
    "gateway_asgi_app",
    "serve_stdio",
]
