"""The store's one seam to its database: a transaction per call, counted, and a close that leaves nothing open.

Every query runs in `Transactions.begin(...)`: one session in one transaction, committed on exit and
rolled back on any exception; database exceptions become `StoreError` here and only here (those
that mean the database cannot be reached, `StoreUnavailable`, opening an outage that the next
committed write ends: see `_outage.py`). The open
transactions are counted, so `aclose` can wait for them (bounded), cut short those that outlast
the grace, and only then dispose of the pool: afterwards no connection, no lock and no
transaction of this store remains (for SQLite, no aiosqlite worker thread either).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from mcpstation.errors import StoreError, StoreUnavailable, UsageError
from mcpstation.store._engine import WRITE_OPTION
from mcpstation.store._outage import StoreOutage, is_unreachable
from mcpstation.store._times import now

logger = logging.getLogger(__name__)

CLOSE_GRACE_S = 5.0  # how long `aclose` lets running transactions (an audit write, a pin batch) finish
CANCEL_GRACE_S = 5.0  # after cutting the rest short, how long their rollbacks get to return connections
DISPOSE_TIMEOUT_S = 10.0  # bound on closing the pooled connections (a PostgreSQL server that stopped answering)


class Transactions:
    """Sessions over one engine, each in its own transaction; closed once with `aclose`."""

    def __init__(self, engine: AsyncEngine, *, label: str) -> None:
        self.engine = engine
        self.label = label
        self._readers = async_sessionmaker(engine, expire_on_commit=False)
        self._writers = async_sessionmaker(engine.execution_options(**{WRITE_OPTION: True}), expire_on_commit=False)
        self._running: set[anyio.CancelScope] = set()
        self._drained: anyio.Event | None = None
        self._closing = False
        self.outage: StoreOutage | None = None  # set by a failure to reach the database, ended by a committed write

    @property
    def closed(self) -> bool:
        return self._closing

    @asynccontextmanager
    async def begin(self, *, doing: str, write: bool = False) -> AsyncIterator[AsyncSession]:
        """One session in one transaction, committed on exit and rolled back on any exception.

        `doing` names the work for error messages ("pinning 'github'/'search'"). Writers take
        SQLite's write lock at BEGIN, so two processes never deadlock upgrading a read lock.

        Raises:
            StoreError: the database refused, failed or could not be reached (rolled back), or
                the store closed while this transaction was still running.
            UsageError: the store is closed.
        """
        if self._closing:
            raise UsageError(f"the store at {self.label} is closed.")
        sessions = self._writers if write else self._readers
        scope = anyio.CancelScope()
        self._running.add(scope)
        try:
            with scope:
                try:
                    async with sessions.begin() as session:
                        yield session
                except (SQLAlchemyError, OSError) as exc:  # OSError: a PostgreSQL connection refused or reset
                    raise self.failure(exc, doing=doing) from exc
            if write and not scope.cancelled_caught:
                self.wrote()
        finally:
            self._running.discard(scope)
            if self._drained is not None and not self._running:
                self._drained.set()
        if scope.cancelled_caught:
            raise StoreError(f"{doing} was cut short: the store at {self.label} closed meanwhile (rolled back).")

    def failure(self, exc: SQLAlchemyError | sqlite3.Error | OSError, *, doing: str) -> StoreError:
        """The error to raise for `exc`, which failed `doing`; one that says the database cannot be
        reached opens the outage (or brings its reason up to date)."""
        reason = describe(exc)
        if is_unreachable(exc):
            self._went_away(reason)
            return StoreUnavailable(
                f"{doing} failed: cannot reach the store at {self.label}: {reason}. "
                "Nothing was written; try again once it is back."
            )
        return StoreError(f"{doing} failed in the store at {self.label}: {reason}")

    def wrote(self) -> None:
        """A write was committed: the store is reachable, and an open outage ends."""
        if self.outage is not None:
            self._came_back()

    def _went_away(self, reason: str) -> None:
        if self.outage is None:
            logger.error("the store at %s cannot be reached: %s", self.label, reason)
            self.outage = StoreOutage(since=now(), reason=reason)
        else:
            self.outage = StoreOutage(since=self.outage.since, reason=reason)

    def _came_back(self) -> None:
        assert self.outage is not None
        logger.warning("the store at %s is reachable again (down since %s)", self.label, self.outage.since.isoformat())
        self.outage = None

    async def aclose(self) -> None:
        """Refuse new transactions, let the running ones finish (then cut them short), close every
        connection. Idempotent; completes even when the caller is being cancelled, within its bounds."""
        if self._closing:
            return
        self._closing = True
        drained = self._drained = anyio.Event()
        if not self._running:
            drained.set()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(CLOSE_GRACE_S):
                await drained.wait()
            if self._running:
                logger.warning(
                    "%d transaction(s) on the store at %s still running after %g s; cutting them short",
                    len(self._running),
                    self.label,
                    CLOSE_GRACE_S,
                )
                for scope in list(self._running):
                    scope.cancel()
                with anyio.move_on_after(CANCEL_GRACE_S):
                    await drained.wait()
            with anyio.move_on_after(DISPOSE_TIMEOUT_S) as disposing:
                await self.engine.dispose()
            if disposing.cancelled_caught:
                logger.warning("closing the store's connections at %s took over %g s", self.label, DISPOSE_TIMEOUT_S)


def describe(exc: BaseException) -> str:
    """The driver's message only: SQLAlchemy's own text includes the statement."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    return f"{type(exc).__name__}: {exc}"
