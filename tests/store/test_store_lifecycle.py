"""Open and close on both databases: many stores migrating one new database at once, and a closed store
that holds nothing (no connection, no lock, no transaction, no worker thread), so the same
database opens again at once, even when the close came while records were being written.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from sqlalchemy.engine import make_url
from store_helpers import fresh_database, pg_connections, require_postgres, run_admin

from mcpstation.errors import StoreError, UsageError
from mcpstation.store import Store, _transactions
from mcpstation.store._migrate import head_revision
from mcpstation.store._schema import tool_pins

pytestmark = pytest.mark.anyio

OPENERS = 20  # stores opening one new database at once: every one of them races the migration
REOPENS = 50  # close-then-reopen cycles of one database, each with audit writes in flight
WRITERS = 4  # tasks auditing calls while the store closes
OPEN_TIMEOUT_S = 120.0  # bound on OPENERS concurrent opens (SQLite migrations queue on one lock) on a loaded machine
CYCLES_TIMEOUT_S = 300.0  # bound on all REOPENS cycles together on a loaded 2-core machine
THREAD_EXIT_TIMEOUT_S = 5.0  # a closed aiosqlite connection's worker thread returning, on a loaded machine


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    return Path(parsed.database) if parsed.get_backend_name() == "sqlite" and parsed.database else None


def _aiosqlite_threads_after_exit() -> list[threading.Thread]:
    """aiosqlite worker threads still running. A closed connection's thread has already closed its
    sqlite handle and is returning; it gets a bounded moment to end."""
    workers = [thread for thread in threading.enumerate() if "_connection_worker_thread" in thread.name]
    for thread in workers:
        thread.join(THREAD_EXIT_TIMEOUT_S)
    return [thread for thread in workers if thread.is_alive()]


async def assert_nothing_held(url: str) -> None:
    """No lock, transaction or connection of a closed store is left on its database."""
    file = _sqlite_file(url)
    if file is None:
        assert await pg_connections(url) == 0
        return
    # timeout=0: a write lock still held anywhere fails at once instead of being waited for.
    probe = sqlite3.connect(file, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
    finally:
        probe.close()
    assert _aiosqlite_threads_after_exit() == []


async def test_stores_opening_one_new_database_at_once_all_migrate_it(db_url: str) -> None:
    opened: list[Store] = []

    async def open_one() -> None:
        opened.append(await Store.open(db_url))

    try:
        with anyio.fail_after(OPEN_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                for _ in range(OPENERS):
                    group.start_soon(open_one)
        assert len(opened) == OPENERS
        assert {await store.schema_revision() for store in opened} == {head_revision()}
        await opened[0].set_pin("s", "t", "f")
        assert [pin.tool for pin in await opened[-1].list_pins()] == ["t"]
    finally:
        for store in opened:
            await store.aclose()


async def test_a_store_closed_while_auditing_reopens_at_once_every_time(db_url: str) -> None:
    written = 0

    async def audit(store: Store, started: anyio.Event) -> None:
        nonlocal written
        while True:
            try:
                await store.record_call("d1", "add", outcome="ok", duration_s=0.01, arguments={"a": written})
            except UsageError:
                return  # closed: what a station's audit writer sees once its store is gone
            except StoreError as exc:
                assert "closed meanwhile" in str(exc)
                return
            written += 1
            started.set()

    with anyio.fail_after(CYCLES_TIMEOUT_S):
        for _ in range(REOPENS):
            store = await Store.open(db_url)
            started = anyio.Event()
            async with anyio.create_task_group() as group:
                for _ in range(WRITERS):
                    group.start_soon(audit, store, started)
                await started.wait()
                await store.aclose()
            await assert_nothing_held(db_url)
        async with await Store.open(db_url) as store:
            assert len(await store.list_calls(limit=written + 1)) == written


async def test_close_cuts_short_a_transaction_that_outlasts_the_grace(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_transactions, "CLOSE_GRACE_S", 0.2)
    store = await Store.open(db_url)
    holding = anyio.Event()
    outcome: list[BaseException] = []

    async def hold_a_write_lock() -> None:
        try:
            async with store._transactions.begin(doing="holding a write", write=True) as session:
                await store.record_call("d1", "add", outcome="ok", duration_s=0.0)  # another transaction
                pin = {"server": "s", "tool": "t", "fingerprint": "f", "first_seen": datetime.now(UTC)}
                await session.execute(tool_pins.insert().values(**pin))
                holding.set()
                await anyio.sleep_forever()
        except StoreError as exc:
            outcome.append(exc)

    with anyio.fail_after(OPEN_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(hold_a_write_lock)
            await holding.wait()
            await store.aclose()
    [cut] = outcome
    assert "was cut short: the store at" in str(cut) and "closed meanwhile (rolled back)" in str(cut)
    await assert_nothing_held(db_url)
    async with await Store.open(db_url) as reopened:
        assert await reopened.list_pins() == ()  # rolled back
        assert len(await reopened.list_calls()) == 1


async def test_close_completes_even_when_the_caller_is_cancelled(db_url: str) -> None:
    store = await Store.open(db_url)
    await store.record_call("d1", "add", outcome="ok", duration_s=0.0)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await store.aclose()
    assert store.is_closed
    await assert_nothing_held(db_url)


async def test_a_postgres_database_that_does_not_exist_says_how_to_create_it() -> None:
    url = make_url(await require_postgres()).set(database="mcps_no_such_database")
    with pytest.raises(StoreError, match=r'database "mcps_no_such_database" does not exist.*Fix: create it'):
        await Store.open(url.render_as_string(hide_password=False))


async def test_fresh_database_helper_leaves_nothing_behind() -> None:
    url = await require_postgres()
    async with fresh_database(url) as fresh:
        async with await Store.open(fresh) as store:
            await store.set_pin("s", "t", "f")
    with pytest.raises(StoreError, match="does not exist"):
        await Store.open(fresh)


async def test_a_postgres_user_who_may_not_create_tables_is_told_how_to_fix_it() -> None:
    admin = await require_postgres()
    role = f"mcps_test_role_{uuid.uuid4().hex[:8]}"
    await run_admin(admin, f'CREATE ROLE "{role}" LOGIN')
    try:
        async with fresh_database(admin) as url:  # owned by the admin: the new role may not create tables there
            as_role = make_url(url).set(username=role, password=None).render_as_string(hide_password=False)
            with pytest.raises(StoreError, match=r"permission denied.*\. Fix: .*GRANT CREATE ON SCHEMA public"):
                await Store.open(as_role)
    finally:
        await run_admin(admin, f'DROP ROLE IF EXISTS "{role}"')
