"""What the host adds to each session: callbacks that answer the server, and HTTP auth.

The connection layer only knows this protocol; `mcpstation.host.Host` implements it (roots,
sampling, elicitation, logging, OAuth). `NO_HOOKS` declares no client capability at all.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx2
from mcp.client import Client

from mcpstation.config.models import AnyServerSpec


class SessionHooks(Protocol):
    """Per-server extras for the SDK `Client` and its HTTP transport."""

    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        """Extra `Client(...)` keyword arguments: `sampling_callback`, `elicitation_callback`,
        `list_roots_callback`, `logging_callback`, `log_level`, ... Registering a callback is what
        declares the capability to the server."""
        ...

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        """An `httpx2.Auth` (an OAuth provider) for streamable HTTP and SSE servers, or None."""
        ...

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        """A session is READY (attach it for roots notifications, set its log level)."""
        ...

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        """That session is over; forget it."""
        ...


class _NoHooks:
    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        return {}

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        return None

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        return None

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        return None


NO_HOOKS: SessionHooks = _NoHooks()
