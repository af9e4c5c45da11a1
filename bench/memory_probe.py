"""Client memory per held connection, measured in a fresh interpreter (one side per process).

    python bench/memory_probe.py station|client N

Warms up with one connection opened and closed (lazy imports, allocator pools), then reads
VmRSS, opens N tiny stdio servers, lists their tools and calls each once, collects garbage and
reads VmRSS again. Prints one JSON line. Only this process is counted, not the servers.
"""

from __future__ import annotations

import gc
import json
import sys

import anyio
from harness import RawConnection, rss_bytes, station_config, tiny_params, tiny_spec

from mcpstation import Station


async def _station(count: int) -> tuple[int, int]:
    async with Station(station_config([tiny_spec("warm")])) as station:
        await station.call_tool("mcp_warm_echo", {"message": "hi"})
    gc.collect()
    before = rss_bytes()
    async with Station(station_config([tiny_spec(f"s{i}") for i in range(count)])) as station:
        for i in range(count):
            result = await station.call_tool(f"mcp_s{i}_echo", {"message": "hi"})
            assert result.ok, result
        gc.collect()
        after = rss_bytes()
    return before, after


async def _client(count: int) -> tuple[int, int]:
    async with anyio.create_task_group() as tg:
        warm = RawConnection(tiny_params())
        client = await tg.start(warm.run)
        await client.call_tool("echo", {"message": "hi"})
        warm.close()
    gc.collect()
    before = rss_bytes()
    async with anyio.create_task_group() as tg:
        connections = [RawConnection(tiny_params()) for _ in range(count)]
        for connection in connections:
            tg.start_soon(connection.run)
        for connection in connections:
            await connection.ready.wait()
            assert connection.client is not None
            result = await connection.client.call_tool("echo", {"message": "hi"})
            assert not result.is_error, result
        gc.collect()
        after = rss_bytes()
        for connection in connections:
            connection.close()
    return before, after


def main() -> None:
    side, count = sys.argv[1], int(sys.argv[2])
    probe = {"station": _station, "client": _client}[side]
    before, after = anyio.run(probe, count)
    print(
        json.dumps(
            {
                "side": side,
                "connections": count,
                "rss_before_bytes": before,
                "rss_after_bytes": after,
                "per_connection_bytes": (after - before) / count,
            }
        )
    )


if __name__ == "__main__":
    main()
