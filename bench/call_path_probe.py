"""One side of `versus.py`: the station's call path, measured in this interpreter.

Uses only the public API every version of mcpstation has (`Station`, `StationConfig`,
`Station.tools`, `Station.call_tool`), so `PYTHONPATH=<tree>/src` picks the version measured.
Prints one JSON object: sequential latency (p50, p99), client CPU per call, and calls/s with
64 calls in flight, all against the tiny stdio server (which costs almost nothing itself).
With `store` as a fifth argument the station has a SQLite store in a temporary directory, so the
audit layer (and its writer) is on the path too.
"""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from harness import TINY_SERVER, calls_per_second, percentile, time_sequential  # this directory, first on sys.path

from mcpstation import Station, StationConfig


async def probe(warmup: int, calls: int, burst: int, in_flight: int, with_store: bool) -> dict[str, float]:
    config = StationConfig(servers=[{"name": "t", "command": sys.executable, "args": [TINY_SERVER]}])
    async with AsyncExitStack() as stack:
        store = None
        if with_store:
            from mcpstation.store import Store  # only here: versions before the store lack it

            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpstation-probe-"))
            store = await stack.enter_async_context(await Store.open(data_dir=Path(directory)))
        station = await stack.enter_async_context(Station(config, store=store))
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
    with_store = sys.argv[5:6] == ["store"]
    print(json.dumps(anyio.run(probe, warmup, calls, burst, in_flight, with_store)))


if __name__ == "__main__":
    main()
