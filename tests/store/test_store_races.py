"""Writes that race, on both databases: several stores (each its own connections, as several stations
are) write the same thing at once; every idempotent write succeeds once in the table, every
exclusive one succeeds exactly once and the others fail with a clear `StoreError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TypeVar

import anyio
import anyio.lowlevel
import pytest
import sqlalchemy as sa
from store_helpers import StoreTarget

from mcpstation.config.models import StdioServerSpec
from mcpstation.errors import StoreError
from mcpstation.store import Store
from mcpstation.store._schema import tool_pins

pytestmark = pytest.mark.anyio

WRITERS = 8  # stores writing at once: each has its own pool, so the writes really overlap on PostgreSQL
RACE_TIMEOUT_S = 60.0  # bound on one race on a loaded 2-core machine (SQLite writers queue on its lock)
T = TypeVar("T")


@asynccontextmanager
async def stores(target: StoreTarget, count: int = WRITERS) -> AsyncIterator[list[Store]]:
    async with AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(await target.open()) for _ in range(count)]
        yield opened


async def race(calls: list[Callable[[], Awaitable[T]]]) -> list[T | StoreError]:
    """Run every call at once (released together); each call's result, or the `StoreError` it raised."""
    results: list[T | StoreError] = []
    go = anyio.Event()

    async def one(call: Callable[[], Awaitable[T]]) -> None:
        await go.wait()
        try:
            results.append(await call())
        except StoreError as exc:
            results.append(exc)

    with anyio.fail_after(RACE_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(one, call)
            await anyio.lowlevel.checkpoint()
            go.set()
    return results


def failures(results: list[object]) -> list[StoreError]:
    return [result for result in results if isinstance(result, StoreError)]


async def test_first_use_pins_of_one_tool_written_at_once_all_succeed(store_target: StoreTarget) -> None:
    async with stores(store_target) as writers:
        results = await race([lambda s=s: s.set_pin("d1", "random_number", "sha:1", approved=True) for s in writers])

        assert failures(results) == []
        assert {(pin.fingerprint, pin.is_approved) for pin in results} == {("sha:1", True)}  # type: ignore[union-attr]
        assert [(p.tool, p.fingerprint) for p in await writers[0].list_pins()] == [("random_number", "sha:1")]


async def test_a_listings_pins_written_at_once_by_every_store_leave_one_row_per_tool(
    store_target: StoreTarget,
) -> None:
    listing = {f"tool_{i:04}": f"sha:{i}" for i in range(500)}
    async with stores(store_target) as writers:
        results = await race([lambda s=s: s.set_pins("big", listing, approve_new=True) for s in writers])

        assert failures(results) == []
        for pins in results:
            assert {tool: pin.fingerprint for tool, pin in pins.items()} == listing  # type: ignore[union-attr]
            assert all(pin.is_approved for pin in pins.values())  # type: ignore[union-attr]
        async with writers[0].engine.connect() as connection:
            rows = (await connection.execute(sa.select(sa.func.count()).select_from(tool_pins))).scalar_one()
        assert rows == len(listing)


async def test_set_pins_pins_new_tools_replaces_changed_ones_and_keeps_the_rest(store: Store) -> None:
    first = await store.set_pins("s", {"a": "1", "b": "2"}, approve_new=True)
    assert {t: (p.fingerprint, p.is_approved) for t, p in first.items()} == {"a": ("1", True), "b": ("2", True)}

    again = await store.set_pins("s", {"a": "1", "b": "changed", "c": "3"})

    assert again["a"] == first["a"]  # same fingerprint: untouched, still approved, same first_seen
    assert (again["b"].fingerprint, again["b"].is_approved) == ("changed", False)
    assert again["b"].first_seen >= first["b"].first_seen
    assert (again["c"].fingerprint, again["c"].is_approved) == ("3", False)  # approve_new not given
    assert await store.get_pins("s") == again
    assert await store.get_pins("other") == {}
    assert await store.set_pins("s", {}) == again


async def test_two_tokens_of_one_name_created_at_once_one_wins(store_target: StoreTarget) -> None:
    async with stores(store_target) as writers:
        results = await race([lambda s=s: s.create_token("ci", "admin") for s in writers])

        lost = failures(results)
        assert len(lost) == WRITERS - 1
        assert all("an API token named 'ci' exists" in str(exc) for exc in lost)
        assert [token.name for token in await writers[0].list_tokens()] == ["ci"]
        assert [a.action for a in await writers[0].list_actions()] == ["create_token"]


async def test_a_token_revoked_at_once_by_everyone_is_revoked_and_audited_once(store_target: StoreTarget) -> None:
    async with stores(store_target) as writers:
        await writers[0].create_token("ci", "user")
        results = await race([lambda s=s: s.revoke_token("ci", actor="ops") for s in writers])

        assert len(failures(results)) == WRITERS - 1
        assert all("no API token named 'ci'" in str(exc) for exc in failures(results))
        assert [a.action for a in await writers[0].list_actions()] == ["revoke_token", "create_token"]


async def test_one_dynamic_server_added_and_removed_at_once_happens_once(store_target: StoreTarget) -> None:
    spec = StdioServerSpec(name="extra", command="uvx", args=("mcp-server-time",))
    async with stores(store_target) as writers:
        added = await race([lambda s=s: s.add_dynamic_server(spec, actor="alice") for s in writers])
        assert len(failures(added)) == WRITERS - 1
        assert all("already exists" in str(exc) for exc in failures(added))

        removed = await race([lambda s=s: s.remove_dynamic_server("extra", actor="bob") for s in writers])
        assert len(failures(removed)) == WRITERS - 1
        assert all("no dynamic server named 'extra'" in str(exc) for exc in failures(removed))

        assert await writers[0].list_dynamic_servers() == ()
        assert [(a.action, a.actor) for a in await writers[0].list_actions()] == [("remove", "bob"), ("add", "alice")]


async def test_oauth_tokens_and_client_written_at_once_for_a_new_server_both_land(store_target: StoreTarget) -> None:
    url = "https://mcp.example/mcp"
    async with stores(store_target, 2) as (first, second):
        results = await race([
            lambda: first.set_oauth_tokens("remote", url, {"access_token": "a"}, None),
            lambda: second.set_oauth_client("remote", url, {"client_id": "c"}),
        ])  # fmt: skip

        assert failures(results) == []
        kept = await first.get_oauth("remote")
        assert kept is not None
        assert (kept.tokens, kept.client_info) == ({"access_token": "a"}, {"client_id": "c"})


async def test_oauth_credentials_for_another_url_are_replaced_not_merged(store: Store) -> None:
    await store.set_oauth_tokens("remote", "https://old.example/mcp", {"access_token": "old"}, None)
    await store.set_oauth_client("remote", "https://old.example/mcp", {"client_id": "old"})

    await store.set_oauth_client("remote", "https://new.example/mcp", {"client_id": "new"})

    kept = await store.get_oauth("remote")
    assert kept is not None and kept.server_url == "https://new.example/mcp"
    assert (kept.tokens, kept.client_info) == (None, {"client_id": "new"})


async def test_audit_records_written_at_once_are_all_kept(store_target: StoreTarget) -> None:
    async with stores(store_target) as writers:
        results = await race([
            lambda s=s, i=i: s.record_call("d1", "add", outcome="ok", duration_s=0.01, arguments={"i": i})
            for i, s in enumerate(writers * 4)
        ])  # fmt: skip

        assert failures(results) == []
        assert len({record.id for record in results}) == WRITERS * 4  # type: ignore[union-attr]
        assert len(await writers[0].list_calls(limit=1000)) == WRITERS * 4
