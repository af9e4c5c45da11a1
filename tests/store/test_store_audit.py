"""Call and management audit: what is recorded, what is kept, how it is listed."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from store_helpers import StoreTarget

from mcpstation.errors import StoreError, UsageError
from mcpstation.outcomes import Outcome
from mcpstation.store import CallEntry, CallPrincipal, Store
from mcpstation.store._call_rows import ROWS_PER_INSERT, sqlite_inserts
from mcpstation.store._schema import call_audit

pytestmark = pytest.mark.anyio


async def test_call_records_size_and_hash_of_canonical_arguments(store: Store) -> None:
    record = await store.record_call(
        "github", "search_issues", outcome="ok", duration_s=0.25, caller="agent-1", arguments={"q": "bug", "n": 3}
    )

    canonical = b'{"n":3,"q":"bug"}'
    assert record.argument_bytes == len(canonical)
    assert record.argument_sha256 == hashlib.sha256(canonical).hexdigest()
    assert record.arguments is None  # not kept unless configured
    (listed,) = await store.list_calls()
    assert listed == record
    reordered = {"n": 3, "q": "bug"}
    same = await store.record_call("github", "search_issues", outcome="ok", duration_s=0.1, arguments=reordered)
    assert same.argument_sha256 == record.argument_sha256


async def test_arguments_are_kept_only_when_configured(store_target: StoreTarget) -> None:
    async with await store_target.open(keep_call_arguments=True) as store:
        await store.record_call("fs", "read", outcome="ok", duration_s=0.01, arguments={"path": "/tmp/x"})
        (listed,) = await store.list_calls()
    assert listed.arguments == {"path": "/tmp/x"}


async def test_calls_list_newest_first_filtered_by_server_and_time(store: Store) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for minute, server in enumerate(["a", "b", "a", "a"]):
        await store.record_call(server, "t", outcome="ok", duration_s=0.0, at=start + timedelta(minutes=minute))

    calls = await store.list_calls("a")
    assert [call.at for call in calls] == [start + timedelta(minutes=m) for m in (3, 2, 0)]
    recent = await store.list_calls(since=start + timedelta(minutes=2))
    assert [call.server for call in recent] == ["a", "a"]
    assert len(await store.list_calls(limit=1)) == 1


async def test_failed_call_keeps_outcome_and_cut_error_text(store: Store) -> None:
    record = await store.record_call("a", "t", outcome="timeout", duration_s=60.0, error="x" * 10_000)

    assert record.outcome == "timeout"
    assert record.error is not None and len(record.error) == 4000
    (listed,) = await store.list_calls()
    assert listed.error == record.error and listed.duration_s == 60.0


async def test_unknown_outcome_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="outcome"):
        await store.record_call("a", "t", outcome="maybe", duration_s=0.0)  # type: ignore[arg-type]


async def test_calls_recorded_together_are_kept_in_order_in_one_transaction(store: Store) -> None:
    entries = [CallEntry("s", "add", Outcome.OK, 0.01, caller="bot", arguments={"n": n}) for n in range(50)]

    records = await store.record_calls(entries)

    assert [r.argument_sha256 for r in records] == [
        hashlib.sha256(f'{{"n":{n}}}'.encode()).hexdigest() for n in range(50)
    ]
    ids = [r.id for r in records]
    assert ids == sorted(ids) and len(set(ids)) == 50
    assert tuple(reversed(await store.list_calls(limit=100))) == records
    if store.engine.dialect.name == "postgresql":  # every row carries the id of the transaction that wrote it
        async with store.engine.connect() as connection:
            writers = await connection.scalar(sa.text("SELECT count(DISTINCT xmin::text) FROM call_audit"))
        assert writers == 1
    assert await store.record_calls(()) == ()


async def test_a_batch_the_database_refuses_writes_none_of_its_calls(store: Store) -> None:
    good = CallEntry("s", "add", Outcome.OK, 0.01)
    refused = CallEntry(None, "add", Outcome.OK, 0.01)  # type: ignore[arg-type]  # server is NOT NULL

    with pytest.raises(StoreError, match="auditing 3 calls failed"):
        await store.record_calls([good, good, refused])

    assert await store.list_calls() == ()


async def test_recorded_action_is_listed(store: Store) -> None:
    action = await store.record_action("reload", actor="cli", server="github", detail={"reason": "config changed"})

    (listed,) = await store.list_actions(server="github")
    assert listed == action
    assert listed.detail == {"reason": "config changed"}
    assert await store.list_actions(server="other") == ()


@pytest.mark.parametrize("keep_arguments", [False, True])
async def test_written_calls_read_back_as_recorded_ones(store_target: StoreTarget, keep_arguments: bool) -> None:
    """`write_calls` (the audit trail's batches; plain rows to the driver on SQLite) stores what
    `record_calls` stores: every column reads back equal, the id aside."""
    who = CallPrincipal("https://idp.example", "alice", client_id="cli", token_id="t1")
    entries = [
        CallEntry("s", "add", Outcome.OK, 0.01, caller="bot", arguments={"n": 1, "é": [1.5, None]},
                  at=datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC), upstream="none python"),
        CallEntry("s", "add", Outcome.TOOL_ERROR, 2.0, error="x" * 5000, kind="tools/call", principal=who,
                  via="code", run_id="r" * 300, at=datetime(2026, 3, 1, 13, 0, 0, 5, tzinfo=timedelta_zone(2))),
        CallEntry("s", "read", Outcome.CANCELLED, 0.0, arguments=None),
    ]  # fmt: skip
    async with await store_target.open(keep_call_arguments=keep_arguments) as store:
        recorded = await store.record_calls(entries)
        await store.write_calls(entries)
        listed = sorted(await store.list_calls(limit=10), key=lambda record: record.id)

    assert listed[: len(entries)] == list(recorded)
    written = listed[len(entries) :]
    unstamped = len(entries) - 1  # no `at`: stamped when written, so the two differ there
    assert [replace(r, id=0) for r in written[:unstamped]] == [replace(r, id=0) for r in recorded[:unstamped]]
    assert replace(written[-1], id=0, at=recorded[-1].at) == replace(recorded[-1], id=0)
    assert written[-1].at >= recorded[-1].at
    assert written[1].at == datetime(2026, 3, 1, 11, 0, 0, 5, tzinfo=UTC)
    assert written[1].error == "x" * 4000 and written[1].run_id == "r" * 200
    assert written[0].arguments == ({"n": 1, "é": [1.5, None]} if keep_arguments else None)


def timedelta_zone(hours: int) -> tzinfo:
    return timezone(timedelta(hours=hours))


async def test_a_written_batch_larger_than_one_insert_keeps_every_call_in_order(store: Store) -> None:
    count = 3 * ROWS_PER_INSERT + 1  # SQLite: several multi-row statements in one transaction
    entries = [CallEntry("s", "add", Outcome.OK, 0.01, arguments={"n": n}) for n in range(count)]

    await store.write_calls(entries)

    listed = sorted(await store.list_calls(limit=count + 1), key=lambda record: record.id)
    assert [r.argument_sha256 for r in listed] == [
        hashlib.sha256(f'{{"n":{n}}}'.encode()).hexdigest() for n in range(count)
    ]


@pytest.mark.parametrize(
    "at",
    [datetime(2026, 3, 1, 11, 0, 0, 5, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC), datetime(999, 1, 1, tzinfo=UTC)],
)
def test_a_written_time_is_stored_as_the_sqlite_dialect_stores_it(at: datetime) -> None:
    dialect = sqlite.dialect()
    process = call_audit.c.at.type.dialect_impl(dialect).bind_processor(dialect)
    (_, values), *_ = sqlite_inserts([CallEntry("s", "t", Outcome.OK, 0.0, at=at)], keep_arguments=False)

    assert values[0] == process(at)
