"""Fixtures of the store battery: `store_target` (SQLite, then PostgreSQL) and an open `store`;
`db_url`, a whole fresh database (SQLite file or PostgreSQL database) for stations, the CLI and `up`;
`pg_db_url`, the same on PostgreSQL only (skipped, with the reason, where none answers)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_helpers import PG_URL_ENV_VAR, StoreTarget, fresh_database, postgres_url, require_postgres, run_admin

from mcpstation.store import Store


@pytest.fixture(params=["sqlite", "postgresql"])
async def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreTarget]:
    if request.param == "sqlite":
        yield StoreTarget("sqlite", None, tmp_path / "data", None)
        return
    url, reason = await postgres_url()
    if url is None:
        pytest.skip(f"PostgreSQL not reachable (set {PG_URL_ENV_VAR}): {reason}")
    schema = f"mcps_test_{uuid.uuid4().hex[:12]}"
    try:
        yield StoreTarget("postgresql", url, None, schema)
    finally:
        await run_admin(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def store(store_target: StoreTarget) -> AsyncIterator[Store]:
    opened = await store_target.open()
    try:
        yield opened
    finally:
        await opened.aclose()


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A URL for `--db-url` / `Store.open`: a new SQLite file, or a new PostgreSQL database dropped after the test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store' / 'mcpstation.db'}"
        return
    async with fresh_database(await require_postgres()) as url:
        yield url


@pytest.fixture
async def pg_db_url() -> AsyncIterator[str]:
    async with fresh_database(await require_postgres()) as url:
        yield url
