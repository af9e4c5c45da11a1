"""Call and management audit: what is recorded, what is kept, how it is listed."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from store_helpers import StoreTarget

from mcpstation.errors import StoreError, UsageError
from mcpstation.outcomes import Outcome
from mcpstation.store import CallEntry, Store

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
