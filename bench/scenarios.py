"""The benchmark rows: each runs mcpstation and the raw SDK on the same servers, interleaved in rounds.

Every function returns plain numbers (seconds, calls per second, bytes) in a dict; `run.py`
turns them into the table. Order inside a round rotates, so neither side always goes first.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from harness import (
    BENCH_DIR,
    CallTimes,
    RawConnection,
    calls_per_second,
    list_all_tools,
    median,
    now,
    percentile,
    settle,
    station_config,
    time_sequential,
    tiny_params,
    tiny_spec,
)
from mcp.client import Client, ClientSession
from mcp.client.stdio import stdio_client

from mcpstation import Station, StationConfig
from mcpstation.testing import serve_demo

WARMUP_CALLS = 200  # per side, before anything is timed
IN_FLIGHT = 64  # concurrent calls in the throughput row
PAGED_TOOLS = 2000
PAGE_SIZE = 100
MEMORY_CONNECTIONS = 20
SLOW_INIT_S = 1.0
BYSTANDERS = 500  # idle processes started for the busy-machine start-up row


@dataclass(frozen=True)
class Plan:
    """How much of everything to run; `quick` and `full` below."""

    latency_calls: int  # sequential calls per side and transport
    latency_rounds: int
    throughput_calls: int  # calls per side per round
    throughput_rounds: int
    startup_reps: int  # per side and fleet size
    slow_init_reps: int
    sequential_slow_init: bool  # also time the raw SDK starting 20 slow servers one by one
    discovery_reps: int
    memory_rounds: int


QUICK = Plan(300, 3, 1000, 3, 2, 1, False, 2, 1)
FULL = Plan(2000, 10, 3000, 7, 5, 3, True, 5, 2)

Side = Callable[[], Awaitable[Any]]


def rotated(items: Sequence[Any], round_no: int) -> list[Any]:
    shift = round_no % len(items)
    return [*items[shift:], *items[:shift]]


async def _interleaved_latency(sides: dict[str, Side], plan: Plan) -> dict[str, CallTimes]:
    for call in sides.values():
        for _ in range(WARMUP_CALLS):
            await call()
    block = plan.latency_calls // plan.latency_rounds
    times = {name: CallTimes([]) for name in sides}
    for round_no in range(plan.latency_rounds):
        for name in rotated(list(sides), round_no):
            settle()
            times[name].extend(await time_sequential(sides[name], block))
    return times


def _latency_summary(times: CallTimes) -> dict[str, float]:
    n = len(times.wall_s)
    return {
        "calls": n,
        "p50_s": percentile(times.wall_s, 50),
        "p90_s": percentile(times.wall_s, 90),
        "p99_s": percentile(times.wall_s, 99),
        "mean_s": sum(times.wall_s) / n,
        "cpu_per_call_s": times.cpu_s / n,
    }


def _check_ok(result: Any) -> None:
    ok = getattr(result, "ok", None)
    is_error = getattr(result, "is_error", None)
    if ok is False or is_error is True:
        raise RuntimeError(f"benchmark call failed: {result!r}")


async def stdio_latency(plan: Plan) -> dict[str, Any]:
    """Row 1 (stdio): sequential `echo` calls; station vs `Client` vs `ClientSession` + `stdio_client`."""
    arguments = {"message": "hi"}
    async with AsyncExitStack() as stack:
        station = await stack.enter_async_context(Station(station_config([tiny_spec("tiny")])))
        client = await stack.enter_async_context(Client(tiny_params()))
        await list_all_tools(client)
        read, write = await stack.enter_async_context(stdio_client(tiny_params()))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        await session.list_tools()

        async def via_station() -> None:
            _check_ok(await station.call_tool("mcp_tiny_echo", arguments))

        async def via_client() -> None:
            _check_ok(await client.call_tool("echo", arguments))

        async def via_session() -> None:
            _check_ok(await session.call_tool("echo", arguments))

        times = await _interleaved_latency({"station": via_station, "client": via_client, "session": via_session}, plan)
    return {name: _latency_summary(t) for name, t in times.items()}


async def http_latency(plan: Plan) -> dict[str, Any]:
    """Row 1 (HTTP): sequential `echo` calls to one demo server on loopback; station vs `Client`."""
    arguments = {"message": "hi"}
    async with serve_demo("http") as server, AsyncExitStack() as stack:
        spec = {"name": "web", "transport": "streamable_http", "url": server.url}
        station = await stack.enter_async_context(Station(station_config([spec])))
        client = await stack.enter_async_context(Client(server.url))
        await list_all_tools(client)
        protocol = {"station": station.connection("web").protocol_version, "client": client.protocol_version}

        async def via_station() -> None:
            _check_ok(await station.call_tool("mcp_web_echo", arguments))

        async def via_client() -> None:
            _check_ok(await client.call_tool("echo", arguments))

        times = await _interleaved_latency({"station": via_station, "client": via_client}, plan)
    summary: dict[str, Any] = {name: _latency_summary(t) for name, t in times.items()}
    summary["protocol"] = protocol
    return summary


async def throughput(plan: Plan) -> dict[str, Any]:
    """Row 2: `IN_FLIGHT` concurrent `echo` calls over one stdio connection, calls per second."""
    arguments = {"message": "hi"}
    async with AsyncExitStack() as stack:
        station = await stack.enter_async_context(Station(station_config([tiny_spec("tiny")])))
        client = await stack.enter_async_context(Client(tiny_params()))
        await list_all_tools(client)

        async def via_station() -> None:
            _check_ok(await station.call_tool("mcp_tiny_echo", arguments))

        async def via_client() -> None:
            _check_ok(await client.call_tool("echo", arguments))

        sides = {"station": via_station, "client": via_client}
        for call in sides.values():
            await calls_per_second(call, WARMUP_CALLS * 2, IN_FLIGHT)
        rates: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for round_no in range(plan.throughput_rounds):
            for name in rotated(list(sides), round_no):
                settle()
                cpu_started = time.process_time()
                rates[name].append(await calls_per_second(sides[name], plan.throughput_calls, IN_FLIGHT))
                cpu[name].append((time.process_time() - cpu_started) / plan.throughput_calls)
    return {
        name: {
            "median_calls_per_s": median(rates[name]),
            "rounds": rates[name],
            "median_cpu_per_call_s": median(cpu[name]),
        }
        for name in sides
    }


# -- start-up -------------------------------------------------------------------------------------------


async def station_ready_s(config: StationConfig, expect_tools: int) -> tuple[float, float]:
    """Seconds from entering `Station` until every server is ready (and the seconds its exit took).

    The config is validated before the clock starts, as the raw side's parameters are built before it.
    """
    settle()
    started = now()
    async with Station(config) as station:
        ready_s = now() - started
        ready = sum(1 for c in station.connections.values() if c.is_ready)
        if ready != len(config.servers) or len(station.tools) != expect_tools:
            raise RuntimeError(f"station: {ready}/{len(config.servers)} ready, {len(station.tools)} tools")
        stopping = now()
    return ready_s, now() - stopping


async def raw_ready_s(targets: Sequence[Any], expect_tools: int, *, sequential: bool = False) -> tuple[float, float]:
    """The same with raw-SDK `Client`s, one owner task each, started concurrently (or one by one)."""
    settle()
    connections = [RawConnection(target) for target in targets]
    started = now()
    async with anyio.create_task_group() as tg:
        if sequential:
            for connection in connections:
                await tg.start(connection.run)
        else:
            for connection in connections:
                tg.start_soon(connection.run)
            for connection in connections:
                await connection.ready.wait()
        ready_s = now() - started
        tools = sum(len(c.tools) for c in connections)
        if tools != expect_tools:
            raise RuntimeError(f"raw SDK: {tools} tools listed, expected {expect_tools}")
        stopping = now()
        for connection in connections:
            connection.close()
    return ready_s, now() - stopping


async def _interleaved_startup(
    extra: Sequence[str], count: int, tools_each: int, reps: int
) -> dict[str, dict[str, Any]]:
    config = station_config([tiny_spec(f"s{i}", *extra) for i in range(count)])
    params = [tiny_params(*extra) for _ in range(count)]
    runs: dict[str, list[tuple[float, float]]] = {"station": [], "client": []}
    sides: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "station": lambda: station_ready_s(config, tools_each * count),
        "client": lambda: raw_ready_s(params, tools_each * count),
    }
    for rep in range(reps):
        for name in rotated(list(sides), rep):
            runs[name].append(await sides[name]())
    return {
        name: {
            "median_ready_s": median([r for r, _ in values]),
            "ready_s": [r for r, _ in values],
            "median_stop_s": median([s for _, s in values]),
        }
        for name, values in runs.items()
    }


@contextmanager
def bystanders(count: int) -> Iterator[None]:
    """`count` idle processes on the machine (a desktop runs hundreds), ended by pid on the way out."""
    processes = [
        subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) for _ in range(count)
    ]
    try:
        yield
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


async def startup(plan: Plan) -> dict[str, Any]:
    """Row 3: 1, 10 and 20 tiny servers ready (spawn, handshake, tools/list), then 20 slow-init ones."""
    # One throwaway start per side first: the first spawn pays for cold disk caches and imports.
    await station_ready_s(station_config([tiny_spec("warm")]), 2)
    await raw_ready_s([tiny_params()], 2)
    results: dict[str, Any] = {}
    for count in (1, 10, 20):
        results[f"fleet_{count}"] = await _interleaved_startup((), count, 2, plan.startup_reps)
    # The same 2,000 tools as row 4, spread over 20 servers: the catalog is merged as servers come up.
    tools = PAGED_TOOLS // 20
    results["fleet_20_wide"] = await _interleaved_startup(("--tools", str(tools)), 20, tools, plan.startup_reps)
    with bystanders(BYSTANDERS):
        results["fleet_20_busy"] = await _interleaved_startup((), 20, 2, plan.startup_reps)
    delay = ("--init-delay", str(SLOW_INIT_S))
    results["slow_20"] = await _interleaved_startup(delay, 20, 2, plan.slow_init_reps)
    if plan.sequential_slow_init:
        ready_s, _ = await raw_ready_s([tiny_params(*delay) for _ in range(20)], 40, sequential=True)
        results["slow_20_sequential_raw_s"] = ready_s
    return results


# -- discovery ------------------------------------------------------------------------------------------


async def discovery(plan: Plan) -> dict[str, Any]:
    """Row 4: a server listing 2,000 tools, in pages of 100 and in one page; start-up including listing."""
    results: dict[str, Any] = {}
    for label, page_size in (("paged", PAGE_SIZE), ("unpaged", 0)):
        extra = ("--tools", str(PAGED_TOOLS), "--page-size", str(page_size))
        config = station_config([tiny_spec("big", *extra)])
        params = [tiny_params(*extra)]
        runs: dict[str, list[float]] = {"station": [], "client": []}
        sides: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
            "station": functools.partial(station_ready_s, config, PAGED_TOOLS),
            "client": functools.partial(raw_ready_s, params, PAGED_TOOLS),
        }
        for rep in range(plan.discovery_reps + 1):
            for name in rotated(list(sides), rep):
                ready_s, _ = await sides[name]()
                if rep > 0:  # the first repetition is a warm-up
                    runs[name].append(ready_s)
        results[label] = {name: {"median_s": median(v), "runs_s": v} for name, v in runs.items()}
    return results


# -- memory ---------------------------------------------------------------------------------------------


async def _probe_memory(side: str, count: int) -> dict[str, Any]:
    """Run `memory_probe.py` in a fresh interpreter, so earlier rows' heap does not blur the delta."""
    command = [sys.executable, str(BENCH_DIR / "memory_probe.py"), side, str(count)]
    done = await anyio.run_process(command, check=True)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


