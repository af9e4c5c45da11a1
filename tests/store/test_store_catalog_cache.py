"""The catalog cache in the store: one row per server, read all at once, replaced by a newer listing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcpstation.store import CachedCatalog, Store

pytestmark = pytest.mark.anyio

LISTING = {
    "tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}],
    "prompts": [],
    "resources": [{"uri": "file:///readme", "name": "readme"}],
    "templates": [],
}


def entry(server: str, digest: str, *, ttl_ms: int | None = None, at: datetime | None = None) -> CachedCatalog:
    return CachedCatalog(
        server=server,
        spec_hash="a" * 64,
        digest=digest,
        listing=LISTING,
        session={"protocol_version": "2025-11-25", "server_name": "tiny", "instructions": "中文说明"},
        ttl_ms=ttl_ms,
        listed_at=at or datetime.now(UTC),
    )


async def test_cached_listings_are_read_back_as_written(store: Store) -> None:
    listed_at = datetime.now(UTC).replace(microsecond=0)
    await store.set_catalog(entry("one", "1" * 64, ttl_ms=60_000, at=listed_at))
    await store.set_catalog(entry("two", "2" * 64))
    rows = await store.get_catalogs()
    assert sorted(rows) == ["one", "two"]
    one = rows["one"]
    assert one.listing == LISTING and one.session["instructions"] == "中文说明"
    assert one.ttl_ms == 60_000 and one.listed_at == listed_at and rows["two"].ttl_ms is None


async def test_a_newer_listing_replaces_the_row_and_a_delete_forgets_it(store: Store) -> None:
    earlier = datetime.now(UTC) - timedelta(hours=1)
    await store.set_catalog(entry("one", "1" * 64, ttl_ms=5, at=earlier))
    await store.set_catalog(entry("one", "9" * 64))
    [row] = (await store.get_catalogs()).values()
    assert row.digest == "9" * 64 and row.ttl_ms is None and row.listed_at > earlier
    assert await store.delete_catalog("one") is True
    assert await store.delete_catalog("one") is False
    assert await store.get_catalogs() == {}


async def test_pins_of_many_servers_are_read_in_one_call(store: Store) -> None:
    await store.set_pins("a", {"x": "f1", "y": "f2"}, approve_new=True)
    await store.set_pins("b", {"x": "f3"})
    pins = await store.get_pins_of(["a", "b", "c"])
    assert sorted(pins["a"]) == ["x", "y"] and pins["b"]["x"].fingerprint == "f3" and pins["c"] == {}
    assert pins["a"]["x"].is_approved and not pins["b"]["x"].is_approved
