"""Lazy servers: the catalog from the cache before the server runs, started by the first request,
stopped when unused, refreshed when its listing changed; start-ups bounded in number."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server, ServerRequestContext
from mcp.server.caching import CacheHint
from station_helpers import START_TIMEOUT_S, inproc, tiny

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState
from mcpstation.outcomes import Outcome
from mcpstation.status import ServerState
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

WAIT_S = 20.0
WATCHED = "res://watched"  # bound on waiting for a state or a catalog change on a loaded machine


class CountedServer:
    """An in-process server whose tool names can change between runs; it counts its starts, and its
    `hold` tool answers only once `release` is set."""

    def __init__(
        self, *tools: str, start_delay_s: float = 0.0, ttl_ms: int | None = None, starts_allowed: int | None = None
    ) -> None:
        self.tools = list(tools)
        self.ttl_ms = ttl_ms  # the `tools/list` cache hint it sends
        self.starts_allowed = starts_allowed  # starts after this many fail
        self.starts = 0
        self.starting = 0  # runs between their start and the end of their start-up delay
        self.most_starting = 0
        self.start_delay_s = start_delay_s  # a slow start-up, in the server itself
        self.release = anyio.Event()

    def build(self) -> Server[Any]:
        @asynccontextmanager
        async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
            self.starts += 1
            if self.starts_allowed is not None and self.starts > self.starts_allowed:
                raise RuntimeError("the counted server refuses to start again")
            self.starting += 1
            self.most_starting = max(self.most_starting, self.starting)
            try:
                await anyio.sleep(self.start_delay_s)
            finally:
                self.starting -= 1
            yield {}

        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in self.tools]
            )

        async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            if params.name == "hold":
                await self.release.wait()
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

        async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=[types.Resource(uri=WATCHED, name="watched")])

        async def subscription(ctx: ServerRequestContext[Any, Any], params: Any) -> types.EmptyResult:
            return types.EmptyResult()

        hints = {"tools/list": CacheHint(ttl_ms=self.ttl_ms)} if self.ttl_ms is not None else None
        return Server(
            "counted",
            version="1",
            lifespan=lifespan,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_subscribe_resource=subscription,
            on_unsubscribe_resource=subscription,
            cache_hints=hints,
        )


def lazy_config(
    server: CountedServer, protocol: str = "auto", *, policy: dict[str, Any] | None = None, **station: Any
) -> StationConfig:
    return StationConfig(
        servers=[inproc("lazy", server=server.build(), start="lazy", protocol=protocol)],
        station={"health_interval_s": 0, **station},
        policy=policy or {},
    )


async def open_store(tmp_path: Path) -> Store:
    return await Store.open(data_dir=tmp_path / "data")


def tool_names(station: Station) -> set[str]:
    return {tool.tool for tool in station.tools if tool.server == "lazy"}


async def fill_cache(store: Store, server: CountedServer, protocol: str = "auto") -> None:
    """A first run: the server was never listed, so it starts at boot whatever its mode."""
    async with Station(lazy_config(server, protocol), store=store) as station:
        assert station.connection("lazy").state is ConnectionState.READY
    assert server.starts == 1


async def test_lazy_server_never_listed_starts_at_boot_then_serves_its_catalog_from_the_cache(tmp_path: Path):
    server = CountedServer("alpha", "beta")
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            async with Station(lazy_config(server), store=store) as station:
                assert server.starts == 1  # not started again: its catalog is the cached one
                assert tool_names(station) == {"alpha", "beta"}
                [status] = [s for s in station.status().servers if s.name == "lazy"]
                assert status.state is ServerState.IDLE and status.tools == 2 and status.server_name == "counted"


async def test_first_call_starts_a_lazy_server_once_and_runs(tmp_path: Path):
    server = CountedServer("alpha", "beta")
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            async with Station(lazy_config(server), store=store) as station:
                async with anyio.create_task_group() as group:  # three requests at once: one start
                    results: list[Any] = []

                    async def call(tool: str) -> None:
                        results.append(await station.call_tool(f"mcp_lazy_{tool}", {}))

                    for tool in ("alpha", "beta", "alpha"):
                        group.start_soon(call, tool)
                assert [r.outcome for r in results] == [Outcome.OK] * 3
                assert sorted(r.text for r in results) == ["ran alpha", "ran alpha", "ran beta"]
                assert server.starts == 2 and station.connection("lazy").state is ConnectionState.READY
                assert (await station.call_tool("mcp_lazy_beta", {})).ok and server.starts == 2


async def test_unused_lazy_server_is_stopped_but_never_during_a_request(tmp_path: Path):
    server = CountedServer("alpha", "hold")
    idle_s = 0.3
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            async with Station(lazy_config(server, idle_stop_s=idle_s), store=store) as station:
                connection = station.connection("lazy")
                async with anyio.create_task_group() as group:
                    held: list[Any] = []

                    async def hold() -> None:
                        held.append(await station.call_tool("mcp_lazy_hold", {}))

                    group.start_soon(hold)
                    with anyio.fail_after(WAIT_S):
                        await connection.wait_for_state(ConnectionState.READY)
                    await anyio.sleep(idle_s * 4)  # time passes with the request open
                    assert connection.state is ConnectionState.READY
                    server.release.set()
                assert held[0].ok
                with anyio.fail_after(WAIT_S):  # unused from then on: back to IDLE, catalog kept
                    await connection.wait_for_state(ConnectionState.IDLE)
                assert tool_names(station) == {"alpha", "hold"} and connection.pid is None
                assert (await station.call_tool("mcp_lazy_alpha", {})).text == "ran alpha"
                assert server.starts == 3


async def test_an_open_subscription_keeps_a_lazy_server_running(tmp_path: Path):
    server = CountedServer("alpha")
    idle_s = 0.3
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server, "legacy")  # subscriptions need a handshake-era session
            async with Station(lazy_config(server, "legacy", idle_stop_s=idle_s), store=store) as station:
                connection = station.connection("lazy")
                assert connection.state is ConnectionState.IDLE
                assert (await station.subscribe_resource(WATCHED)).ok  # starts it
                await anyio.sleep(idle_s * 4)  # time passes with the subscription open
                assert connection.state is ConnectionState.READY and server.starts == 2
                assert (await station.unsubscribe_resource(WATCHED)).ok
                with anyio.fail_after(WAIT_S):
                    await connection.wait_for_state(ConnectionState.IDLE)


async def test_listing_changed_since_the_cache_is_swapped_in_with_pins_checked(tmp_path: Path):
    server = CountedServer("alpha", "beta")
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            server.tools = ["alpha", "gamma"]  # the server changed between runs
            async with Station(lazy_config(server), store=store) as station:
                assert tool_names(station) == {"alpha", "beta"}  # what it listed last time
                with station.events.subscribe() as events:
                    assert (await station.call_tool("mcp_lazy_alpha", {})).ok
                    assert tool_names(station) == {"alpha", "gamma"}  # swapped in as it became ready
                    assert (await station.call_tool("mcp_lazy_gamma", {})).text == "ran gamma"
                    with anyio.fail_after(WAIT_S):  # the watcher checks the pins, then announces the change
                        async for event in events:
                            if event.kind == "catalog" and "gamma" in await store.get_pins("lazy"):
                                break
                assert set(await store.get_pins("lazy")) == {"alpha", "beta", "gamma"}
            async with Station(lazy_config(server), store=store) as station:  # the cache holds the new listing
                assert station.connection("lazy").state is ConnectionState.IDLE
                assert tool_names(station) == {"alpha", "gamma"} and server.starts == 2


async def test_cached_tools_are_checked_against_their_pins_at_boot_in_block_mode(tmp_path: Path):
    server = CountedServer("alpha", "beta")
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            await store.set_pin("lazy", "beta", "another definition")  # beta's pin no longer matches
            async with Station(lazy_config(server, policy={"tool_pinning": "block"}), store=store) as station:
                assert station.connection("lazy").state is ConnectionState.IDLE
                assert tool_names(station) == {"alpha"}  # beta waits for a person's approval
                assert station.live_catalog.pins is not None and station.live_catalog.pins.drifted("lazy") == ["beta"]


async def test_a_changed_entry_does_not_use_the_listing_cached_for_the_old_one(tmp_path: Path):
    server = CountedServer("alpha")
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            changed = StationConfig(
                servers=[inproc("lazy", server=server.build(), start="lazy", protocol="legacy")],
                station={"health_interval_s": 0},
            )
            async with Station(changed, store=store) as station:
                assert station.connection("lazy").state is ConnectionState.READY and server.starts == 2


async def test_default_start_lazy_applies_to_servers_that_set_no_mode(tmp_path: Path):
    server = CountedServer("alpha")
    config = StationConfig(
        servers=[inproc("lazy", server=server.build())], station={"health_interval_s": 0, "default_start": "lazy"}
    )
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config, store=store):
                pass
            async with Station(config, store=store) as station:
                assert station.connection("lazy").state is ConnectionState.IDLE and server.starts == 1


async def test_listing_past_its_cache_hint_is_served_while_the_lazy_server_starts_at_boot(tmp_path: Path):
    server = CountedServer("alpha", ttl_ms=1)
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            async with Station(lazy_config(server), store=store) as station:
                assert tool_names(station) == {"alpha"}  # the cached catalog at once, started or not
                with anyio.fail_after(WAIT_S):
                    await station.connection("lazy").wait_for_state(ConnectionState.READY)
                assert server.starts == 2


async def test_listing_within_its_cache_hint_keeps_the_lazy_server_idle(tmp_path: Path):
    server = CountedServer("alpha", ttl_ms=3_600_000)
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            [row] = (await store.get_catalogs()).values()
            assert row.ttl_ms == 3_600_000
            async with Station(lazy_config(server), store=store) as station:
                assert station.connection("lazy").state is ConnectionState.IDLE and server.starts == 1


async def test_lazy_server_that_fails_to_start_answers_unavailable_and_leaves_the_catalog(tmp_path: Path):
    server = CountedServer("alpha", starts_allowed=1)
    async with await open_store(tmp_path) as store:
        with anyio.fail_after(START_TIMEOUT_S):
            await fill_cache(store, server)
            async with Station(lazy_config(server), store=store) as station:
                result = await station.call_tool("mcp_lazy_alpha", {})
                assert result.outcome is Outcome.UNAVAILABLE and "lazy" in (result.error or "")
                assert station.connection("lazy").state is ConnectionState.FAILED
                assert tool_names(station) == set()
                again = await station.call_tool("mcp_lazy_alpha", {})
                assert again.outcome is Outcome.UNAVAILABLE and server.starts == 2


async def test_eager_servers_start_no_more_than_max_concurrent_starts_at_once():
    server = CountedServer("alpha", start_delay_s=0.05)
    config = StationConfig(
        servers=[inproc(f"s{i}", server=server.build()) for i in range(12)],
        station={"health_interval_s": 0, "max_concurrent_starts": 3},
    )
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            assert all(c.state is ConnectionState.READY for c in station.connections.values())
            assert len(station.tools) == 12
    assert server.starts == 12 and 1 <= server.most_starting <= 3


async def test_servers_that_only_wait_before_initialize_lend_their_start_slot():
    delay_s, count = 3.0, 4
    config = StationConfig(
        servers=[tiny(f"w{i}", "--init-delay", str(delay_s)) for i in range(count)],
        station={"health_interval_s": 0, "max_concurrent_starts": 1},
    )
    started = time.perf_counter()
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            elapsed = time.perf_counter() - started
            assert all(c.state is ConnectionState.READY for c in station.connections.values())
            assert station.pool.start_slots.borrowed_tokens == 0
    # One slot, held through each wait, would take count * delay_s; lent, the waits overlap.
    assert elapsed < (count - 1) * delay_s, f"{count} waiting servers took {elapsed:.1f} s with one slot"
