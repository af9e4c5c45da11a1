"""A bounded in-memory event store: SSE streams of the gateway can be resumed with Last-Event-ID."""

from __future__ import annotations

import itertools
from collections import deque

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

MAX_STORED_EVENTS = 10_000  # oldest events are dropped past this; a client that far behind re-requests


class MemoryEventStore(EventStore):
    """Keeps the last `max_events` events of every stream, in order, with increasing integer ids."""

    def __init__(self, max_events: int = MAX_STORED_EVENTS) -> None:
        self._events: deque[tuple[int, StreamId, JSONRPCMessage | None]] = deque(maxlen=max_events)
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = next(self._ids)
        self._events.append((event_id, stream_id, message))
        return str(event_id)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        try:
            after = int(last_event_id)
        except ValueError:
            return None
        stream = next((s for i, s, _ in self._events if i == after), None)
        if stream is None:
            return None
        for event_id, stream_id, message in list(self._events):
            if stream_id == stream and event_id > after and message is not None:
                await send_callback(EventMessage(message, str(event_id)))
        return stream
