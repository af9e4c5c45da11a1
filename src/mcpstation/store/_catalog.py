"""The catalog cache in SQL: every row read in one query, one server's listing written in one upsert."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.store._schema import catalog_cache
from mcpstation.store._times import utc
from mcpstation.store._upsert import insert
from mcpstation.store.records import CachedCatalog


async def read_catalogs(session: AsyncSession) -> dict[str, CachedCatalog]:
    """Every cached listing, by server."""
    rows = (await session.execute(sa.select(catalog_cache))).all()
    return {
        row.server: CachedCatalog(
            row.server, row.spec_hash, row.digest, row.listing, row.session, row.ttl_ms, utc(row.listed_at)
        )
        for row in rows
    }


async def write_catalog(session: AsyncSession, dialect: str, entry: CachedCatalog) -> None:
    """Keep `entry` as its server's listing, replacing the one before (the newest listing wins)."""
    values = {
        "server": entry.server,
        "spec_hash": entry.spec_hash,
        "digest": entry.digest,
        "listing": dict(entry.listing),
        "session": dict(entry.session),
        "ttl_ms": entry.ttl_ms,
        "listed_at": entry.listed_at,
    }
    statement = insert(dialect, catalog_cache).values(**values)
    replaced = {key: statement.excluded[key] for key in values if key != "server"}
    await session.execute(statement.on_conflict_do_update(index_elements=[catalog_cache.c.server], set_=replaced))


async def delete_catalog(session: AsyncSession, server: str) -> bool:
    deleted = sa.delete(catalog_cache).where(catalog_cache.c.server == server).returning(catalog_cache.c.server)
    return (await session.execute(deleted)).first() is not None
