"""State, catalog, managed-server and log events reach subscribers."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from station_helpers import PY, START_TIMEOUT_S, demo

from mcpstation import Station, StationConfig
from mcpstation.events import StationEvent
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


async def test_events_follow_a_server_added_at_run_time(tmp_path: Path):
    config = StationConfig(policy={"allowed_dynamic_stdio_commands": [PY]})
    seen: list[StationEvent] = []
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store, Station(config, store=store) as station:
            with station.events.subscribe() as events:
                assert (await station.add_server(demo("late"))).ok
                with anyio.move_on_after(2):
                    async for event in events:
                        seen.append(event)
                        if event.kind == "catalog":
                            break
    kinds = [(e.kind, e.server) for e in seen]
    assert ("state", "late") in kinds and ("server", "late") in kinds
    assert any(e.kind == "state" and e.data["state"] == "READY" for e in seen)
    catalog = next(e for e in seen if e.kind == "catalog")
    assert "tools" in catalog.data["changed"] and catalog.data["tools"] == 12
    assert any(e.kind == "log" and e.data["message"] == "listening on stdio" for e in seen)
