"""The async engine: SQLite made properly transactional, PostgreSQL pointed at a schema.

Statement parameters are hidden from SQLAlchemy's error messages: they may hold secrets.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_S = 10.0  # how long a writer waits for another process's write lock
# Execution option marking a connection that will write: SQLite then takes the write lock up front.
WRITE_OPTION = "mcpstation_write"
SQLITE_SYNCHRONOUS = "NORMAL"  # fsync at checkpoints only, not on every commit (WAL)


def create_engine(url: URL, *, schema: str | None = None) -> AsyncEngine:
    """An engine for `url`; `schema` (PostgreSQL only) becomes the connection's `search_path`."""
    if url.get_backend_name() == "sqlite":
        engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S}, hide_parameters=True)
        make_sqlite_transactional(engine.sync_engine)
        return engine
    connect_args: dict[str, Any] = {}
    if schema is not None:
        connect_args["server_settings"] = {"search_path": schema}
    return create_async_engine(url, connect_args=connect_args, pool_pre_ping=True, hide_parameters=True)


def create_sqlite_sync_engine(url: URL) -> Engine:
    """A blocking engine on the same SQLite file over the stdlib driver, set up as `create_engine`'s:
    for a writer that does a whole transaction in one worker-thread call (`SqliteWriter`)."""
    engine = sa.create_engine(
        url.set(drivername="sqlite"),
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
        hide_parameters=True,
    )
    make_sqlite_transactional(engine)
    return engine


def make_sqlite_transactional(engine: Engine) -> None:
    # Python's sqlite3 module (under aiosqlite) begins transactions lazily and commits before DDL,
    # which breaks atomic migrations and lets two writers deadlock on lock upgrade. Take BEGIN
    # over: the driver emits none, we emit BEGIN (or BEGIN IMMEDIATE for writers) ourselves.
    # This is SQLAlchemy's documented recipe for pysqlite/aiosqlite.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if engine.url.database not in (None, "", ":memory:"):
                # Readers do not wait for a writer, and a crash mid-write never corrupts the file.
                try:
                    cursor.execute("PRAGMA journal_mode=WAL")
                except sqlite3.OperationalError:
                    # Another connection holds the file while switching it (or migrating): WAL is a
                    # property of the file, so that connection's switch serves this one too.
                    pass
                # In WAL mode a commit is then a write to the log without an fsync: it survives a
                # crash of this process, and a power loss may roll back the last commits but never
                # corrupts the file (docs/architecture.md, "What the audit promises"). Set per
                # connection (it is not a property of the file), and only in WAL mode: in the
                # rollback journal, NORMAL could corrupt the file on a power loss.
                cursor.execute("PRAGMA journal_mode")
                if str(cursor.fetchone()[0]).lower() == "wal":
                    cursor.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
