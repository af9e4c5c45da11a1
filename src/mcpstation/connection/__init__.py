"""Connections to MCP servers: lifecycle, supervision, discovery and transports."""

from mcpstation.connection.connection import ServerConnection
from mcpstation.connection.discovery import walk_pages
from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
from mcpstation.connection.listing import ServerListing
from mcpstation.connection.state import ConnectionState
from mcpstation.connection.transports import TRANSPORT_FACTORIES, TransportContext, open_transport

__all__ = [
    "NO_HOOKS",
    "TRANSPORT_FACTORIES",
    "ConnectionState",
    "ServerConnection",
    "ServerListing",
    "SessionHooks",
    "TransportContext",
    "open_transport",
    "walk_pages",
]
