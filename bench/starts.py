"""Start-ups under the spawn bound: waiting servers, SDK-built servers, and a CPU-heavy fleet.

    python bench/starts.py [--reps N] [--fleet N] [--json FILE]

Each row starts the same servers through a `Station` and through raw SDK `Client`s started
concurrently (one owner task each), interleaved in rounds with the order rotated, and reports the
median seconds until every server is ready (spawned, initialized, tools listed):
  slow_20   twenty tiny stdio servers that each sleep 1 s before answering `initialize`;
  sdk_5     five of our SDK-built demo servers (their start is CPU work: imports);
  cpu_N     N tiny servers that each compute 0.2 s of CPU before answering `initialize` (station
            only: the question is that all reach READY with no start-up timeout).
The station runs with its default start bound (`max_concurrent_starts`: 2 per core, at least 4).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from harness import RawConnection, median, now, settle, tiny_params, tiny_spec
from scenarios import raw_ready_s, rotated, station_ready_s

from mcpstation import StationConfig
from mcpstation.testing import demo_server_params

SLOW_INIT_S = "1.0"
FLEET_CPU_S = "0.2"  # CPU each server of the CPU-heavy fleet spends before answering initialize
SETTINGS = {"server_startup_timeout_s": 30, "startup_timeout_s": 300, "health_interval_s": 0}


def _config(servers: list[dict[str, Any]]) -> StationConfig:
    return StationConfig(servers=servers, station=SETTINGS)


def _demo_spec(name: str) -> dict[str, Any]:
    params = demo_server_params(name=name)
    return {"name": name, "command": params.command, "args": list(params.args)}


async def _tools_of(target: Any) -> int:
    connection = RawConnection(target)
    async with anyio.create_task_group() as tg:
        await tg.start(connection.run)
        connection.close()
    return len(connection.tools)


async def _row(config: StationConfig, targets: list[Any], tools: int, reps: int) -> dict[str, Any]:
    sides: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "station": lambda: station_ready_s(config, tools),
        "sdk": lambda: raw_ready_s(targets, tools),
    }
    runs: dict[str, list[float]] = {name: [] for name in sides}
    for rep in range(reps):
        for name in rotated(list(sides), rep):
            ready_s, _ = await sides[name]()
            runs[name].append(ready_s)
    station, sdk = median(runs["station"]), median(runs["sdk"])
    return {
        "station_median_s": station,
        "sdk_median_s": sdk,
        "ratio": station / sdk,
        "station_runs_s": runs["station"],
        "sdk_runs_s": runs["sdk"],
        "spread_s": {name: max(values) - min(values) for name, values in runs.items()},
    }


async def main(reps: int, fleet: int, only: set[str]) -> dict[str, Any]:
    results: dict[str, Any] = {"cores": os.cpu_count(), "load_before": os.getloadavg()}
    # One throwaway start per side: the first spawn pays for cold disk caches and imports.
    await station_ready_s(_config([tiny_spec("warm")]), 2)
    await raw_ready_s([tiny_params()], 2)

    slow = ("--init-delay", SLOW_INIT_S)
    if not only or "slow" in only:
        slow_specs = [tiny_spec(f"s{i}", *slow) for i in range(20)]
        results["slow_20"] = await _row(_config(slow_specs), [tiny_params(*slow) for _ in range(20)], 40, reps)
    if not only or "sdk" in only:
        demo_tools = await _tools_of(demo_server_params())
        results["sdk_5"] = await _row(
            _config([_demo_spec(f"d{i}") for i in range(5)]),
            [demo_server_params(name=f"d{i}") for i in range(5)],
            5 * demo_tools,
            reps,
        )
    if not only or "cpu" in only:
        heavy = ("--init-cpu", FLEET_CPU_S)
        settle()
        fleet_specs = [tiny_spec(f"c{i:03d}", *heavy) for i in range(fleet)]
        ready_s, _ = await station_ready_s(_config(fleet_specs), 2 * fleet)
        results[f"cpu_{fleet}"] = {"station_ready_s": ready_s, "all_ready": True}
    results["load_after"] = os.getloadavg()
    return results


def _print(results: dict[str, Any]) -> None:
    before, after = results["load_before"][0], results["load_after"][0]
    print(f"{results['cores']} cores, load {before:.1f} before, {after:.1f} after")
    for name in ("slow_20", "sdk_5"):
        row = results.get(name)
        if row is None:
            continue
        spread = row["spread_s"]
        print(
            f"{name:8} station {row['station_median_s']:.2f} s  sdk {row['sdk_median_s']:.2f} s  "
            f"ratio {row['ratio']:.2f}  (spread {spread['station']:.2f} / {spread['sdk']:.2f} s; "
            f"station runs {', '.join(f'{v:.2f}' for v in row['station_runs_s'])}; "
            f"stdev {statistics.pstdev(row['station_runs_s']):.2f})"
        )
    for name, row in results.items():
        if name.startswith("cpu_"):
            print(f"{name:8} station {row['station_ready_s']:.2f} s, every server READY")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="rounds per row and side (default 3)")
    parser.add_argument("--fleet", type=int, default=100, help="servers in the CPU-heavy fleet (default 100)")
    parser.add_argument("--json", help="write every number here")
    parser.add_argument("--only", action="append", choices=["slow", "sdk", "cpu"], help="run only these rows")
    args = parser.parse_args()
    started = now()
    results = anyio.run(main, args.reps, args.fleet, set(args.only or ()))
    results["wall_s"] = now() - started
    _print(results)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    sys.exit(0)
