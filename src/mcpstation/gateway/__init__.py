"""The gateway: the station's whole catalog served as one MCP server (streamable HTTP or stdio).

The names below are imported when first used (PEP 562), so `gateway --stdio` never loads the
HTTP side (the event store, the ASGI app) that it does not serve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.gateway._events import MemoryEventStore
    from mcpstation.gateway._serving import GATEWAY_NAME
    from mcpstation.gateway.http import DEFAULT_HOST, DEFAULT_PORT, GATEWAY_PATH, gateway_asgi_app
    from mcpstation.gateway.relay import ALL_CAPABILITIES, DownstreamRequest, GatewayRelay
    from mcpstation.gateway.server import GatewayInstrument, build_gateway_server
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

_HOMES: dict[str, str] = {
    "MemoryEventStore": "mcpstation.gateway._events",
    "DEFAULT_HOST": "mcpstation.gateway.http",
    "DEFAULT_PORT": "mcpstation.gateway.http",
    "GATEWAY_PATH": "mcpstation.gateway.http",
    "gateway_asgi_app": "mcpstation.gateway.http",
    "ALL_CAPABILITIES": "mcpstation.gateway.relay",
    "DownstreamRequest": "mcpstation.gateway.relay",
    "GatewayRelay": "mcpstation.gateway.relay",
    "GATEWAY_NAME": "mcpstation.gateway._serving",
    "GatewayInstrument": "mcpstation.gateway.server",
    "build_gateway_server": "mcpstation.gateway.server",
    "serve_stdio": "mcpstation.gateway.stdio",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
