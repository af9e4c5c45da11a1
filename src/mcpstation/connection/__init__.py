"""Connections to MCP servers: lifecycle, supervision, discovery and transports."""

from mcpstation.connection.connection import ServerConnection
from mcpstation.connection.discovery import walk_pages
from mcpstation.connection.state import ConnectionState
from mcpstation.connection.transports import TRANSPORT_FACTORIES, TransportContext, open_transport

__all__ = [
    "TRANSPORT_FACTORIES",
    "ConnectionState",
    "ServerConnection",
    "TransportContext",
    "open_transport",
    "walk_pages",
]
