"""What one of our transports skipped, dropped, refused or cut, and why it ended: read for `status`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mcpstation.connection._tool_budget import DroppedTool

MAX_REPORTED_DROPPED_TOOLS = 100  # dropped tools kept for `status` until taken

__all__ = ["CloseReason", "TransportStats"]


class CloseReason(enum.StrEnum):
    """Why a transport ended the session's read stream."""

    EOF = "eof"  # the server closed its output
    PROCESS_EXITED = "process_exited"  # the process exited while something else held its stdout open
    ENDLESS_LINE = "endless_line"  # a line went on past every bound; nothing after it can be framed
    MESSAGE_TOO_LARGE = "message_too_large"  # a frame over the cap ended the connection (WebSocket)
    BROKEN = "broken"  # reading failed (an OS error)


@dataclass
class TransportStats:
    """What one of our transports skipped, dropped, refused or cut; read by the connection for `status`.

    Counters only grow. `dropped_tools` holds the tools left out of listings since the last
    `take_dropped_tools()` (at most `MAX_REPORTED_DROPPED_TOOLS`; `tools_dropped` counts all).
    """

    pid: int | None = None
    exit_code: int | None = None
    closed: CloseReason | None = None
    closed_detail: str | None = None
    unreadable: int = 0  # not JSON, or JSON but not JSON-RPC (banners, invalid UTF-8, wrong shape)
    blank_lines: int = 0
    unexpected_responses: int = 0  # not in flight when it arrived: duplicate, pre-emptive, unknown, wrong id type
    late_responses: int = 0  # answers to requests we had already cancelled
    oversized: int = 0  # messages over max_message_bytes, discarded unread
    notifications_delivered: int = 0  # handed to the session
    notifications_coalesced: int = 0
    notifications_dropped: int = 0
    server_requests_refused: int = 0
    refusals_unsent: int = 0  # refusals dropped because the server was not reading them
    tools_dropped: int = 0
    dropped_tools: list[DroppedTool] = field(default_factory=list)

    def take_dropped_tools(self) -> list[DroppedTool]:
        """The tools dropped since the last call (one listing walk's worth, if called after each)."""
        taken, self.dropped_tools = self.dropped_tools, []
        return taken

    def warnings(self, server: str) -> list[str]:
        """One line per kind of trouble seen so far, for `status`."""
        counts = (
            (self.unreadable, "unreadable lines skipped"),
            (self.unexpected_responses, "unexpected responses dropped (not in flight)"),
            (self.late_responses, "late responses dropped (request already cancelled)"),
            (self.oversized, "messages over the size cap discarded"),
            (self.notifications_dropped, "notifications dropped over budget"),
            (self.notifications_coalesced, "notifications coalesced over budget"),
            (self.server_requests_refused, "requests from the server refused over budget"),
            (self.tools_dropped, "tool definitions dropped"),
        )
        lines = [f"server {server!r}: {n:,} {what}" for n, what in counts if n]
        if self.closed is not None and self.closed is not CloseReason.EOF:
            lines.append(f"server {server!r}: connection ended ({self.closed}): {self.closed_detail}")
        return lines
