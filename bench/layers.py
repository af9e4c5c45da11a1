"""Where a station call's extra client CPU goes, layer by layer, and what start-up spends on the catalog.

    python bench/layers.py [--rounds R]

Part 1 peels the call path on one live station: the SDK `Client` the station holds, called
directly (with and without the per-call `read_timeout_seconds` the station always passes), then
`ServerConnection.request` (a `CallTool` operation), then `Station.call_tool`; a separate raw `Client` is the baseline.
Each figure is client CPU per call (time.process_time), the minimum over R rounds: the server runs
in another process, and the minimum is the figure least disturbed by other load on the machine.

Part 2 counts `Catalog.build` calls and the tool entries they process while 20 servers with 100
tools each start, and times them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from harness import calls_per_second, list_all_tools, station_config, tiny_params, tiny_spec
from mcp.client import Client

from mcpstation import Station
from mcpstation.catalog import catalog as catalog_module
from mcpstation.connection.operations import CallTool

SEQUENTIAL_CALLS = 400
IN_FLIGHT_CALLS = 1000
IN_FLIGHT = 64


async def call_path(rounds: int) -> None:
    arguments = {"message": "hi"}
    async with Station(station_config([tiny_spec("tiny")])) as station, Client(tiny_params()) as raw:
        await list_all_tools(raw)
        connection = station.connection("tiny")
        session = connection._session  # the live session the station's owner task holds
        held = session.client if session is not None else None  # its SDK Client
        assert held is not None
        operation = CallTool("echo", arguments)
        layers: dict[str, Callable[[], Awaitable[Any]]] = {
            "raw Client (baseline)": lambda: raw.call_tool("echo", arguments),
            "station's Client, no timeout": lambda: held.call_tool("echo", arguments),
            "station's Client + read_timeout_seconds": lambda: held.call_tool(
                "echo", arguments, read_timeout_seconds=60
            ),
            "ServerConnection.request": lambda: connection.request(operation),
            "Station.call_tool": lambda: station.call_tool("mcp_tiny_echo", arguments),
        }
        sequential: dict[str, list[float]] = {name: [] for name in layers}
        in_flight: dict[str, list[float]] = {name: [] for name in layers}
        for _ in range(rounds):
            for name, call in layers.items():
                started = time.process_time()
                for _ in range(SEQUENTIAL_CALLS):
                    await call()
                sequential[name].append((time.process_time() - started) / SEQUENTIAL_CALLS)
                started = time.process_time()
                await calls_per_second(call, IN_FLIGHT_CALLS, IN_FLIGHT)
                in_flight[name].append((time.process_time() - started) / IN_FLIGHT_CALLS)
    base_seq = min(sequential["raw Client (baseline)"])
    base_par = min(in_flight["raw Client (baseline)"])
    print(f"client CPU per call, minimum of {rounds} rounds (sequential | {IN_FLIGHT} in flight)")
    for name in layers:
        seq, par = min(sequential[name]), min(in_flight[name])
        seq_part = f"{seq * 1e6:6.0f} us {seq / base_seq - 1:+6.1%}"
        print(f"  {name:<42} {seq_part}  | {par * 1e6:6.0f} us {par / base_par - 1:+6.1%}")


@contextmanager
def counting_builds() -> Iterator[dict[str, float]]:
    counts = {"builds": 0, "tool_entries": 0, "seconds": 0.0}
    original = catalog_module.Catalog.build.__func__  # type: ignore[attr-defined]

    def build(cls: Any, listings: Any, **kwargs: Any) -> Any:
        listings = list(listings)
        started = time.perf_counter()
        try:
            return original(cls, listings, **kwargs)
        finally:
            counts["seconds"] += time.perf_counter() - started
            counts["builds"] += 1
            counts["tool_entries"] += sum(len(listing.tools) for listing in listings)

    catalog_module.Catalog.build = classmethod(build)  # type: ignore[method-assign,assignment]
    try:
        yield counts
    finally:
        catalog_module.Catalog.build = classmethod(original)  # type: ignore[method-assign,assignment]


async def catalog_during_startup() -> None:
    servers, tools = 20, 100
    config = station_config([tiny_spec(f"s{i}", "--tools", str(tools)) for i in range(servers)])
    with counting_builds() as counts:
        started = time.perf_counter()
        async with Station(config) as station:
            ready_s = time.perf_counter() - started
            at_ready = dict(counts)
            assert len(station.tools) == servers * tools
    print(
        f"\n{servers} servers x {tools} tools: ready in {ready_s * 1e3:.0f} ms; until then Catalog.build ran "
        f"{at_ready['builds']:.0f} times over {at_ready['tool_entries']:,.0f} tool entries "
        f"({servers * tools:,} distinct), {at_ready['seconds'] * 1e3:.0f} ms on the event loop"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    anyio.run(call_path, args.rounds)
    anyio.run(catalog_during_startup)


if __name__ == "__main__":
    main()
