"""OAuth credentials in SQL: one row per server, written as one `INSERT ... ON CONFLICT`.

Two writes for one server at once (a token refresh racing a client registration, or two stations
signing in) both land: each sets its own columns, and a row issued for another URL is replaced
whole, never merged with credentials for the new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.store._schema import oauth_credentials
from mcpstation.store._times import maybe_utc, utc
from mcpstation.store._upsert import insert
from mcpstation.store.records import OAuthCredentials

_CREDENTIAL_COLUMNS = ("tokens", "token_expires_at", "client_info")


async def read_oauth(session: AsyncSession, server: str) -> OAuthCredentials | None:
    query = sa.select(oauth_credentials).where(oauth_credentials.c.server == server)
    row = (await session.execute(query)).first()
    return None if row is None else _record(row)


async def write_oauth(
    session: AsyncSession, dialect: str, server: str, server_url: str, changes: Mapping[str, Any], *, now: datetime
) -> None:
    """Set `changes` (some of tokens, token_expires_at, client_info) for `server` at `server_url`.

    The other credential columns are kept when the stored row is for the same URL, else cleared.
    """
    unknown = set(changes) - set(_CREDENTIAL_COLUMNS)
    if unknown:  # pragma: no cover - the store passes only these
        raise ValueError(f"not OAuth credential columns: {sorted(unknown)}")
    statement = insert(dialect, oauth_credentials).values(
        server=server, server_url=server_url, updated_at=now, **changes
    )
    excluded = statement.excluded
    same_url = oauth_credentials.c.server_url == excluded.server_url
    set_: dict[str, Any] = {"server_url": excluded.server_url, "updated_at": excluded.updated_at}
    for column in _CREDENTIAL_COLUMNS:
        if column in changes:
            set_[column] = excluded[column]
        else:
            set_[column] = sa.case((same_url, oauth_credentials.c[column]), else_=sa.null())
    await session.execute(statement.on_conflict_do_update(index_elements=[oauth_credentials.c.server], set_=set_))


def _record(row: Row[Any]) -> OAuthCredentials:
    return OAuthCredentials(
        server=row.server,
        server_url=row.server_url,
        tokens=row.tokens,
        token_expires_at=maybe_utc(row.token_expires_at),
        client_info=row.client_info,
        updated_at=utc(row.updated_at),
    )