async def memory(plan: Plan) -> dict[str, Any]:
    """Row 5: client RSS growth per held connection with `MEMORY_CONNECTIONS` connections open."""
    runs: dict[str, list[dict[str, Any]]] = {"station": [], "client": []}
    for round_no in range(plan.memory_rounds):
        for side in rotated(list(runs), round_no):
            runs[side].append(await _probe_memory(side, MEMORY_CONNECTIONS))
    return {
        side: {
            "median_per_connection_bytes": median([r["per_connection_bytes"] for r in values]),
            "runs": values,
        }
        for side, values in runs.items()
    }


# -- a hostile neighbour ----------------------------------------------------------------------------------

HOSTILE_FLOOD = 300  # notifications and log messages per `flood` call of the hostile server


async def neighbour(plan: Plan) -> dict[str, Any]:
    """Row 6: throughput on a healthy server while a hostile one floods beside it, vs. alone.

    The hostile server (our chaos server) answers `flood` with `HOSTILE_FLOOD` list_changed and
    log notifications plus pings back to the client, and another one wrote 10 MB to stderr at start
    and printed garbage on stdout. Both stations run in this process, the hostile server flooding
    throughout; the timed rounds alternate between the two stations.
    """
    arguments = {"message": "hi"}
    hostile = [
        {
            "name": "stormy",
            "command": sys.executable,
            "args": ["-m", "mcpstation.testing.chaos_server", "flood", "--count", str(HOSTILE_FLOOD)],
            "protocol": "legacy",
        },
        {"name": "noisy", "command": sys.executable, "args": ["-m", "mcpstation.testing.chaos_server", "stderr-flood"]},
        {
            "name": "liar",
            "command": sys.executable,
            "args": ["-m", "mcpstation.testing.chaos_server", "garbage-stdout"],
        },
    ]
    async with AsyncExitStack() as stack:
        alone = await stack.enter_async_context(Station(station_config([tiny_spec("tiny")])))
        beside = await stack.enter_async_context(Station(station_config([tiny_spec("tiny"), *hostile])))
        # The hostile server misbehaves the whole time, whichever side is being timed.
        flooding = await stack.enter_async_context(anyio.create_task_group())
        flooding.start_soon(_keep_flooding, beside)
        sides = {"alone": alone, "beside_hostile": beside}
        calls = plan.throughput_calls * 3
        rates: dict[str, list[float]] = {name: [] for name in sides}
        for round_no in range(plan.throughput_rounds):
            for name in rotated(list(sides), round_no):
                station = sides[name]

                async def call(station: Station = station) -> None:
                    _check_ok(await station.call_tool("mcp_tiny_echo", arguments))

                settle()
                rates[name].append(await calls_per_second(call, calls, IN_FLIGHT))
        flooding.cancel_scope.cancel()
    return {name: {"median_calls_per_s": median(rates[name]), "rounds": rates[name]} for name in sides}


async def _keep_flooding(station: Station) -> None:
    while True:
        await station.call_tool("mcp_stormy_flood", {}, timeout_s=30)
