"""One side of `versus.py`: the station's call path, measured in this interpreter.

Uses only the public API every version of mcpstation has (`Station`, `StationConfig`,
`Station.tools`, `Station.call_tool`), so `PYTHONPATH=<tree>/src` picks the version measured.
Prints one JSON object: sequential latency (p50, p99), client CPU per call, and calls/s with
64 calls in flight, all against the tiny stdio server (which costs almost nothing itself).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio

from mcpstation import Station, StationConfig

TINY_SERVER = str(Path(__file__).resolve().parent / "servers" / "tiny_server.py")


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
        took: list[float] = []
        cpu_started = time.process_time()
        for _ in range(calls):
            started = time.perf_counter()
            await call()
            took.append(time.perf_counter() - started)
        cpu_per_call = (time.process_time() - cpu_started) / calls
        took.sort()

        remaining = burst

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await call()

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(in_flight):
                tg.start_soon(worker)
        rate = burst / (time.perf_counter() - started)
    return {
        "p50_us": took[len(took) // 2] * 1e6,
        "p99_us": took[min(len(took) - 1, int(len(took) * 0.99))] * 1e6,
        "cpu_us_per_call": cpu_per_call * 1e6,
        "calls_per_s": rate,
    }


def main() -> None:
    warmup, calls, burst, in_flight = (int(a) for a in sys.argv[1:5])
    print(json.dumps(anyio.run(probe, warmup, calls, burst, in_flight)))


if __name__ == "__main__":
    main()
