"""Bring a database to the newest schema: `alembic upgrade head`, in-process, at open, and only when behind.

Opening a current database (every CLI command, every start) reads its `alembic_version` row on a
plain connection, compares it with the newest revision shipped, and stops there: no lock is taken
and Alembic is never imported. A database that is behind (or new) is migrated under a lock that
simultaneous first starts queue on: a `flock` beside an SQLite file, a transaction-scoped advisory
lock on PostgreSQL; whoever comes second finds the schema current and migrates nothing.

Alembic logs at INFO when it is imported (its plugins) and for every step it runs. Those lines
are the store's business, not the user's: they are kept below WARNING unless this module's
logger is on for DEBUG (`-v`) or the application set Alembic's level itself.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mcpstation.errors import StoreError
from mcpstation.file_lock import file_lock
from mcpstation.store._engine import WRITE_OPTION
from mcpstation.store._locks import lock_file

if TYPE_CHECKING:
    from alembic.config import Config

logger = logging.getLogger(__name__)

_REVISION = re.compile(r"^revision(?:\s*:[^=]*)?\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision[^=]*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any constant will do: it names the lock concurrent `Store.open`s on PostgreSQL queue on.
_PG_MIGRATION_LOCK = 0x6D6370737461  # "mcpsta"
MIGRATION_LOCK_NAME = "migrate"  # the SQLite file lock simultaneous first starts queue on
MIGRATION_LOCK_TIMEOUT_S = 120.0  # how long an open waits for another process's migration to finish


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


async def upgrade(engine: AsyncEngine, *, schema: str | None = None, label: str, database: Path | None = None) -> None:
    """Upgrade the database behind `engine` to head in one transaction, unless it is there already.

    `database` is the SQLite file, whose migration lock is a file beside it (None: PostgreSQL,
    or SQLite in memory, which only this process can open).

    Raises:
        StoreError: the database holds a revision this release does not know (a newer mcpstation
            wrote it), or a migration failed; nothing was changed.
        TimeoutError: another process kept migrating it for `MIGRATION_LOCK_TIMEOUT_S`.
    """
    async with engine.connect() as connection:
        if await _recorded_revision(connection) == shipped_head():
            return
    async with _migration_lock(database):
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if connection.dialect.name == "postgresql":
                await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
                if schema is not None:
                    quoted = connection.dialect.identifier_preparer.quote_schema(schema)
                    await connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quoted}"))
            found = await _recorded_revision(connection)
            if found == shipped_head():
                return  # another process migrated it while this one waited
            with _alembic_kept_quiet():
                await connection.run_sync(_upgrade_sync, label)
    logger.info("store at %s migrated from schema %s to %s", label, found or "(empty)", shipped_head())


@contextlib.asynccontextmanager
async def _migration_lock(database: Path | None) -> AsyncIterator[None]:
    if database is None:
        yield
        return
    async with file_lock(lock_file(database, MIGRATION_LOCK_NAME), timeout_s=MIGRATION_LOCK_TIMEOUT_S):
        yield


_quieting = 0  # migrations in this process keeping Alembic quiet right now (each restores on the last out)


@contextlib.contextmanager
def _alembic_kept_quiet() -> Iterator[None]:
    """Alembic's INFO lines (plugins set up at import, each step run) kept below WARNING for the block."""
    global _quieting
    alembic_logger = logging.getLogger("alembic")
    if logger.isEnabledFor(logging.DEBUG) or (alembic_logger.level != logging.NOTSET and not _quieting):
        yield  # asked for (-v), or the application configured Alembic itself
        return
    _quieting += 1
    alembic_logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        _quieting -= 1
        if not _quieting:
            alembic_logger.setLevel(logging.NOTSET)


@functools.cache
def shipped_head() -> str | None:
    """The one shipped revision no other revision builds on, read from the files once (None: not one)."""
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
    async with engine.connect() as connection:
        return await _recorded_revision(connection)


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
