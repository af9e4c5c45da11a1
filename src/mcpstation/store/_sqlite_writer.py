"""Many-row inserts, and the polled read of the change log, on a SQLite file in one worker-thread
call per transaction.

Over aiosqlite, each step of a transaction (check out, BEGIN, execute, fetch, COMMIT, reset) is its
own hop to the driver's thread and back: about ten per audited batch, each a wake-up of another
thread and of the event loop. A gateway answers only once its call's record is committed, so those
hops are on every call's path. `SqliteWriter` does the whole transaction in one call on a worker
thread instead, over the stdlib driver (blocking, hence the thread: sqlite3 has no other way) and
an engine set up as the async one (WAL, `synchronous=NORMAL`, BEGIN IMMEDIATE for writers). One
writer at a time: SQLite has one write lock anyway.

The audit's rows (`execute_all`, already plain driver values) skip SQLAlchemy too: they go through
one stdlib connection the writer keeps checked out of its engine's pool (so set up as every other),
BEGIN IMMEDIATE, the statements, COMMIT. A SQLAlchemy transaction around the same statements cost
about four times the CPU (pool checkout and return, events, the reset), on every gateway answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.dml import Insert

from mcpstation.errors import UsageError
from mcpstation.store._engine import WRITE_OPTION, create_sqlite_sync_engine
from mcpstation.store._outage import is_unreachable
from mcpstation.store._transactions import Transactions

T = TypeVar("T")


class SqliteWriter:
    """Inserts and polled reads on one SQLite file, a transaction per call, each in one worker-thread hop."""

    def __init__(self, url: URL, *, label: str, transactions: Transactions) -> None:
        self.label = label
        self._transactions = transactions  # its outage is the store's: opened by our failures too, ended by our writes
        self._base = create_sqlite_sync_engine(url)
        self._engine = self._base.execution_options(**{WRITE_OPTION: True})
        self._one = anyio.CapacityLimiter(1)
        self._closed = False
        self._kept: PoolProxiedConnection | None = None  # `execute_all`'s connection, once it has written

    async def insert_returning_ids(
        self, statement: Insert, rows: Sequence[Mapping[str, Any]], *, doing: str
    ) -> list[int]:
        """Run `statement` (an INSERT ... RETURNING one integer column) for `rows` in one
        transaction: all are written or none. The ids come back in the order of `rows`.

        Raises:
            StoreError: the database refused or failed (rolled back); `StoreUnavailable` when it cannot be reached.
            UsageError: the writer is closed.
        """
        if self._closed:
            raise UsageError(f"the store at {self.label} is closed.")

        def run() -> list[int]:
            with self._engine.begin() as connection:
                return [int(value) for value in connection.execute(statement, list(rows)).scalars().all()]

        try:
            ids = await anyio.to_thread.run_sync(run, limiter=self._one)
        except (SQLAlchemyError, OSError) as exc:
            raise self._transactions.failure(exc, doing=doing) from exc
        self._transactions.wrote()
        return ids

    async def execute_all(self, statements: Sequence[tuple[str, Sequence[Any]]], *, doing: str) -> None:
        """Run each `(sql, values)` (qmark parameters, values already in the driver's terms) in one
        transaction: no statement compiled, no value processed.

        Raises:
            StoreError: the database refused or failed (rolled back); `StoreUnavailable` when it cannot be reached.
            UsageError: the writer is closed.
        """
        if self._closed:
            raise UsageError(f"the store at {self.label} is closed.")

        def run() -> None:
            if self._kept is None:
                self._kept = self._base.raw_connection()
            driver = self._kept.driver_connection
            assert isinstance(driver, sqlite3.Connection)  # in autocommit: we say BEGIN and COMMIT
            try:
                driver.execute("BEGIN IMMEDIATE")
                for sql, values in statements:
                    driver.execute(sql, tuple(values))
                driver.execute("COMMIT")
            except BaseException as exc:
                self._give_up_transaction(driver, exc)
                raise

        try:
            await anyio.to_thread.run_sync(run, limiter=self._one)
        except (SQLAlchemyError, sqlite3.Error, OSError) as exc:
            raise self._transactions.failure(exc, doing=doing) from exc
        self._transactions.wrote()

    def _give_up_transaction(self, driver: sqlite3.Connection, exc: BaseException) -> None:
        """After `exc` inside `execute_all`: roll back what it began; a connection that says the
        file cannot be reached is closed, and the next write opens another."""
        try:
            if driver.in_transaction:
                driver.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the rollback fails with the connection: closing it rolls back too
        if isinstance(exc, sqlite3.Error) and is_unreachable(exc) and self._kept is not None:
            self._kept.invalidate(exc)
            self._kept = None

    async def read(self, work: Callable[[Connection], T], *, doing: str) -> T:
        """`work(connection)` in one read transaction on a worker thread (a poll, such as the change log's).

        Raises:
            StoreError: the database refused or failed; `StoreUnavailable` when it cannot be reached.
            UsageError: the writer is closed.
        """
        if self._closed:
            raise UsageError(f"the store at {self.label} is closed.")

        def run() -> T:
            with self._base.begin() as connection:
                return work(connection)

        try:
            return await anyio.to_thread.run_sync(run, limiter=self._one)
        except (SQLAlchemyError, OSError) as exc:
            raise self._transactions.failure(exc, doing=doing) from exc

    async def aclose(self) -> None:
        """Refuse new writes, wait for the running one, close the connections. Idempotent."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            async with self._one:
                await anyio.to_thread.run_sync(self._release)

    def _release(self) -> None:
        if self._kept is not None:
            self._kept.close()  # back to the pool, which `dispose` then closes
            self._kept = None
        self._base.dispose()
