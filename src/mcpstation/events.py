"""What happens in the station, as events: for the HTTP event stream, the console and the gateway.

Publishing never blocks the station: each subscriber has a bounded buffer, and a subscriber that
falls behind loses events (its `Subscription.lost` counts them) rather than slowing anyone down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
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


class Subscription:
    """The events published while it is open, in order, but for those its full buffer lost (`lost`)."""

    def __init__(self, receive: MemoryObjectReceiveStream[StationEvent]) -> None:
        self._receive = receive
        self.lost = 0  # events published while the buffer was full, so never received here

    async def receive(self) -> StationEvent:
        return await self._receive.receive()

    async def __aiter__(self) -> AsyncIterator[StationEvent]:
        async for event in self._receive:
            yield event


class EventHub:
    """Fan-out of station events to async subscribers and plain callbacks."""

    def __init__(self) -> None:
        self._streams: dict[MemoryObjectSendStream[StationEvent], Subscription] = {}
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
        for stream, subscription in list(self._streams.items()):
            try:
                stream.send_nowait(event)
            except anyio.WouldBlock:
                subscription.lost += 1
                self.dropped += 1
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._streams.pop(stream, None)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event (synchronously; keep it quick). Returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @contextmanager
    def subscribe(self, buffer: int = SUBSCRIBER_BUFFER) -> Iterator[Subscription]:
        """The events published while the block is open, up to `buffer` not yet received."""
        send, receive = anyio.create_memory_object_stream[StationEvent](buffer)
        subscription = Subscription(receive)
        self._streams[send] = subscription
        try:
            yield subscription
        finally:
            self._streams.pop(send, None)
            send.close()
            receive.close()
