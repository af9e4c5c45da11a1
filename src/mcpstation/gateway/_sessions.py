"""The downstream sessions connected to the gateway: who to tell about changes, at what log level.

The SDK's low-level server keeps no list of its connections, so the gateway records every
handshake-era session when its `notifications/initialized` arrives and forgets it when the
connection's exit stack unwinds. 2026-07-28 sessions are not recorded: they hear about changes
through `subscriptions/listen`.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.session import ServerSession

logger = logging.getLogger(__name__)

_SEVERITY: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def connection_of(session: ServerSession) -> Any:
    # The SDK hands handlers a per-request `ServerSession` proxy; the connection behind it (the
    # identity of a downstream client, and its exit stack for clean-up) is only reachable here.
    return getattr(session, "_connection", session)


class DownstreamSessions:
    """Handshake-era downstream sessions (for change notifications) and each one's log level."""

    def __init__(self) -> None:
        self._sessions: dict[int, ServerSession] = {}
        self._levels: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def key_of(self, session: ServerSession) -> object:
        return connection_of(session)

    def add(self, session: ServerSession) -> None:
        """Remember a handshake-era session until its connection closes."""
        connection = connection_of(session)
        key = id(connection)
        if key in self._sessions:
            return
        self._sessions[key] = session
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.callback(self._forget, key)

    def _forget(self, key: int) -> None:
        self._sessions.pop(key, None)
        self._levels.pop(key, None)

    def set_level(self, session: ServerSession, level: str) -> None:
        self._levels[id(connection_of(session))] = level

    def wants_log(self, connection: object, level: str) -> bool:
        """`logging/setLevel` semantics: everything until the client sets a level, then that and above."""
        minimum = self._levels.get(id(connection))
        if minimum is None or minimum not in _SEVERITY or level not in _SEVERITY:
            return True
        return _SEVERITY.index(level) >= _SEVERITY.index(minimum)

    async def broadcast(self, notification: types.ServerNotification) -> int:
        """Send `notification` on every session's standalone stream; returns how many took it."""
        sent = 0
        for key, session in list(self._sessions.items()):
            try:
                await session.send_notification(notification)
                sent += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._forget(key)
        return sent
