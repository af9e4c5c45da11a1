"""A hundred stdio servers on one 2-core machine: bounded start-ups bring every one of them up."""

from __future__ import annotations

import time

import anyio
import pytest
from station_helpers import tiny

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState

pytestmark = [pytest.mark.anyio, pytest.mark.fleet]

FLEET = 100
FLEET_START_S = 90.0  # bound on the whole fleet's start on a loaded machine (about 5 s on a quiet one)


@pytest.mark.timeout(180)
async def test_hundred_eager_stdio_servers_all_reach_ready_with_bounded_start_ups():
    config = StationConfig(
        servers=[tiny(f"t{i:03d}") for i in range(FLEET)],
        station={"health_interval_s": 0, "startup_timeout_s": FLEET_START_S},
    )
    slots = config.station.concurrent_starts
    assert slots < FLEET
    started = time.perf_counter()
    with anyio.fail_after(FLEET_START_S + 30):
        async with Station(config) as station:
            elapsed = time.perf_counter() - started
            states = {name: c.state for name, c in station.connections.items()}
            assert [name for name, state in states.items() if state is not ConnectionState.READY] == []
            assert len(station.tools) == 2 * FLEET
            assert station.pool.start_slots.borrowed_tokens == 0  # every slot handed back once READY
            pids = {c.pid for c in station.connections.values()}
            assert None not in pids and len(pids) == FLEET
            result = await station.call_tool("mcp_t099_add", {"a": 2, "b": 3})
            assert result.ok and result.text == "5"
    print(f"{FLEET} stdio servers ready in {elapsed:.2f} s, {slots} starting at once")
