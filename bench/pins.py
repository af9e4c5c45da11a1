"""Tool pins at start-up: one server listing N tools in one page, on SQLite and PostgreSQL.

    python bench/pins.py [--tools N] [--rounds R] [--db sqlite] [--db postgresql] [--server paged|tiny] [--json FILE]

Each round, interleaved, on a fresh database each:
  off   `Station` entry with a store, tool pinning off (the baseline: spawn, handshake, listing, catalog);
  cold  `Station` entry, pinning on, no pin stored: every tool is pinned before entry returns;
  warm  `Station` entry again on the database `cold` left: every pin read back, none written.
  restart  the warm restart (issue 20): `Station(start=StartPlan.ON_DEMAND)` on the database `cold`
        left (listing cached, pins stored), until entry has returned and `status()` answered: the
        catalog comes from the cache, every pin is checked, the server does not start;
  raw   the raw SDK (`mcp.client.Client`) spawning the same server, initializing, listing its tools;
and, with no server at all (an in-process listing of N tools, fingerprints computed once):
  verify cold / warm   `ToolPins.verify` alone, with nothing / everything stored.
The clock runs from entering `Station(config, store=store)` (store already open and migrated) until
entry returns, which is when the server is READY and its pins are checked and written (for
`restart`: until `status()` answered as well; for `raw`: from entering `Client` until the list).
PostgreSQL is `$MCPSTATION_TEST_PG_URL` (default postgresql+asyncpg://root@127.0.0.1:5432/test); each
round creates a database of its own there and drops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import asyncpg
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client
from sqlalchemy.engine import make_url

from mcpstation import Station, StationConfig
from mcpstation.catalog import ServerListing
from mcpstation.pinning import ToolPins
from mcpstation.pool import StartPlan
from mcpstation.status import ServerState
from mcpstation.store import Store

DEFAULT_PG_URL = "postgresql+asyncpg://root@127.0.0.1:5432/test"
STATION_SETTINGS = {"server_startup_timeout_s": 120, "startup_timeout_s": 180}
SERVER = "big"


TINY = Path(__file__).resolve().parent / "servers" / "tiny_server.py"
SERVERS = {
    # our SDK-built paged server: the SDK's own cost of building and sending 10,000 tools included
    "paged": lambda tools: ["-m", "mcpstation.testing.paged_server", "--tools", str(tools), "--page-size", str(tools)],
    # the stdlib tiny server: what the station itself costs
    "tiny": lambda tools: [str(TINY), "--tools", str(tools)],
}
SERVER_KIND = {"name": "paged"}  # set from --server


def config(tools: int, pinning: str) -> StationConfig:
    args = SERVERS[SERVER_KIND["name"]](tools)
    return StationConfig(
        servers=[{"name": SERVER, "command": sys.executable, "args": args}],
        station=STATION_SETTINGS,
        policy={"tool_pinning": pinning},
    )


def listing(tools: int) -> ServerListing:
    made = tuple(types.Tool(name=f"t{i}", input_schema={"type": "object"}) for i in range(tools))
    return ServerListing(server=SERVER, tools=made)


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def fresh_database(backend: str) -> AsyncIterator[str]:
    """The URL of an empty database, removed afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="mcps-bench-") as directory:
            yield f"sqlite:///{directory}/mcpstation.db"
        return
    admin_url = os.environ.get("MCPSTATION_TEST_PG_URL", DEFAULT_PG_URL)
    name = f"mcps_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(_dsn(admin_url))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


Timing = tuple[float, float]  # (wall s, CPU s of this process: event loop and aiosqlite threads, not the server)


class Clock:
    """Wall and process CPU time from construction until `stop()`."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def stop(self) -> Timing:
        return time.perf_counter() - self._wall, time.process_time() - self._cpu


async def time_entry(url: str, tools: int, pinning: str) -> tuple[Timing, int]:
    """From entering the station until entry returned, and how many pins the store then holds."""
    async with await Store.open(url) as store:
        clock = Clock()
        async with Station(config(tools, pinning), store=store) as station:
            elapsed = clock.stop()
            assert station.connection(SERVER).is_ready, station.status()
            assert len(station.tools) == tools, len(station.tools)
        pins = len(await store.list_pins(SERVER))
    return elapsed, pins


async def time_restart(url: str, tools: int) -> Timing:
    """From entering a station whose server's listing is cached and pins stored until `status()` answered."""
    async with await Store.open(url) as store:
        clock = Clock()
        async with Station(config(tools, "warn"), store=store, start=StartPlan.ON_DEMAND) as station:
            status = station.status()
            elapsed = clock.stop()
            [server] = [s for s in status.servers if s.name == SERVER]
            assert server.state is ServerState.IDLE and server.tools == tools, server  # answered from the cache
            assert len(station.tools) == tools and station.live_catalog.pins is not None
            assert not station.live_catalog.pins.drifted(SERVER) and not station.live_catalog.pins.problems()
    return elapsed


