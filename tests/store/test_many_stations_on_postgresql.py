"""Twenty stations start at once on one new PostgreSQL database with the same three servers: every
migration and every first-use pin races. All reach READY, the pins table holds one row per tool,
and no station logs a store error.
"""

from __future__ import annotations

import logging

import anyio
import pytest
import sqlalchemy as sa
from face_helpers import station_config, tiny

from mcpstation import Station
from mcpstation.events import StationEvent
from mcpstation.store import Store
from mcpstation.store._schema import tool_pins

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

STATIONS = 20
SERVERS = ("alpha", "beta", "gamma")
TOOLS_PER_SERVER = 40
ALL_READY_TIMEOUT_S = 180.0  # 20 stations x 3 stdio servers starting at once on a loaded 2-core machine


@pytest.mark.long
async def test_twenty_stations_starting_at_once_on_one_new_database_agree(
    pg_db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = station_config([tiny(name, "--tools", str(TOOLS_PER_SERVER)) for name in SERVERS])
    ready: list[tuple[int, int, bool]] = []  # (station, tools published, every server READY)
    all_ready = anyio.Event()
    stop = anyio.Event()

    async def run_station(index: int) -> None:
        async with await Store.open(pg_db_url) as store:
            station = Station(config, store=store)
            checked = anyio.Event()

            def on_event(event: StationEvent) -> None:
                if event.kind == "catalog":  # after the catalog watcher's own pin check
                    checked.set()

            station.events.add_listener(on_event)
            async with station:
                await checked.wait()
                result = await station.call_tool("mcp_alpha_add", {"a": index, "b": 1})
                assert result.text == str(index + 1), result
                ready.append((index, len(station.tools), all(c.is_ready for c in station.connections.values())))
                if len(ready) == STATIONS:
                    all_ready.set()
                await stop.wait()

    with anyio.fail_after(ALL_READY_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for index in range(STATIONS):
                group.start_soon(run_station, index)
            await all_ready.wait()
            stop.set()

    expected_tools = len(SERVERS) * TOOLS_PER_SERVER
    assert sorted(ready) == [(index, expected_tools, True) for index in range(STATIONS)]
    async with await Store.open(pg_db_url) as store:
        async with store.engine.connect() as connection:
            rows = (await connection.execute(sa.select(tool_pins.c.server, tool_pins.c.tool))).all()
        assert len(rows) == len(set(rows)) == expected_tools
        assert all(pin.is_approved for pin in await store.list_pins())
        assert len(await store.list_calls(limit=STATIONS * 2)) == STATIONS
    trouble = [
        f"{record.name}: {record.getMessage()}"
        for record in caplog.records
        if record.levelno >= logging.ERROR
        or "StoreError" in record.getMessage()
        or (record.levelno >= logging.WARNING and record.name.startswith(("mcpstation.pinning", "mcpstation.store")))
    ]
    assert trouble == []
