"""What a server may send over our own transports (stdio, WebSocket), and the codes for what breaks it.

The error codes are ones our transports synthesize (from JSON-RPC's implementation-defined band;
the SDK itself uses -32000 and -32001 there), so the station maps them to typed outcomes without
reading message text. Only `SERVER_REQUEST_REFUSED` is ever sent on the wire, to the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcpstation.config.models import DEFAULT_MAX_MESSAGE_BYTES
from mcpstation.connection._tool_budget import ToolBudget

MESSAGE_TOO_LARGE = -32010
"""A response was over `max_message_bytes`; the request failed without the message being read."""
MESSAGE_UNREADABLE = -32011
"""A response could not be parsed (not JSON, nested too deep, result not an object)."""
SERVER_REQUEST_REFUSED = -32012
"""Sent to a server whose requests to us exceed their budget; the request was not handled."""

DEFAULT_NOTIFICATIONS_PER_S = 100.0  # notifications a server may send per second, sustained
DEFAULT_NOTIFICATION_BURST = 200  # and at once
DEFAULT_MAX_QUEUED_NOTIFICATIONS = 1000  # delivered ones waiting for the session, whatever the budget
DEFAULT_SERVER_REQUESTS_PER_S = 10.0  # sampling, elicitation, roots, ping from one server
DEFAULT_SERVER_REQUEST_BURST = 20
DEFAULT_MAX_OPEN_SERVER_REQUESTS = 16  # handed to the session and not yet answered

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MESSAGE_TOO_LARGE",
    "MESSAGE_UNREADABLE",
    "SERVER_REQUEST_REFUSED",
    "InboundLimits",
]


@dataclass(frozen=True, slots=True)
class InboundLimits:
    """Per-server bounds on what a server may send (defaults are sane for every real server)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    tools: ToolBudget = field(default_factory=ToolBudget)
    notifications_per_s: float = DEFAULT_NOTIFICATIONS_PER_S
    notification_burst: int = DEFAULT_NOTIFICATION_BURST
    max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS
    server_requests_per_s: float = DEFAULT_SERVER_REQUESTS_PER_S
    server_request_burst: int = DEFAULT_SERVER_REQUEST_BURST
    max_open_server_requests: int = DEFAULT_MAX_OPEN_SERVER_REQUESTS
