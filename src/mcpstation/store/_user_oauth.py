"""Each user's own OAuth credentials for per-user upstreams: one sealed row per (user, server).

The station seals the record (tokens and registered client) before it reaches the store, so a
database dump holds no token in clear. A write for another server URL replaces the row whole.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.store._schema import user_oauth
from mcpstation.store._times import maybe_utc, utc
from mcpstation.store._upsert import insert
from mcpstation.store.records import UserOAuth

User = tuple[str, str]


def _of(user: User, server: str | None = None) -> sa.ColumnElement[bool]:
    match = sa.and_(user_oauth.c.user_issuer == user[0], user_oauth.c.user_subject == user[1])
    return match if server is None else sa.and_(match, user_oauth.c.server == server)


async def read(session: AsyncSession, user: User, server: str) -> UserOAuth | None:
    row = (await session.execute(sa.select(user_oauth).where(_of(user, server)))).first()
    return None if row is None else _record(row)


async def read_all(session: AsyncSession, user: User) -> tuple[UserOAuth, ...]:
    rows = (await session.execute(sa.select(user_oauth).where(_of(user)).order_by(user_oauth.c.server))).all()
    return tuple(_record(row) for row in rows)


async def write(
    session: AsyncSession,
    dialect: str,
    user: User,
    server: str,
    server_url: str,
    sealed: str,
    expires_at: datetime | None,
    *,
    now: datetime,
) -> None:
    values = {
        "user_issuer": user[0],
        "user_subject": user[1],
        "server": server,
        "server_url": server_url,
        "sealed": sealed,
        "token_expires_at": expires_at,
        "updated_at": now,
    }
    statement = insert(dialect, user_oauth).values(**values)
    keys = [user_oauth.c.user_issuer, user_oauth.c.user_subject, user_oauth.c.server]
    changed = {k: statement.excluded[k] for k in ("server_url", "sealed", "token_expires_at", "updated_at")}
    await session.execute(statement.on_conflict_do_update(index_elements=keys, set_=changed))


async def delete(session: AsyncSession, user: User, server: str) -> bool:
    deleted = await session.execute(sa.delete(user_oauth).where(_of(user, server)).returning(user_oauth.c.server))
    return deleted.first() is not None


def _record(row: Row[Any]) -> UserOAuth:
    return UserOAuth(
        user=(row.user_issuer, row.user_subject),
        server=row.server,
        server_url=row.server_url,
        sealed=row.sealed,
        token_expires_at=maybe_utc(row.token_expires_at),
        updated_at=utc(row.updated_at),
    )
