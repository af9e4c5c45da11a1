"""The change log: every durable change appends one numbered row in its own transaction, a refused
change appends none, and concurrent writers' rows become visible in number order (a reader that
follows the log never skips one)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from store_helpers import StoreTarget

from mcpstation.config.models import StdioServerSpec
from mcpstation.errors import StoreConflict, StoreError
from mcpstation.store import ChangeKind, Store

pytestmark = pytest.mark.anyio

WRITERS = 4
WRITES_EACH = 10
FOLLOW_TIMEOUT_S = 60.0
POLL_WAIT_S = 0.5  # SQLite: only the timeout wakes it
SIGNAL_WAIT_S = 20.0  # a wait the notification must cut short (a loaded machine delivers it in well under this)


async def test_every_durable_change_appends_one_row_in_order(store: Store) -> None:
    spec = StdioServerSpec(name="srv", command="uvx", args=["mcp-server-time"])
    await store.add_dynamic_server(spec, actor="alice")
    await store.update_dynamic_server("srv", actor="alice", enabled=False)
    await store.update_dynamic_server("srv", actor="alice", enabled=True, status="pending_approval")
    await store.update_dynamic_server("srv", actor="alice", status="active")
    await store.record_action("reload", actor="alice", server="srv")
    await store.record_action("reconnect", actor="alice", server="srv")  # not a durable change
    await store.set_pin("srv", "now", "fp-1")
    await store.approve_pin("srv", "now", actor="alice")
    await store.create_token("ci", "user", actor="alice")
    await store.revoke_token("ci", actor="alice")
    await store.remove_dynamic_server("srv", actor="alice")

    changes = await store.read_changes(0)
    assert [(c.kind, c.subject, c.tool) for c in changes] == [
        (ChangeKind.SERVER_ADDED, "srv", None),
        (ChangeKind.SERVER_DISABLED, "srv", None),
        (ChangeKind.SERVER_ENABLED, "srv", None),
        (ChangeKind.SERVER_SUSPENDED, "srv", None),
        (ChangeKind.SERVER_APPROVED, "srv", None),
        (ChangeKind.SERVER_RELOADED, "srv", None),
        (ChangeKind.PIN_APPROVED, "srv", "now"),
        (ChangeKind.TOKEN_CREATED, "ci", None),
        (ChangeKind.TOKEN_REVOKED, "ci", None),
        (ChangeKind.SERVER_REMOVED, "srv", None),
    ]
    ids = [c.id for c in changes]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {c.origin for c in changes} == {store.replica_id}
    assert await store.last_change_id() == ids[-1]
    assert await store.read_changes(ids[3], limit=2) == changes[4:6]


async def test_a_refused_change_appends_nothing(store: Store) -> None:
    spec = StdioServerSpec(name="srv", command="uvx")
    await store.add_dynamic_server(spec, actor="alice")
    await store.create_token("ci", "user")
    before = await store.last_change_id()
    with pytest.raises(StoreConflict) as taken:
        await store.add_dynamic_server(spec, actor="bob")
    assert taken.value.name == "srv"
    with pytest.raises(StoreConflict):
        await store.create_token("ci", "admin")
    with pytest.raises(StoreError):
        await store.remove_dynamic_server("missing", actor="bob")
    assert await store.last_change_id() == before
    assert len(await store.read_changes(0)) == 2


async def test_concurrent_writers_rows_become_visible_in_number_order(store_target: StoreTarget) -> None:
    stores = [await store_target.open() for _ in range(2)]
    try:
        seen: list[int] = []
        done = anyio.Event()

        async def write(store: Store, writer: int) -> None:
            for index in range(WRITES_EACH):
                await store.create_token(f"w{writer}-{index}", "user")

        async def follow(store: Store) -> None:
            # A follower reads after the last number it saw; a row committed later with a lower
            # number would be skipped for ever. None may be.
            while True:
                finished = done.is_set()
                seen.extend(change.id for change in await store.read_changes(seen[-1] if seen else 0))
                if finished:
                    return
                await anyio.lowlevel.checkpoint()

        with anyio.fail_after(FOLLOW_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                group.start_soon(follow, stores[0])
                async with anyio.create_task_group() as writers:
                    for writer in range(WRITERS):
                        writers.start_soon(write, stores[writer % 2], writer)
                done.set()
        every = [change.id for change in await stores[1].read_changes(0, limit=WRITERS * WRITES_EACH + 1)]
        assert len(every) == WRITERS * WRITES_EACH
        assert seen == every
    finally:
        for store in stores:
            await store.aclose()


async def test_a_change_wakes_a_listener_on_postgresql_and_the_timeout_wakes_it_on_sqlite(
    store_target: StoreTarget,
) -> None:
    listener, writer = await store_target.open(), await store_target.open()
    try:
        async with listener.change_signal() as signal:
            assert signal.listens == (store_target.backend == "postgresql")
            timeout_s = SIGNAL_WAIT_S if signal.listens else POLL_WAIT_S
            with anyio.fail_after(SIGNAL_WAIT_S * 2):
                async with anyio.create_task_group() as group:
                    group.start_soon(writer.create_token, "wake", "user")
                    started = anyio.current_time()
                    await signal.wait(timeout_s)
                    waited = anyio.current_time() - started
        if signal.listens:
            assert waited < SIGNAL_WAIT_S  # the NOTIFY, not the timeout
        else:
            assert waited >= POLL_WAIT_S * 0.9
        assert [change.subject for change in await listener.read_changes(0)] == ["wake"]
    finally:
        await listener.aclose()
        await writer.aclose()
