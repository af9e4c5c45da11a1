"""Where the store lives: the data directory and the database URL made from it or given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mcpstation.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

DATA_DIR_ENV_VAR = "MCPSTATION_DATA_DIR"
DATABASE_FILE_NAME = "mcpstation.db"
_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg", "postgres": "postgresql+asyncpg"}
_SUPPORTED = ("sqlite+aiosqlite", "postgresql+asyncpg")


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$MCPSTATION_DATA_DIR`, else `$XDG_DATA_HOME/mcpstation`, else `~/.local/share/mcpstation`."""
    environ = os.environ if environ is None else environ
    explicit = environ.get(DATA_DIR_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    xdg = environ.get("XDG_DATA_HOME")
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "mcpstation"
    return Path.home() / ".local" / "share" / "mcpstation"


def database_url(url: str | None, *, data_dir: Path | None = None) -> URL:
    """The async URL to open: `url` with its async driver filled in, else SQLite in `data_dir`.

    `postgresql://...` becomes `postgresql+asyncpg://...`, `sqlite:///...` `sqlite+aiosqlite:///...`.

    Raises:
        StoreError: the URL does not parse, or names a database other than SQLite or PostgreSQL.
    """
    from sqlalchemy.engine import URL, make_url  # the database layer loads when a store opens
    from sqlalchemy.exc import ArgumentError

    if url is None:
        directory = default_data_dir() if data_dir is None else data_dir.expanduser()
        return URL.create("sqlite+aiosqlite", database=str(directory / DATABASE_FILE_NAME))
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            "the database URL does not parse; expected e.g. postgresql+asyncpg://user@host/db or sqlite:///path."
        ) from None
    drivername = _DRIVERS.get(parsed.drivername, parsed.drivername)
    if drivername not in _SUPPORTED:
        raise StoreError(
            f"unsupported database {parsed.drivername!r}; use SQLite (sqlite:///path) or PostgreSQL "
            "(postgresql+asyncpg://user@host/db)."
        )
    return parsed.set(drivername=drivername)


def sqlite_file(url: URL) -> Path | None:
    """The file of an on-disk SQLite URL; None for PostgreSQL and in-memory SQLite."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    if url.database.startswith("file:"):
        return None  # a URI filename: the caller chose its own path semantics
    return Path(url.database)
