"""`GET /api/events`: the station's events as Server-Sent Events, for the console and for scripts.

Each event is `event: <kind>` and `data: <StationEvent.to_dict() as JSON>`. The first is a
`snapshot` of every server, so a client needs no separate first fetch; a comment line every
`HEARTBEAT_S` keeps proxies from closing an idle stream. `log` events (servers' stderr and log
lines) go to admins only; an event with an audience (a `confirmation`) to admins and that caller.
Anyone but an admin hears only of the servers their visibility reaches: the snapshot holds those
alone (`Station.status(caller)`), and an event about another server is not sent to them. A stream
that fell behind and lost events says so with a `lost` event (how many so far), so a client can
fetch what it needs again (a waiting question from `GET /api/mcp/confirmations`).
Streams end when the server shuts down (`EventStreams.close`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from mcpstation.api.redaction import Redactor
from mcpstation.config.models import Role
from mcpstation.pipeline import Caller
from mcpstation.station import Station
from mcpstation.wire import LOST_EVENT

logger = logging.getLogger(__name__)

HEARTBEAT_S = 15.0  # idle time before a keep-alive comment is sent
RETRY_MS = 2000  # the reconnect delay suggested to EventSource clients
ADMIN_ONLY_KINDS = frozenset({"log"})


def format_event(kind: str, data: dict[str, Any]) -> str:
    """One SSE message; the JSON is on one line, so one `data:` field carries it."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


class EventStreams:
    """The open event streams of one app; `close()` ends them all (at shutdown)."""

    def __init__(self, station: Station, redactor: Redactor) -> None:
        self.station = station
        self.redactor = redactor
        self.closed = False
        self._waiting: set[anyio.CancelScope] = set()

    def close(self) -> None:
        self.closed = True
        for scope in list(self._waiting):
            scope.cancel()

    def _sees(self, caller: Caller, server: str) -> bool:
        return self.station.requests.visibility.can_see(caller, server)

    async def stream(self, caller: Caller) -> AsyncIterator[str]:
        """The SSE text for one client, until it goes away or the app closes."""
        admin = caller.role is Role.ADMIN
        with self.station.events.subscribe() as events:
            told_lost = 0
            yield f"retry: {RETRY_MS}\n\n"
            snapshot = {"kind": "snapshot", "server": None, "at": 0.0, **self.station.status(caller).to_dict()}
            yield self.redactor.scrub(format_event("snapshot", snapshot))
            while not self.closed:
                # The scope is entered and left between yields, so `close` may cancel it from another task.
                with anyio.move_on_after(HEARTBEAT_S) as scope:
                    self._waiting.add(scope)
                    try:
                        event = await events.receive()
                    finally:
                        self._waiting.discard(scope)
                if events.lost > told_lost:  # said as soon as seen, before the next event
                    told_lost = events.lost
                    notice = {"kind": LOST_EVENT, "server": None, "at": time.time(), "lost": told_lost}
                    yield format_event(LOST_EVENT, notice)
                if scope.cancelled_caught:
                    if not self.closed:
                        yield ": keep-alive\n\n"
                    continue
                if event.kind in ADMIN_ONLY_KINDS and not admin:
                    continue
                if event.audience is not None and not admin and event.audience != caller.key:
                    continue  # another caller's (a question waiting for their answer)
                if not admin and event.server is not None and not self._sees(caller, event.server):
                    continue  # news of a server this caller's visibility hides
                yield self.redactor.scrub(format_event(event.kind, event.to_dict()))
