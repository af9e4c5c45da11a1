"""Connections to MCP servers: lifecycle, supervision, discovery and transports.

The names below are imported when first used (PEP 562), so a light module of this package
(`_launch`, `early`, `_stderr`) can be imported without the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.connection._tool_budget import DroppedTool, DropReason, ToolBudget
    from mcpstation.connection.connection import ServerConnection
    from mcpstation.connection.discovery import walk_pages
    from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
    from mcpstation.connection.known import KnownListing
    from mcpstation.connection.limits import (
        MESSAGE_TOO_LARGE,
        MESSAGE_UNREADABLE,
        SERVER_REQUEST_REFUSED,
        InboundLimits,
    )
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

_HOMES: dict[str, str] = {
    "DroppedTool": "mcpstation.connection._tool_budget",
    "DropReason": "mcpstation.connection._tool_budget",
    "ToolBudget": "mcpstation.connection._tool_budget",
    "ServerConnection": "mcpstation.connection.connection",
    "walk_pages": "mcpstation.connection.discovery",
    "NO_HOOKS": "mcpstation.connection.hooks",
    "SessionHooks": "mcpstation.connection.hooks",
    "KnownListing": "mcpstation.connection.known",
    "MESSAGE_TOO_LARGE": "mcpstation.connection.limits",
    "MESSAGE_UNREADABLE": "mcpstation.connection.limits",
    "SERVER_REQUEST_REFUSED": "mcpstation.connection.limits",
    "InboundLimits": "mcpstation.connection.limits",
    "ServerListing": "mcpstation.connection.listing",
    "start_mode": "mcpstation.connection.listing",
    "Session": "mcpstation.connection.session",
    "SessionOwner": "mcpstation.connection.session",
    "SessionSupport": "mcpstation.connection.session",
    "ConnectionState": "mcpstation.connection.state",
    "CloseReason": "mcpstation.connection.stats",
    "TransportStats": "mcpstation.connection.stats",
    "TRANSPORT_FACTORIES": "mcpstation.connection.transports",
    "TransportContext": "mcpstation.connection.transports",
    "open_transport": "mcpstation.connection.transports",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
