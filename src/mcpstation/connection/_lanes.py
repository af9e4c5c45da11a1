"""The session's read stream in three lanes: answers, requests from the server, notifications.

`Inbound` (the classifier) pushes into it; the SDK session reads from it. Each lane keeps arrival
order, and the oldest head is served first, so a request's logs and progress reach the session
before its answer; once more than `ANSWERS_JUMP_AFTER` notifications wait, answers and server
requests go first. Keyed notifications are coalesced in place, or held back (`defer`) until the
notification budget refills.
"""

from __future__ import annotations

import collections
import math
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.shared.message import SessionMessage

from mcpstation.connection._bucket import TokenBucket
from mcpstation.connection.stats import TransportStats

MAX_DEFERRED_KEYS = 1000  # distinct coalescing keys (URIs) held back for one server
YIELD_EVERY = 64  # messages handed over without yielding to the event loop
ANSWERS_JUMP_AFTER = 16  # queued messages past which answers and server requests go first

CoalesceKey = tuple[str | int | None, ...]


class Note:
    """A notification as decoded; its pydantic model is built only if it is delivered."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params

    def to_message(self) -> SessionMessage:
        if self.params is None:
            return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=self.method))
        return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=self.method, params=self.params))


class _Queued:
    """A notification waiting for the session; coalescing replaces its note in place."""

    __slots__ = ("key", "note")

    def __init__(self, key: CoalesceKey | None, note: Note) -> None:
        self.key = key
        self.note = note


class InboundStream:
    """The session's read stream: responses first, then server requests, then notifications.

    Implements the SDK's `ReadStream[SessionMessage | Exception]` (it never yields an Exception).
    At end of input it drains what is queued, then raises `anyio.EndOfStream`.
    """

    def __init__(self, notification_budget: TokenBucket, stats: TransportStats) -> None:
        self._stats = stats
        # Each lane holds (arrival number, message) in arrival order.
        self._answers: collections.deque[tuple[int, SessionMessage | _Queued]] = collections.deque()
        self._requests: collections.deque[tuple[int, SessionMessage]] = collections.deque()
        self._notifications: collections.deque[tuple[int, _Queued]] = collections.deque()
        self._arrivals = 0
        self._queued_by_key: dict[CoalesceKey, _Queued] = {}
        self._deferred: dict[CoalesceKey, Note] = {}
        self._budget = notification_budget
        self._ready = anyio.Event()
        self._handed_over = 0
        self.eof = False
        self.closed = False

    # -- the producer side (Inbound) ---------------------------------------------------------------

    def _wake(self) -> None:
        if not self._ready.is_set():
            self._ready.set()

    def _arrival(self) -> int:
        self._arrivals += 1
        return self._arrivals

    def push_answer(self, message: SessionMessage) -> None:
        self._answers.append((self._arrival(), message))
        self._wake()

    def push_with_answers(self, key: CoalesceKey, note: Note) -> bool:
        """Queue a note about a request in flight beside the answers; False when it replaced a queued one."""
        queued = self._queued_by_key.get(key)
        if queued is not None:
            queued.note = note
            return False
        entry = _Queued(key, note)
        self._queued_by_key[key] = entry
        self._answers.append((self._arrival(), entry))
        self._wake()
        return True

    def push_beside_answers(self, key: CoalesceKey, note: Note) -> None:
        """Queue a note about a request in flight beside the answers; a later one over budget may replace it."""
        entry = _Queued(key, note)
        self._queued_by_key[key] = entry
        self._answers.append((self._arrival(), entry))
        self._wake()

    def push_request(self, message: SessionMessage) -> None:
        self._requests.append((self._arrival(), message))
        self._wake()

    def queued_notifications(self) -> int:
        return len(self._notifications)

    def coalesce(self, key: CoalesceKey, note: Note) -> bool:
        """Replace a queued or held-back notification with the same key; False when there is none."""
        queued = self._queued_by_key.get(key)
        if queued is not None:
            queued.note = note
            return True
        if key in self._deferred:
            self._deferred[key] = note
            return True
        return False

    def push_notification(self, key: CoalesceKey | None, note: Note) -> None:
        entry = _Queued(key, note)
        if key is not None:
            self._queued_by_key[key] = entry
        self._notifications.append((self._arrival(), entry))
        self._wake()

    def defer(self, key: CoalesceKey, note: Note) -> bool:
        """Hold a keyed notification back until the budget refills; False when too many keys are held."""
        if len(self._deferred) >= MAX_DEFERRED_KEYS:
            return False
        self._deferred[key] = note
        self._wake()
        return True

    def forget(self, key: CoalesceKey) -> None:
        """Drop a held-back message (its request was answered or cancelled)."""
        self._deferred.pop(key, None)

    def end(self) -> None:
        """No more input: the session gets what is queued, then end of stream."""
        self.eof = True
        self._deferred.clear()
        self._wake()

    # -- the consumer side (the SDK session) --------------------------------------------------------

    def _next_lane(self) -> collections.deque[Any] | None:
        """The lane to serve next: the oldest head, unless notifications are backed up."""
        answers, requests, notifications = self._answers, self._requests, self._notifications
        if len(notifications) > ANSWERS_JUMP_AFTER:
            return answers or requests or notifications
        oldest: collections.deque[Any] | None = None
        for lane in (answers, requests, notifications):
            if lane and (oldest is None or lane[0][0] < oldest[0][0]):
                oldest = lane
        return oldest

    def _pop(self) -> SessionMessage | None:
        lane = self._next_lane()
        if lane is None:
            return None
        _, item = lane.popleft()
        if isinstance(item, _Queued):
            if item.key is not None and self._queued_by_key.get(item.key) is item:
                del self._queued_by_key[item.key]
            self._stats.notifications_delivered += 1
            return item.note.to_message()
        message: SessionMessage = item
        return message

    def receive_nowait(self) -> SessionMessage | Exception:
        """The next message if one may be delivered now.

        Raises:
            anyio.WouldBlock: nothing to deliver yet. anyio.EndOfStream: input ended and all was delivered.
            anyio.ClosedResourceError: the session closed this stream.
        """
        if self.closed:
            raise anyio.ClosedResourceError
        item = self._pop()
        if item is not None:
            return item
        if self._deferred and self._budget.take():
            self._stats.notifications_delivered += 1
            return self._deferred.pop(next(iter(self._deferred))).to_message()
        if self.eof:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> SessionMessage | Exception:
        self._handed_over += 1
        if self._handed_over % YIELD_EVERY == 0:
            await anyio.lowlevel.checkpoint()  # a burst never holds the event loop for long
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                pass
            if self._ready.is_set():
                self._ready = anyio.Event()
                continue
            wait_s = self._budget.seconds_until_token() if self._deferred else math.inf
            with anyio.move_on_after(wait_s):
                await self._ready.wait()

    def __aiter__(self) -> InboundStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> InboundStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """The session is done reading: drop everything queued and everything to come."""
        self.closed = True
        self._answers.clear()
        self._requests.clear()
        self._notifications.clear()
        self._queued_by_key.clear()
        self._deferred.clear()
        self._wake()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()
