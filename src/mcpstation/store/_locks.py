"""Named locks shared by every station on one store: work that must happen once across replicas.

PostgreSQL: a transaction-scoped advisory lock, keyed by a hash of the schema and the name, so
stores in other schemas of the database do not contend; the database drops it when the holder's
transaction ends or its connection dies. Waiting polls `pg_try_advisory_xact_lock`, so a waiter
can be cancelled without cutting a query short. On-disk SQLite: a `flock` on a file beside the
database, per name. In-memory SQLite has one process by definition: a lock per name in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.file_lock import POLL_INTERVAL_S

_TRY_LOCK = sa.text("SELECT pg_try_advisory_xact_lock(hashtextextended(current_schema() || ':' || :name, 0))")


async def take_advisory_lock(session: AsyncSession, name: str, *, timeout_s: float) -> None:
    """Take the advisory lock `name` for the rest of `session`'s transaction.

    Raises:
        TimeoutError: another transaction held it for `timeout_s`.
    """
    deadline = anyio.current_time() + timeout_s
    while not (await session.execute(_TRY_LOCK, {"name": name})).scalar_one():
        if anyio.current_time() >= deadline:
            raise TimeoutError(f"the lock {name!r} was held elsewhere for over {timeout_s:g} s")
        await anyio.sleep(POLL_INTERVAL_S)


def lock_file(database: Path, name: str) -> Path:
    """The file whose `flock` is the lock `name` for the SQLite database at `database`."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return database.with_name(f"{database.name}.locks") / f"{digest}.lock"


class ProcessLocks:
    """One `anyio.Lock` per name, for a database only this process can open."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def hold(self, name: str, *, timeout_s: float) -> AsyncIterator[None]:
        lock = self._locks.setdefault(name, anyio.Lock())
        with anyio.fail_after(timeout_s):
            await lock.acquire()
        try:
            yield
        finally:
            lock.release()