async def time_raw(tools: int) -> Timing:
    """The raw SDK spawning the same server, initializing and listing every tool."""
    server = StdioServerParameters(command=sys.executable, args=SERVERS[SERVER_KIND["name"]](tools))
    with open(os.devnull, "w") as stderr:  # noqa: ASYNC230 (/dev/null never blocks)
        clock = Clock()
        async with Client(stdio_client(server, errlog=stderr)) as client:
            listed = await client.list_tools()
            elapsed = clock.stop()
    assert len(listed.tools) == tools, len(listed.tools)
    return elapsed


async def time_verify(url: str, made: ServerListing) -> tuple[Timing, Timing]:
    """`ToolPins.verify` of the listing on an empty store (cold), then with a new `ToolPins` (warm)."""
    async with await Store.open(url) as store:
        cold_pins = ToolPins(store, "warn")
        for tool in made.tools:
            cold_pins.fingerprint(SERVER, tool)  # fingerprints are cached per definition: not timed
        clock = Clock()
        await cold_pins.verify([made])
        cold = clock.stop()
        warm_pins = ToolPins(store, "warn")
        for tool in made.tools:
            warm_pins.fingerprint(SERVER, tool)
        clock = Clock()
        await warm_pins.verify([made])
        warm = clock.stop()
        assert len(await store.list_pins(SERVER)) == len(made.tools)
    return cold, warm


Rows = dict[str, list[Timing]]
LABELS = [
    ("off", "station entry, pinning off"),
    ("cold", "station entry, pins written (cold)"),
    ("warm", "station entry, pins stored (warm)"),
    ("restart", "restart from the cache, pins stored, + status"),
    ("raw", "raw SDK: spawn, initialize, list"),
    ("verify cold", "ToolPins.verify only, cold"),
    ("verify warm", "ToolPins.verify only, warm"),
]


async def baseline(backend: str, tools: int, rows: Rows) -> None:
    async with fresh_database(backend) as url:
        elapsed, pins = await time_entry(url, tools, "off")
        assert pins == 0
        rows["off"].append(elapsed)


async def pinned(backend: str, tools: int, rows: Rows) -> None:
    async with fresh_database(backend) as url:
        elapsed, pins = await time_entry(url, tools, "warn")
        assert pins == tools, pins
        rows["cold"].append(elapsed)
        elapsed, pins = await time_entry(url, tools, "warn")
        assert pins == tools, pins
        rows["warm"].append(elapsed)
        rows["restart"].append(await time_restart(url, tools))


async def raw_sdk(backend: str, tools: int, rows: Rows) -> None:
    rows["raw"].append(await time_raw(tools))


async def verify_only(backend: str, tools: int, rows: Rows) -> None:
    async with fresh_database(backend) as url:
        cold, warm = await time_verify(url, listing(tools))
        rows["verify cold"].append(cold)
        rows["verify warm"].append(warm)


STEPS: list[Callable[[str, int, Rows], Awaitable[None]]] = [baseline, pinned, raw_sdk, verify_only]


async def run(tools: int, rounds: int, backends: list[str]) -> dict[str, Rows]:
    results: dict[str, Rows] = {}
    for backend in backends:
        rows: Rows = {name: [] for name, _ in LABELS}
        for index in range(rounds):
            shift = index % len(STEPS)  # rotate the order, so drift on the machine hits every row alike
            for step in STEPS[shift:] + STEPS[:shift]:
                await step(backend, tools, rows)
            done = ", ".join(f"{k} {v[-1][0]:.2f} s" for k, v in rows.items())
            print(f"{backend} round {index + 1} (load {os.getloadavg()[0]:.1f}): {done}")
        results[backend] = rows
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", action="append", choices=["sqlite", "postgresql"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--server", choices=sorted(SERVERS), default="paged", help="the server listing the tools")
    args = parser.parse_args()
    SERVER_KIND["name"] = args.server
    backends = args.db or ["sqlite", "postgresql"]
    load_before = os.getloadavg()
    results = anyio.run(run, args.tools, args.rounds, backends)
    load_after = os.getloadavg()
    print(f"\n{args.tools:,} tools in one page, median of {args.rounds} (min-max); CPU: this process only")
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {os.cpu_count()} CPUs")
    print(f"{'database':<12}{'row':<46}{'wall':>10}{'range':>18}{'ratio':>10}{'CPU':>10}")
    for backend, rows in results.items():
        off = statistics.median(wall for wall, _ in rows["off"])
        raw = statistics.median(wall for wall, _ in rows["raw"])
        for name, label in LABELS:
            walls = [wall for wall, _ in rows[name]]
            middle = statistics.median(walls)
            cpu = statistics.median(cpu for _, cpu in rows[name])
            spread = f"{min(walls):.2f}-{max(walls):.2f} s"
            ratio = f"{middle / off:.2f}" if name in ("cold", "warm") else ""
            ratio = f"{middle / raw:.2f} raw" if name == "restart" else ratio
            print(f"{backend:<12}{label:<46}{middle:>8.2f} s{spread:>18}{ratio:>10}{cpu:>8.2f} s")
    if args.json is not None:
        report = {
            "tools": args.tools,
            "server": args.server,
            "rounds": args.rounds,
            "load_before": load_before,
            "load_after": load_after,
        }
        args.json.write_text(json.dumps({**report, "results": results}, indent=2))


if __name__ == "__main__":
    main()
