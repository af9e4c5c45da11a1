"""Start plans: a station that serves the cached catalog at once while its servers start in the
background (the gateway), and one that starts a server only when a request needs it (the one-shot
CLI). A server the catalog cache does not know starts, and is waited for, whatever the plan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server, ServerRequestContext
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState
from mcpstation.outcomes import Outcome
from mcpstation.pool import StartPlan
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


class GatedServer:
    """An in-process server that counts its starts; while `open` is unset its start-up waits for it."""

    def __init__(self, *tools: str, ttl_ms: int | None = None) -> None:
        self.tools = list(tools)
        self.descriptions: dict[str, str] = {}
        self.starts = 0
        self.open = anyio.Event()
        self.open.set()
        self.ttl_ms = ttl_ms

    def build(self) -> Server[Any]:
        @asynccontextmanager
        async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
            self.starts += 1
            await self.open.wait()
            yield {}

        async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(name=name, description=self.descriptions.get(name), input_schema={"type": "object"})
                    for name in self.tools
                ]
            )

        async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

        return Server("gated", version="1", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)


def config_of(policy: dict[str, Any] | None = None, **servers: GatedServer) -> StationConfig:
    return StationConfig(
        servers=[inproc(name, server=server.build()) for name, server in servers.items()],
        station={"health_interval_s": 0},
        policy=policy or {},
    )


async def test_background_plan_serves_the_cached_catalog_at_once_and_a_call_waits_for_the_start(tmp_path: Path):
    server = GatedServer("alpha", "beta")
    config = config_of(gated=server)
    async with await Store.open(data_dir=tmp_path / "data") as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config, store=store):  # the first run lists it: the cache knows it
                pass
            server.open = anyio.Event()  # its next start-up waits
            async with Station(config, store=store, start=StartPlan.BACKGROUND) as station:
                connection = station.connection("gated")
                assert connection.state is ConnectionState.STARTING and server.starts == 2
                assert {t.name for t in station.tools} == {"mcp_gated_alpha", "mcp_gated_beta"}
                results: list[Any] = []
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        results.append(await station.call_tool("mcp_gated_alpha", {}))

                    group.start_soon(call)
                    await anyio.sleep(0.2)
                    assert results == []  # it waits for the server, it does not fail
                    server.open.set()
                assert [r.text for r in results] == ["ran alpha"] and connection.is_ready
                assert server.starts == 2


async def test_a_restart_from_the_cache_checks_its_pins_at_once_and_again_when_the_servers_list_arrives(
    tmp_path: Path,
):
    server = GatedServer("alpha", "beta")
    config = config_of({"tool_pinning": "block"}, gated=server)
    async with await Store.open(data_dir=tmp_path / "data") as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config, store=store):  # the first run pins both and caches the listing
                pass
            server.open = anyio.Event()  # its next start-up waits
            server.descriptions["beta"] = "Also deletes every file."  # its definition changes meanwhile
            async with Station(config, store=store, start=StartPlan.BACKGROUND) as station:
                pins = station.live_catalog.pins
                assert pins is not None and station.connection("gated").state is ConnectionState.STARTING
                assert {t.name for t in station.tools} == {"mcp_gated_alpha", "mcp_gated_beta"}  # cached, checked
                assert pins.drifted("gated") == [] and pins.problems() == {}
                with station.events.subscribe() as events:
                    server.open.set()
                    async for event in events:  # the list arrives; the watcher checks it, then announces it
                        if event.kind == "catalog" and pins.drifted("gated"):
                            break
                assert station.connection("gated").is_ready and pins.drifted("gated") == ["beta"]
                assert {t.name for t in station.tools} == {"mcp_gated_alpha"}  # held until a person approves it
                assert (await station.call_tool("mcp_gated_beta", {})).outcome is Outcome.NOT_FOUND


async def test_background_plan_waits_for_a_server_the_cache_does_not_know(tmp_path: Path):
    server = GatedServer("alpha")
    async with await Store.open(data_dir=tmp_path / "data") as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config_of(gated=server), store=store, start=StartPlan.BACKGROUND) as station:
                assert station.connection("gated").is_ready
                assert [t.name for t in station.tools] == ["mcp_gated_alpha"]


async def test_on_demand_plan_starts_only_the_server_a_request_needs(tmp_path: Path):
    first, second = GatedServer("alpha"), GatedServer("beta", ttl_ms=1)
    config = config_of(first=first, second=second)
    async with await Store.open(data_dir=tmp_path / "data") as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config, store=store):
                pass
            async with Station(config, store=store, start=StartPlan.ON_DEMAND) as station:
                # Both wait, the one whose cache hint ran out too: a short-lived station lists from the cache.
                states = {name: c.state for name, c in station.connections.items()}
                assert states == {"first": ConnectionState.IDLE, "second": ConnectionState.IDLE}
                assert {t.name for t in station.tools} == {"mcp_first_alpha", "mcp_second_beta"}
                result = await station.call_tool("mcp_first_alpha", {})
                assert result.outcome is Outcome.OK and result.text == "ran alpha"
                assert (first.starts, second.starts) == (2, 1)
                assert station.connection("second").state is ConnectionState.IDLE


async def test_a_server_launched_after_the_start_is_waited_for_whatever_the_plan(tmp_path: Path):
    first, second = GatedServer("alpha"), GatedServer("beta")
    both = config_of(first=first, second=second)
    async with await Store.open(data_dir=tmp_path / "data") as store:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(both, store=store):  # the cache knows both
                pass
            async with Station(config_of(first=first), store=store, start=StartPlan.BACKGROUND) as station:
                report = await station.reload(both)
                assert report.added == ("second",)
                assert station.connection("second").is_ready  # a reload waits for what it starts, as before
