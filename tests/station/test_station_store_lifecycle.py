"""A station closes its store side cleanly: the audit writer finishes, nothing outlives `__aexit__`."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

ROUNDS = 50
CALLS_PER_ROUND = 5


async def test_reopening_the_store_right_after_a_station_closes_never_finds_it_locked(tmp_path: Path):
    config = StationConfig(servers=[inproc("d")])
    written = 0
    with anyio.fail_after(START_TIMEOUT_S * 3):
        for _ in range(ROUNDS):
            store = await Store.open(data_dir=tmp_path)
            async with store:
                async with Station(config, store=store) as station, anyio.create_task_group() as calls:
                    for n in range(CALLS_PER_ROUND):
                        calls.start_soon(station.call_tool, "mcp_d_add", {"a": n, "b": 1})
                # the station has closed while its last records were being written; reopen at once
            async with await Store.open(data_dir=tmp_path) as again:
                await again.record_action("note", actor="test", detail={"round": written})
                written += 1
        async with await Store.open(data_dir=tmp_path) as store:
            calls_audited = await store.list_calls(limit=1000)
            notes = [a for a in await store.list_actions(limit=1000) if a.action == "note"]
    assert len(calls_audited) == ROUNDS * CALLS_PER_ROUND
    assert len(notes) == ROUNDS
