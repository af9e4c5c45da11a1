"""The change log in SQL: a row written inside the change's own transaction, read in order.

Ids must become visible in the order they were assigned, or a follower that read up to id 11
would never see a slower transaction's id 10. SQLite gives that for free (writers hold the
database's one write lock from BEGIN IMMEDIATE to COMMIT). PostgreSQL assigns ids at INSERT, so
each writer first takes a transaction-scoped advisory lock: the next writer gets its id only
after this one committed or rolled back. The same transaction sends a `NOTIFY`, delivered on
commit, to wake followers; the log, not the notification, is the truth.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.store._schema import change_log
from mcpstation.store._times import utc
from mcpstation.store.records import ChangeKind, ChangeRecord

NOTIFY_CHANNEL = "mcpstation_changes"
# Any constant will do: it names the lock that orders writers of the change log on PostgreSQL.
_PG_CHANGE_LOCK = 0x6D63706C6F67  # "mcplog"


async def write_change(
    session: AsyncSession,
    dialect: str,
    kind: ChangeKind,
    *,
    subject: str | None,
    tool: str | None = None,
    origin: str,
    at: datetime,
) -> int:
    """Append one change in `session`'s transaction; its id once committed."""
    if dialect == "postgresql":
        await session.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_CHANGE_LOCK})
    insert = (
        sa.insert(change_log)
        .values(at=at, kind=str(kind), subject=subject, tool=tool, origin=origin)
        .returning(change_log.c.id)
    )
    change_id = int((await session.execute(insert)).scalar_one())
    if dialect == "postgresql":
        await session.execute(sa.text("SELECT pg_notify(:channel, :payload)"), {
            "channel": NOTIFY_CHANNEL, "payload": str(change_id),
        })  # fmt: skip
    return change_id


def _changes_after(after: int, limit: int) -> sa.Select[Any]:
    return sa.select(change_log).where(change_log.c.id > after).order_by(change_log.c.id).limit(limit)


async def read_changes(session: AsyncSession, after: int, limit: int) -> tuple[ChangeRecord, ...]:
    """Up to `limit` changes numbered above `after`, oldest first."""
    return tuple(_record(row) for row in (await session.execute(_changes_after(after, limit))).all())


def read_changes_blocking(connection: Connection, after: int, limit: int) -> tuple[ChangeRecord, ...]:
    """`read_changes` on a blocking connection (`SqliteWriter.read`)."""
    return tuple(_record(row) for row in connection.execute(_changes_after(after, limit)).all())


async def last_change_id(session: AsyncSession) -> int:
    """The newest change's number; 0 for an empty log."""
    return int((await session.execute(sa.select(sa.func.coalesce(sa.func.max(change_log.c.id), 0)))).scalar_one())


def _record(row: Row[Any]) -> ChangeRecord:
    return ChangeRecord(
        id=int(row.id),
        at=utc(row.at),
        kind=ChangeKind(row.kind),
        subject=row.subject,
        tool=row.tool,
        origin=row.origin,
    )
