"""What the station's own pipeline costs a call, against the raw SDK (issue 20 §2, last bullet).

    python bench/pipeline_cost.py [--rounds R] [--calls N] [--json out.json]

One process, one stdlib tiny server per side. The measured side is `Station.call_tool` with every
default layer on: a SQLite store in a temporary directory (so the audit layer and its writer, tool
pins and the URL guard layer are on the path, as in any station with a store), the argument check
and the bounds. The raw side is the SDK's `Client` calling the same tool. Two more sides say where
the difference goes: the same station's connection called directly (`ServerConnection.request`,
no pipeline), and a station without a store (every layer but the audit). Each round runs every
side, N sequential `echo` calls each, in turns (the order rotated each round) after a warm-up.
Per side and round: client CPU per call (`time.process_time`, this process's every thread: the
audit writer's database work counts) and the p50 of the calls' wall times. The table gives the
median of the rounds, the ratio station / raw of those medians, and each ratio's spread over the
rounds (min-max of the per-round ratios), which is the noise of the machine.

Targets: CPU per call ≤ 0.9×, p50 ≤ 1.0× of the raw SDK.

Part 2 is the pipeline's own cost with nothing else in it: resolution and every layer but the
audit (visibility, argument check, URL guard, bounds) over a route that answers at once, against
that route alone; client CPU per call, the minimum of the rounds (the figure least moved by load).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import mcp_types as types
from harness import percentile, station_config, time_sequential, tiny_params, tiny_spec
from mcp.client import Client

from mcpstation import Station
from mcpstation.catalog import AnyResult, ToolResult
from mcpstation.connection.operations import CallTool
from mcpstation.pipeline import (
    ArgumentCheck,
    Bounds,
    Caller,
    Pipeline,
    Request,
    RequestKind,
    UrlGuardLayer,
    assemble,
)
from mcpstation.policy import UrlGuard
from mcpstation.store import Store

ARGUMENTS = {"message": "hi"}
WARMUP_CALLS = 200
CPU_TARGET = 0.9
P50_TARGET = 1.0


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


async def measure(rounds: int, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcpstation-pipeline-cost-") as directory:
        async with (
            await Store.open(data_dir=Path(directory)) as store,
            Station(station_config([tiny_spec("tiny")]), store=store) as station,
            Station(station_config([tiny_spec("tiny")])) as storeless,
            Client(tiny_params()) as raw,
        ):
            connection = station.connection("tiny")
            operation = CallTool("echo", ARGUMENTS)

            async def via_station() -> None:
                result = await station.call_tool("mcp_tiny_echo", ARGUMENTS)
                if not result.ok:
                    raise RuntimeError(f"station call failed: {result}")

            async def via_raw() -> None:
                result = await raw.call_tool("echo", ARGUMENTS)
                if result.is_error:
                    raise RuntimeError(f"raw call failed: {result}")

            async def via_storeless() -> None:
                result = await storeless.call_tool("mcp_tiny_echo", ARGUMENTS)
                if not result.ok:
                    raise RuntimeError(f"station call failed: {result}")

            async def via_connection() -> None:
                result = await connection.request(operation)
                if result.is_error:
                    raise RuntimeError(f"connection call failed: {result}")

            sides: dict[str, Callable[[], Awaitable[None]]] = {
                "station": via_station,
                "raw SDK": via_raw,
                "station, no store": via_storeless,
                "connection alone": via_connection,
            }
            for call in sides.values():
                for _ in range(WARMUP_CALLS):
                    await call()
            per_round: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
            loads = [_load()]
            for round_no in range(rounds):
                names = list(sides)
                names = names[round_no % len(names) :] + names[: round_no % len(names)]
                for name in names:
                    times = await time_sequential(sides[name], calls)
                    per_round[name].append(
                        {"cpu_us": times.cpu_s / calls * 1e6, "p50_us": percentile(times.wall_s, 50) * 1e6}
                    )
                loads.append(_load())
    return {"rounds": rounds, "calls": calls, "per_round": per_round, "load_average": loads}


OWN_CALLS = 20_000
_ANSWER = types.CallToolResult(content=[types.TextContent(type="text", text="hi")])


async def _at_once(request: Request) -> AnyResult:
    return ToolResult.from_sdk(_ANSWER, name=request.name, server=request.server, tool=request.target, duration_s=0.0)


async def own_cost(rounds: int) -> dict[str, float]:
    """Client CPU per call of resolution and the layers over a route that answers at once (part 2)."""
    config = station_config([tiny_spec("tiny")])
    async with Station(config) as station:
        handler = assemble(
            route=_at_once,
            visibility=station.visibility,
            bounds=Bounds(lambda: config.station, lambda server: None),
            arguments=ArgumentCheck(lambda: station.catalog),
            url_guard=UrlGuardLayer(UrlGuard.from_policy(config.policy), station.roster.spec),
        )
        pipeline = Pipeline(
            catalog=lambda: station.catalog,
            visibility=station.visibility,
            handler=handler,
            owner_hint=lambda name: None,
            offline_reason=lambda server: None,
        )
        caller = Caller.library()
        request = Request(RequestKind.CALL_TOOL, "mcp_tiny_echo", "tiny", "echo", caller, ARGUMENTS)

        async def through_pipeline() -> None:
            await pipeline.call_tool("mcp_tiny_echo", ARGUMENTS, caller=caller)

        async def route_alone() -> None:
            await _at_once(request)

        best = {"pipeline": float("inf"), "route alone": float("inf")}
        for _ in range(rounds):
            for name, call in (("pipeline", through_pipeline), ("route alone", route_alone)):
                times = await time_sequential(call, OWN_CALLS)
                best[name] = min(best[name], times.cpu_s / OWN_CALLS * 1e6)
    return best


def report(data: dict[str, Any]) -> None:
    station, raw = data["per_round"]["station"], data["per_round"]["raw SDK"]
    print(
        f"{data['rounds']} rounds x {data['calls']} sequential calls per side; "
        f"load average (1, 5, 15 min) {data['load_average'][0]} at start, {data['load_average'][-1]} at end"
    )
    print(f"{'figure':<22}{'station':>12}{'raw SDK':>12}{'ratio':>8}{'spread':>14}{'target':>9}  met")
    figures = (("cpu_us", "client CPU per call", CPU_TARGET), ("p50_us", "call latency p50", P50_TARGET))
    for key, label, target in figures:
        ours = statistics.median(r[key] for r in station)
        theirs = statistics.median(r[key] for r in raw)
        ratios = [s[key] / r[key] for s, r in zip(station, raw, strict=True)]
        ratio = ours / theirs
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        met = "yes" if ratio <= target else "NO"
        print(f"{label:<22}{ours:>9.0f} us{theirs:>9.0f} us{ratio:>8.2f}{spread:>14}{'<= ' + str(target):>9}  {met}")
    print("\nwhere it goes (medians; ratio to the raw SDK)")
    for name in ("connection alone", "station, no store", "station"):
        rows = data["per_round"][name]
        cpu, p50 = (statistics.median(r[key] for r in rows) for key in ("cpu_us", "p50_us"))
        base_cpu, base_p50 = (statistics.median(r[key] for r in raw) for key in ("cpu_us", "p50_us"))
        print(f"  {name:<20} CPU {cpu:6.0f} us ({cpu / base_cpu:.2f})   p50 {p50:6.0f} us ({p50 / base_p50:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args()
    data = anyio.run(measure, args.rounds, args.calls)
    report(data)
    data["own_cpu_us"] = own = anyio.run(own_cost, args.rounds)
    print(
        f"\npart 2: resolution and layers (no audit) over a route that answers at once: {own['pipeline']:.1f} us "
        f"per call, the route alone {own['route alone']:.1f} us (minimum of {args.rounds} rounds x {OWN_CALLS:,})"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
