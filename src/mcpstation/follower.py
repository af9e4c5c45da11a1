"""`ChangeFollower`: every change another process writes to the store reaches this station, once, in order.

The store's change log numbers every durable change (servers, tokens, pin approvals, a user's
revoked upstream grant) in commit order. The follower remembers the last number it applied and
reads what came after: woken by PostgreSQL's `NOTIFY` (and, since a notification can be missed,
at least every `LISTEN_FALLBACK_S` anyway), or every `POLL_INTERVAL_S` on SQLite. Changes this
station wrote itself (its store's replica id) were applied when they were made and are only
counted. Each change is applied through the part that owns it, from what the store holds now, so
applying one again or late is harmless: the store is the truth.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import anyio

from mcpstation.dynamic import DynamicServers
from mcpstation.errors import StoreError
from mcpstation.live_catalog import LiveCatalog
from mcpstation.pinning import ToolPins
from mcpstation.store import ChangeKind, ChangeRecord

if TYPE_CHECKING:
    from mcpstation.store import ChangeSignal, Store

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.25  # SQLite: how often the log is read
LISTEN_FALLBACK_S = 1.0  # PostgreSQL: how often the log is read when no notification came
RETRY_DELAY_S = 1.0  # after the store failed, before reading again
STOP_TIMEOUT_S = 5.0  # how long `stop` waits for the change being applied (a query is never cut short)

_SERVER_CHANGES = frozenset({
    ChangeKind.SERVER_ADDED, ChangeKind.SERVER_REMOVED, ChangeKind.SERVER_UPDATED, ChangeKind.SERVER_ENABLED,
    ChangeKind.SERVER_DISABLED, ChangeKind.SERVER_APPROVED, ChangeKind.SERVER_SUSPENDED,
})  # fmt: skip


class RevokedGrants(Protocol):
    """Closes each user's own connections to a server when their grant of it was revoked by another
    station (`user_pool.UserConnections` implements it)."""

    async def follow_revoked(self, server: str) -> None: ...


class ChangeFollower:
    """Follows one store's change log for one station; `run` in the station's task group."""

    def __init__(
        self,
        store: Store,
        dynamic: DynamicServers,
        *,
        catalog: LiveCatalog,
        pins: ToolPins | None = None,
        users: RevokedGrants | None = None,
    ) -> None:
        """`users`: each user's own connections, closed when their grant is revoked elsewhere."""
        self.store = store
        self.dynamic = dynamic
        self.catalog = catalog
        self.pins = pins
        self.users = users
        self.applied = 0  # the number of the last change applied (or recognised as this station's own)
        self.head = 0  # the newest change number seen in the log
        self._oldest_pending: datetime | None = None  # when the oldest change seen but not applied was made
        self._signal: ChangeSignal | None = None
        self._stop_requested = anyio.Event()
        self._running = False
        self._finished = anyio.Event()

    @property
    def replica_id(self) -> str:
        return self.store.replica_id

    @property
    def behind(self) -> int:
        """How many numbers of the log were seen but not applied yet."""
        return max(0, self.head - self.applied)

    @property
    def lag_s(self) -> float:
        """How long ago the oldest change seen but not yet applied was made; 0 when caught up."""
        if self._oldest_pending is None:
            return 0.0
        return max(0.0, (datetime.now(UTC) - self._oldest_pending).total_seconds())

    def __repr__(self) -> str:
        return f"<ChangeFollower {self.replica_id} applied={self.applied} head={self.head}>"

    async def mark_start(self) -> None:
        """Follow from the log's current end: what came before, the station reads at its start.

        Raises:
            StoreError: the log could not be read.
        """
        self.applied = self.head = await self.store.last_change_id()

    async def run(self) -> None:
        """Follow until `stop`; the store failing only pauses it."""
        self._running = True
        try:
            while not self._stop_requested.is_set():
                try:
                    async with self.store.change_signal() as signal:
                        self._signal = signal
                        interval = LISTEN_FALLBACK_S if signal.listens else POLL_INTERVAL_S
                        while not self._stop_requested.is_set():
                            await self.catch_up()
                            if not self._stop_requested.is_set():
                                await signal.wait(interval)
                except StoreError as exc:
                    if self._stop_requested.is_set():
                        return
                    logger.warning("following the store's changes paused for %g s: %s", RETRY_DELAY_S, exc)
                    with anyio.move_on_after(RETRY_DELAY_S):
                        await self._stop_requested.wait()
                finally:
                    self._signal = None
        finally:
            self._finished.set()

    async def stop(self) -> None:
        """End `run` at its next pause and wait for it (bounded): a read or a change being applied
        is finished, not cut short, so no database connection is left mid-query."""
        self._stop_requested.set()
        if self._signal is not None:
            self._signal.wake()
        if self._running:
            with anyio.move_on_after(STOP_TIMEOUT_S):
                await self._finished.wait()

    async def catch_up(self) -> None:
        """Apply every change after the last one applied, in order.

        Raises:
            StoreError: the log or a change's subject could not be read; the change is applied at the next try.
        """
        while changes := await self.store.read_changes(self.applied):
            self.head = max(self.head, changes[-1].id)
            for change in changes:
                if self._stop_requested.is_set():
                    return
                self._oldest_pending = change.at
                if change.origin != self.store.replica_id:
                    await self._apply(change)
                self.applied = change.id
            self._oldest_pending = None

    async def _apply(self, change: ChangeRecord) -> None:
        started = time.perf_counter()
        try:
            await self._dispatch(change)
        except StoreError:
            raise
        except Exception:  # boundary: one change that cannot be applied must not stop the rest
            logger.exception("change %d (%s of %r) from %s could not be applied", change.id, change.kind,
                             change.subject, change.origin)  # fmt: skip
            return
        logger.info(
            "followed change %d: %s %r from %s (%.3f s)",
            change.id, change.kind, change.subject, change.origin, time.perf_counter() - started,
        )  # fmt: skip

    async def _dispatch(self, change: ChangeRecord) -> None:
        subject = change.subject
        if subject is None:
            return
        if change.kind in _SERVER_CHANGES:
            await self.dynamic.follow(subject)
        elif change.kind is ChangeKind.SERVER_RELOADED:
            self.dynamic.follow_reload(subject)
        elif change.kind is ChangeKind.PIN_APPROVED and change.tool is not None and self.pins is not None:
            self.pins.reconsider(subject, change.tool)
            await self.catalog.verify_pins()
            self.catalog.mark_dirty()
        elif change.kind is ChangeKind.USER_GRANT_REVOKED and self.users is not None:
            await self.users.follow_revoked(subject)
        # Tokens need nothing here: every request checks its token against the store itself.
