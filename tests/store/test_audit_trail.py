"""The audit trail of a station, on SQLite and on PostgreSQL: an answer that leaves the process is
in the store when it arrives; a library call never waits for its record; records queued together
are written in one transaction; a failing or blocked store never holds an answer back for long.

The writer is blocked for real: another connection holds the database's write lock (SQLite) or an
exclusive lock on `call_audit` (PostgreSQL), so the station's inserts wait until it lets go.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite
import anyio
import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from store_helpers import StoreTarget

from mcpstation import Station, StationConfig
from mcpstation.config.models import InProcessServerSpec, Role
from mcpstation.pipeline import Caller, Face, audit
from mcpstation.store import DATABASE_FILE_NAME, Store
from mcpstation.testing.demo_server import build_demo_server

pytestmark = pytest.mark.anyio

START_TIMEOUT_S = 60.0  # a station with one in-process server, its store and the test's calls, on a loaded machine
FOREVER_S = 3600.0  # an audit wait no test outlives: a call that returns did not wait for it
CONCURRENT_CALLS = 40
REMOTE = (Face.GATEWAY, Face.HTTP_API, Face.CLI)


def config() -> StationConfig:
    return StationConfig(servers=[InProcessServerSpec(name="d", server=build_demo_server())])


def caller(face: Face) -> Caller:
    return Caller.library() if face is Face.LIBRARY else Caller.token(f"{face}-bot", Role.USER, face)


@asynccontextmanager
async def station_on(target: StoreTarget) -> AsyncIterator[tuple[Station, Store]]:
    """A running station with one in-process demo server, on a store that keeps call arguments."""
    store = await target.open(keep_call_arguments=True)
    async with store:
        async with Station(config(), store=store) as station:
            yield station, store


@asynccontextmanager
async def writes_blocked(target: StoreTarget) -> AsyncIterator[None]:
    """Hold what an audit insert needs from another connection until the block ends."""
    if target.backend == "sqlite":
        assert target.data_dir is not None
        async with aiosqlite.connect(target.data_dir / DATABASE_FILE_NAME) as connection:
            await connection.execute("BEGIN IMMEDIATE")  # the write lock; readers go on (WAL)
            try:
                yield
            finally:
                await connection.rollback()
        return
    assert target.url is not None
    dsn = make_url(target.url).set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(dsn)
    try:
        async with connection.transaction():
            await connection.execute(f'LOCK TABLE "{target.schema}".call_audit IN EXCLUSIVE MODE')  # reads go on
            yield
    finally:
        await connection.close()


async def audited_arguments(store: Store) -> list[dict[str, object]]:
    return [dict(call.arguments or {}) for call in reversed(await store.list_calls(limit=1000))]


async def test_a_remote_call_is_in_the_store_when_its_answer_arrives(store_target: StoreTarget) -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            for n, face in enumerate(REMOTE):
                result = await station.call_tool("mcp_d_add", {"a": n, "b": 1}, caller=caller(face))
                assert result.ok
                (newest,) = await store.list_calls(limit=1)  # read at once: no wait, no poll
                assert (newest.caller, newest.arguments) == (f"{face}-bot", {"a": n, "b": 1})


async def test_concurrent_remote_calls_are_each_audited_once_by_the_time_they_answer(
    store_target: StoreTarget,
) -> None:
    answered: list[int] = []

    async def call(n: int, station: Station) -> None:
        result = await station.call_tool("mcp_d_add", {"a": n, "b": 0}, caller=caller(REMOTE[n % len(REMOTE)]))
        assert result.ok and result.text == str(n)
        answered.append(n)

    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            async with anyio.create_task_group() as group:
                for n in range(CONCURRENT_CALLS):
                    group.start_soon(call, n, station)
            audited = await audited_arguments(store)  # every call has answered: all are stored
    assert sorted(answered) == list(range(CONCURRENT_CALLS))
    assert sorted(int(str(arguments["a"])) for arguments in audited) == list(range(CONCURRENT_CALLS))


async def test_records_queued_behind_a_blocked_write_go_in_one_transaction(store_target: StoreTarget) -> None:
    transactions: int | None = None
    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            async with writes_blocked(store_target):
                for n in range(CONCURRENT_CALLS):  # library calls: answered while the writer is blocked
                    assert (await station.call_tool("mcp_d_add", {"a": n, "b": 0})).ok
                assert await store.list_calls() == ()
            # One answer that leaves the process: it waits for everything queued before it.
            assert (await station.call_tool("mcp_d_add", {"a": -1, "b": 0}, caller=caller(Face.GATEWAY))).ok
            audited = await audited_arguments(store)
            if store_target.backend == "postgresql":
                async with store.engine.connect() as connection:
                    query = sa.text("SELECT count(DISTINCT xmin::text) FROM call_audit")
                    transactions = await connection.scalar(query)
    assert [arguments["a"] for arguments in audited] == [*range(CONCURRENT_CALLS), -1]
    if store_target.backend == "postgresql":
        # The first record, blocked alone or with a few; then all queued behind it; then perhaps the last.
        assert transactions is not None and 1 <= transactions <= 3


async def test_a_library_call_does_not_wait_for_its_record_but_a_remote_one_does(
    store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "AUDIT_WAIT_S", FOREVER_S)
    remote_answered = anyio.Event()

    async def remote_call(station: Station) -> None:
        assert (await station.call_tool("mcp_d_add", {"a": 2, "b": 2}, caller=caller(Face.GATEWAY))).ok
        remote_answered.set()

    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            async with anyio.create_task_group() as group:
                async with writes_blocked(store_target):
                    group.start_soon(remote_call, station)
                    for face in (Face.LIBRARY, Face.LLM):  # both return with their records unwritten
                        assert (await station.call_tool("mcp_d_add", {"a": 1, "b": 1}, caller=caller(face))).ok
                    assert await store.list_calls() == ()
                    assert not remote_answered.is_set()  # it cannot answer until its record is written
                await remote_answered.wait()
                assert {"a": 2, "b": 2} in await audited_arguments(store)  # in the store as it answered


async def test_an_answer_waits_for_its_record_only_so_long(
    store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit, "AUDIT_WAIT_S", 0.05)
    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            async with writes_blocked(store_target):
                with caplog.at_level(logging.WARNING, logger="mcpstation.pipeline.audit"):
                    result = await station.call_tool("mcp_d_add", {"a": 1, "b": 2}, caller=caller(Face.HTTP_API))
                assert result.ok and result.text == "3"
        async with await store_target.open() as store:  # the station's close wrote it once the lock went
            assert len(await store.list_calls()) == 1
    assert "an audit record was not written within 0.05 s; answering without waiting" in caplog.text


async def test_a_failing_store_still_answers_a_remote_call_at_once(
    store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit, "AUDIT_WAIT_S", FOREVER_S)  # the failed write, not the bound, releases the answer

    async def execute(store: Store, statement: str) -> None:
        async with store.engine.begin() as connection:
            await connection.execute(sa.text(statement))

    with anyio.fail_after(START_TIMEOUT_S):
        async with station_on(store_target) as (station, store):
            await execute(store, "ALTER TABLE call_audit RENAME TO call_audit_away")
            with caplog.at_level(logging.ERROR, logger="mcpstation.pipeline.audit"):
                result = await station.call_tool("mcp_d_add", {"a": 1, "b": 2}, caller=caller(Face.GATEWAY))
            assert result.ok and result.text == "3"
            await execute(store, "ALTER TABLE call_audit_away RENAME TO call_audit")
            assert (await station.call_tool("mcp_d_add", {"a": 2, "b": 2}, caller=caller(Face.GATEWAY))).ok
            assert [call.arguments for call in await store.list_calls()] == [{"a": 2, "b": 2}]  # not retried
    assert "could not write an audit record for d/add (tools/call, in a batch of 1)" in caplog.text
