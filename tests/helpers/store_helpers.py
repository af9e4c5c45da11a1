"""Helpers for the store battery, which runs against SQLite (a temporary directory) and a real PostgreSQL.

PostgreSQL is `$MCPSTATION_TEST_PG_URL`, else `postgresql+asyncpg://root@127.0.0.1:5432/test`
(then the same as `postgres`). Each PostgreSQL test gets a schema of its own, or with
`fresh_database` a database of its own (what a station, the CLI or `up` needs: they take a URL
only), dropped afterwards. Where no PostgreSQL answers, its tests are skipped with the reason
(`-ra` prints it).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import asyncpg
import pytest
from sqlalchemy.engine import make_url

from mcpstation.store import Store

PG_URL_ENV_VAR = "MCPSTATION_TEST_PG_URL"
DEFAULT_PG_URL = "postgresql+asyncpg://root@127.0.0.1:5432/test"
PG_CONNECT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class StoreTarget:
    """Where a test's store lives; `open()` opens (or reopens) it."""

    backend: str
    url: str | None
    data_dir: Path | None
    schema: str | None

    async def open(self, *, keep_call_arguments: bool = False) -> Store:
        return await Store.open(
            self.url, data_dir=self.data_dir, schema=self.schema, keep_call_arguments=keep_call_arguments
        )


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _check(url: str) -> None:
    with anyio.fail_after(PG_CONNECT_TIMEOUT_S):
        connection = await asyncpg.connect(_dsn(url))
    await connection.close()


_probed: tuple[str | None, str] | None = None


async def postgres_url() -> tuple[str | None, str]:
    """The first PostgreSQL URL that accepts a connection, or None and why none did (probed once)."""
    global _probed
    if _probed is not None:
        return _probed
    explicit = os.environ.get(PG_URL_ENV_VAR)
    candidates = [explicit] if explicit else [DEFAULT_PG_URL, DEFAULT_PG_URL.replace("root@", "postgres@", 1)]
    reasons: list[str] = []
    for url in candidates:
        try:
            await _check(url)
        except Exception as exc:  # boundary: any failure means "not reachable", and says why in the skip
            shown = make_url(url).render_as_string(hide_password=True)
            reasons.append(f"{shown}: {type(exc).__name__}: {exc}")
            continue
        _probed = (url, "")
        return _probed
    _probed = (None, "; ".join(reasons))
    return _probed


async def run_admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(_dsn(url))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def require_postgres() -> str:
    """The PostgreSQL URL to test against; skips the test (saying why) when none answers."""
    url, reason = await postgres_url()
    if url is None:
        pytest.skip(f"PostgreSQL not reachable (set {PG_URL_ENV_VAR}): {reason}")
    return url


@asynccontextmanager
async def fresh_database(url: str) -> AsyncIterator[str]:
    """A new, empty database on `url`'s server, dropped afterwards (with whatever still holds it open)."""
    name = f"mcps_test_{uuid.uuid4().hex[:12]}"
    await run_admin(url, f'CREATE DATABASE "{name}"')
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        await run_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def pg_connections(url: str) -> int:
    """How many sessions other than this one are connected to `url`'s database."""
    connection = await asyncpg.connect(_dsn(url))
    try:
        count = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await connection.close()
    return int(count)
