"""`ConnectionSnapshot`: one connection as readers see it, frozen at one moment."""

from __future__ import annotations

from dataclasses import dataclass

from mcpstation.connection.listing import ServerListing
from mcpstation.connection.state import ConnectionState


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a session learnt about its server when it became ready."""

    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    instructions: str | None = None
    pid: int | None = None
    startup_s: float | None = None
    transport: str | None = None  # what the session speaks: the configured transport, or the one it fell back to
    offers_resources: bool = False  # its capabilities name resources
    can_subscribe: bool = False  # ... and `resources/subscribe` (a handshake-era session only)
    offers_prompts: bool = False  # its capabilities name prompts
    offers_completions: bool = False  # ... and completions


NO_SESSION = SessionInfo()


@dataclass(frozen=True, slots=True)
class ConnectionSnapshot:
    """A connection's state, last error, session facts, listing and counters; never a secret."""

    name: str
    transport: str
    state: ConnectionState
    error: str | None
    session: SessionInfo
    listing: ServerListing
    warnings: tuple[str, ...]
    restarts: int
    stderr_tail: tuple[str, ...]

    @property
    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY
