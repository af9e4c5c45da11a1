"""What wakes a follower of the change log: a PostgreSQL notification, or simply time passing.

On PostgreSQL one pooled connection `LISTEN`s for the log's channel for as long as the signal is
open; a notification wakes the waiter at once, and a missed one only delays it to the next
timeout (the log is the truth). SQLite has no notifications: the waiter wakes after the timeout,
to read the log again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from mcpstation.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

UNLISTEN_TIMEOUT_S = 2.0  # bound on handing the listening connection back


class ChangeSignal:
    """`wait(timeout_s)` returns when another writer may have appended to the log."""

    def __init__(self, driver: Any | None) -> None:
        self._driver = driver  # the asyncpg connection that listens; None on SQLite
        self._woken = anyio.Event()

    @property
    def listens(self) -> bool:
        """Whether notifications wake it (PostgreSQL), rather than the timeout only."""
        return self._driver is not None

    async def wait(self, timeout_s: float) -> None:
        """Return on a notification or after `timeout_s`, whichever comes first.

        Raises:
            StoreError: the listening connection was lost (open a new signal).
        """
        with anyio.move_on_after(timeout_s):
            await self._woken.wait()
        self._woken = anyio.Event()
        if self._driver is not None and self._driver.is_closed():
            raise StoreError("the connection listening for store changes was lost")

    def wake(self) -> None:
        """End the current (or next) `wait` now: the follower is stopping."""
        self._woken.set()

    def _notified(self, *_: object) -> None:
        # asyncpg calls this in the event loop's thread, between our awaits.
        self._woken.set()


@asynccontextmanager
async def change_signal(engine: AsyncEngine) -> AsyncIterator[ChangeSignal]:
    """A signal for `engine`'s database, listening on PostgreSQL while open.

    Raises:
        SQLAlchemyError, OSError: no connection to listen on (the caller translates them).
    """
    if engine.dialect.name != "postgresql":
        yield ChangeSignal(None)
        return
    import asyncpg  # type: ignore[import-untyped]  # ships no type information

    from mcpstation.store._changes import NOTIFY_CHANNEL

    # What the driver raises on its own connection (SQLAlchemy does not wrap calls made on it directly).
    driver_errors = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError, OSError)
    async with engine.connect() as connection:
        raw = await connection.get_raw_connection()
        driver: Any = raw.driver_connection
        signal = ChangeSignal(driver)
        try:
            await driver.add_listener(NOTIFY_CHANNEL, signal._notified)
        except driver_errors as exc:
            raise StoreError(f"cannot listen for store changes: {type(exc).__name__}: {exc}") from exc
        try:
            yield signal
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(UNLISTEN_TIMEOUT_S):
                if not driver.is_closed():
                    try:
                        await driver.remove_listener(NOTIFY_CHANNEL, signal._notified)
                    except driver_errors:
                        pass  # the connection broke meanwhile: the pool throws it away on return
