"""One side of `versus.py`: the station's call path, measured in this interpreter.

Uses only the public API every version of mcpstation has (`Station`, `StationConfig`,
`Station.tools`, `Station.call_tool`), so `PYTHONPATH=<tree>/src` picks the version measured.
Prints one JSON object: sequential latency (p50, p99), client CPU per call, and calls/s with
64 calls in flight, all against the tiny stdio server (which costs almost nothing itself).
"""

from __future__ import annotations

import json
import sys

import anyio
from harness import TINY_SERVER, calls_per_second, percentile, time_sequential  # this directory, first on sys.path

from mcpstation import Station, StationConfig


async def probe(warmup: int, calls: int, burst: int, in_flight: int) -> dict[str, float]:
    config = StationConfig(servers=[{"name": "t", "command": sys.executable, "args": [TINY_SERVER]}])
    async with Station(config) as station:
        echo = next(t.name for t in station.tools if t.name.endswith("echo"))

        async def call() -> None:
            result = await station.call_tool(echo, {"message": "x"})
            if not result.ok:
                raise RuntimeError(f"echo failed: {result}")

        for _ in range(warmup):
            await call()
        sequential = await time_sequential(call, calls)
        rate = await calls_per_second(call, burst, in_flight)
    return {
        "p50_us": percentile(sequential.wall_s, 50) * 1e6,
        "p99_us": percentile(sequential.wall_s, 99) * 1e6,
        "cpu_us_per_call": sequential.cpu_s / calls * 1e6,
        "calls_per_s": rate,
    }


def main() -> None:
    warmup, calls, burst, in_flight = (int(a) for a in sys.argv[1:5])
    print(json.dumps(anyio.run(probe, warmup, calls, burst, in_flight)))


if __name__ == "__main__":
    main()
