"""What happens in the station, as events: for the HTTP event stream, the console and the gateway.

Publishing never blocks the station: each subscriber has a bounded buffer, and a subscriber that
falls behind loses events (and is told how many) rather than slowing anyone down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

EventKind = Literal["state", "catalog", "server", "log", "resource", "confirmation"]
SUBSCRIBER_BUFFER = 256  # events a slow subscriber may fall behind by before it loses some


@dataclass(frozen=True, slots=True)
class StationEvent:
    """One thing that happened: a server's state, the catalog, a managed server, a log line, a
    question waiting for a person's answer (`confirmations.py`)."""

    kind: EventKind
    server: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)
    # Whom besides admins a face may show it to, by `Caller.key`; None: everyone who may watch.
    audience: tuple[str, str] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "server": self.server, "at": self.at, **self.data}


Listener = Callable[[StationEvent], None]


class EventHub:
    """Fan-out of station events to async subscribers and plain callbacks."""

    def __init__(self) -> None:
        self._streams: set[MemoryObjectSendStream[StationEvent]] = set()
        self._listeners: list[Listener] = []
        self.dropped = 0

    @property
    def has_subscribers(self) -> bool:
        return bool(self._streams or self._listeners)

    def publish(self, event: StationEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # boundary: one listener's bug must not stop the others
                logging.getLogger(__name__).exception("event listener failed on %s", event.kind)
        for stream in list(self._streams):
            try:
                stream.send_nowait(event)
            except anyio.WouldBlock:
                self.dropped += 1
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._streams.discard(stream)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event (synchronously; keep it quick). Returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @contextmanager
    def subscribe(self, buffer: int = SUBSCRIBER_BUFFER) -> Iterator[MemoryObjectReceiveStream[StationEvent]]:
        """A stream of the events published while the block is open."""
        send, receive = anyio.create_memory_object_stream[StationEvent](buffer)
        self._streams.add(send)
        try:
            yield receive
        finally:
            self._streams.discard(send)
            send.close()
            receive.close()
