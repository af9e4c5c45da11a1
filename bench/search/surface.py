"""The LLM surface in a running station: what the catalog costs a model with and without tool search, how long
the live index takes to catch up after start-up (off the event loop: the loop's worst lag is measured beside it),
and what a `mcp_search_tools` call costs end to end against a direct tool call.

    .venv/bin/python bench/search/surface.py               # the 19 stored servers (190 real tools)
    .venv/bin/python bench/search/surface.py --tools 10000  # one in-process server with 10,000 generated tools
    .venv/bin/python bench/search/surface.py --lexical      # with the `search` extra installed: never embed

Servers are in process (the SDK's memory transport), so the figures are the station's own cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from mcpstation import Caller, Face, InProcessServerSpec, Role, Station, StationConfig

SERVERS = Path(__file__).resolve().parent / "servers"
USER = Caller("bench", Role.USER, Face.LLM)
CALLS = 30  # timed calls of each kind
LAG_TICK_S = 0.005  # the loop-lag probe's sleep


def _server(name: str, tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server(name, version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def stored() -> list[InProcessServerSpec]:
    specs = []
    for path in sorted(SERVERS.glob("*.json")):
        record = json.loads(path.read_text())
        tools = [types.Tool.model_validate(t).model_copy(update={"output_schema": None}) for t in record["tools"]]
        specs.append(InProcessServerSpec(name=record["server"], server=_server(record["server"], tools)))
    return specs


def generated(count: int) -> list[InProcessServerSpec]:
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": "The record's id."}}}
    words = ["invoice", "customer", "shipment", "ticket", "report", "account", "order", "payment", "device", "user"]
    verbs = ["create", "read", "update", "delete", "list", "archive", "export", "sync", "approve", "merge"]
    tools = [
        types.Tool(
            name=f"{verbs[i % 10]}_{words[(i // 10) % 10]}_{i}",
            description=f"{verbs[i % 10].title()} a {words[(i // 10) % 10]} (variant {i}).",
            input_schema=schema,
        )
        for i in range(count)
    ]
    return [InProcessServerSpec(name="big", server=_server("big", tools))]


async def main(tools: int, lexical: bool) -> None:
    specs = generated(tools) if tools else stored()
    lags: list[tuple[float, float]] = []  # (when, lag)
    stop = anyio.Event()

    async def probe() -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await anyio.sleep(LAG_TICK_S)
            lags.append((before, time.perf_counter() - before - LAG_TICK_S))

    settings = {"startup_timeout_s": 300, "server_startup_timeout_s": 300, "max_list_pages": 1000}
    async with anyio.create_task_group() as group:
        group.start_soon(probe)
        started = time.perf_counter()
        async with Station(StationConfig(servers=specs, station=settings)) as station:
            if lexical:
                station.live_catalog.index.want_hybrid = lambda: None  # type: ignore[method-assign]  # bench only
            up = time.perf_counter()
            entered = up - started
            cpu = time.process_time()
            await station.live_catalog.index.wait_current(600)
            current = time.perf_counter()
            caught_up = current - started
            index_cpu = time.process_time() - cpu
            totals = station.requests.surface_totals(USER)
            assert totals is not None
            first = next(iter(station.catalog.tools))
            query = {"query": "export the customer invoices" if tools else "把北京时间下午三点换算成纽约时间"}
            search, direct = [], []
            for _ in range(CALLS):
                t = time.perf_counter()
                await station.call_tool("mcp_search_tools", query, caller=USER)
                search.append(time.perf_counter() - t)
                t = time.perf_counter()
                await station.call_tool(first, {}, caller=USER)
                direct.append(time.perf_counter() - t)
        stop.set()
    print(totals.line())
    print(f"entry {entered:.2f} s; index current {caught_up:.2f} s after start (CPU since entry {index_cpu:.2f} s)")
    indexing = sorted(lag for when, lag in lags if up <= when <= current) or [0.0]
    print(
        f"event loop while the index caught up: {len(indexing)} ticks, worst lag {indexing[-1] * 1000:.0f} ms, "
        f"median {statistics.median(indexing) * 1000:.1f} ms"
    )
    med_search, med_direct = statistics.median(search), statistics.median(direct)
    print(
        f"mcp_search_tools median {med_search * 1000:.1f} ms, direct call median {med_direct * 1000:.1f} ms "
        f"(ratio {med_search / med_direct:.1f}x, {CALLS} each, interleaved)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=0, help="one generated server with this many tools")
    parser.add_argument("--lexical", action="store_true", help="never load the embedding model")
    arguments = parser.parse_args()
    anyio.run(main, arguments.tools, arguments.lexical)
