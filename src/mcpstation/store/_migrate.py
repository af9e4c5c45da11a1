"""Bring a database to the newest schema: `alembic upgrade head`, in-process, at open."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mcpstation.errors import StoreError
from mcpstation.store._engine import WRITE_OPTION

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported only when a database is behind: opening a current one (every CLI command
# does) reads `alembic_version` and the revision ids in the shipped files, nothing more.
_REVISION = re.compile(r"^revision(?:\s*:[^=]*)?\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision[^=]*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any constant will do: it names the lock concurrent `Store.open`s on PostgreSQL queue on.
_PG_MIGRATION_LOCK = 0x6D6370737461  # "mcpsta"


def alembic_config() -> Config:
    """An alembic `Config` pointing at the migrations shipped inside this package."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    """The newest revision this release knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships at least one revision
        raise RuntimeError("no migrations shipped")
    return head


async def upgrade(engine: AsyncEngine, *, schema: str | None = None, label: str) -> None:
    """Upgrade the database behind `engine` to head in one transaction.

    Raises:
        StoreError: the database holds a revision this release does not know (a newer mcpstation
            wrote it), or a migration failed; nothing was changed.
    """
    async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
            if schema is not None:
                quoted = connection.dialect.identifier_preparer.quote_schema(schema)
                await connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quoted}"))
        if await _recorded_revision(connection) == shipped_head():
            return
        await connection.run_sync(_upgrade_sync, label)


def shipped_head() -> str | None:
    """The one shipped revision no other revision builds on, read from the files (None: not one)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        revisions.update(_REVISION.findall(source))
        parents.update(_DOWN_REVISION.findall(source))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


async def _recorded_revision(connection: AsyncConnection) -> str | None:
    """`alembic_version`'s row without alembic, or None where the table is missing."""
    if connection.dialect.name == "postgresql":
        exists = "SELECT to_regclass('alembic_version') IS NOT NULL"
    else:
        exists = "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
    if not (await connection.execute(text(exists))).scalar():
        return None
    rows = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
    return rows[0] if len(rows) == 1 else None


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision recorded in the database's `alembic_version`, None when never migrated."""
    from alembic.runtime.migration import MigrationContext

    async with engine.connect() as connection:
        return await connection.run_sync(lambda sync: MigrationContext.configure(sync).get_current_revision())


def _upgrade_sync(connection: Connection, label: str) -> None:
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.util import CommandError

    config = alembic_config()
    config.attributes["connection"] = connection
    try:
        command.upgrade(config, "head")
    except CommandError as exc:
        found = MigrationContext.configure(connection).get_current_revision()
        raise StoreError(
            f"the database at {label} is at schema revision {found!r}, which this mcpstation does not know "
            f"(its newest is {head_revision()!r}): a newer release wrote it. Upgrade mcpstation, or use another "
            f"database. ({exc})"
        ) from None
