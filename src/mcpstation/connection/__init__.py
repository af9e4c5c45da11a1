"""Connections to MCP servers: lifecycle, supervision, discovery and transports."""

from mcpstation.connection._tool_budget import DroppedTool, DropReason, ToolBudget
from mcpstation.connection.connection import ServerConnection
from mcpstation.connection.discovery import walk_pages
from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
from mcpstation.connection.known import KnownListing
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, MESSAGE_UNREADABLE, SERVER_REQUEST_REFUSED, InboundLimits
from mcpstation.connection.listing import ServerListing, start_mode
from mcpstation.connection.session import Session, SessionOwner, SessionSupport
from mcpstation.connection.state import ConnectionState
from mcpstation.connection.stats import CloseReason, TransportStats
from mcpstation.connection.transports import TRANSPORT_FACTORIES, TransportContext, open_transport

__all__ = [
    "MESSAGE_TOO_LARGE",
    "MESSAGE_UNREADABLE",
    "NO_HOOKS",
    "SERVER_REQUEST_REFUSED",
    "TRANSPORT_FACTORIES",
    "CloseReason",
    "ConnectionState",
    "DropReason",
    "DroppedTool",
    "InboundLimits",
    "KnownListing",
    "ServerConnection",
    "ServerListing",
    "Session",
    "SessionHooks",
    "SessionOwner",
    "SessionSupport",
    "ToolBudget",
    "TransportContext",
    "TransportStats",
    "open_transport",
    "start_mode",
    "walk_pages",
]
