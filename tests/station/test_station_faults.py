"""Hostile stdio servers through the whole station: what a caller of `Station.call_tool` sees.

The transport tests (tests/connection/test_stdio_faults.py) show each fault at the byte level;
these show the same faults end to end, with a healthy in-process neighbour in the same station:
each fault ends in bounded time with a typed `Outcome`, the neighbour's latency stays near its
idle latency (the flood competes with it for the station's one event loop), memory stays bounded
and no process is left once the station has closed.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _processes import alive, peak_rss, processes_left_checked
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.connection.limits import DEFAULT_MAX_MESSAGE_BYTES
from mcpstation.outcomes import Outcome
from mcpstation.testing import rogue_server_params
from mcpstation.testing._rogue import INJECTED

pytestmark = pytest.mark.anyio

FAULT_BOUND_S = 10.0  # each fault ends this fast, never at a request timeout
NEIGHBOUR_CALLS = 20
LATENCY_FLOOR_S = 0.2  # a loaded 2-core CI machine adds this much noise; a starved loop costs seconds
MEMORY_SLACK_BYTES = 32 * 1024 * 1024
STORM_WINDOW_S = 3.0  # the list_changed storm is judged over the first seconds of the session...
MAX_LISTS_IN_WINDOW = 10  # ...and costs at most this many tools/list in them


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    with processes_left_checked():
        yield


def _station(mode: str, *args: str) -> StationConfig:
    params = rogue_server_params(mode, *args)
    rogue = {"name": "rogue", "command": params.command, "args": list(params.args), "protocol": "legacy"}
    return StationConfig(servers=[rogue, inproc("calm")])


async def _neighbour_p95(station: Station) -> float:
    took: list[float] = []
    for i in range(NEIGHBOUR_CALLS):
        started = anyio.current_time()
        result = await station.call_tool("mcp_calm_add", {"a": i, "b": 1})
        took.append(anyio.current_time() - started)
        assert result.outcome is Outcome.OK and result.text == str(i + 1)
    return statistics.quantiles(took, n=20)[-1]


def _near(during: float, idle: float) -> bool:
    return during <= max(2 * idle, idle + LATENCY_FLOOR_S)


async def _call(station: Station, tool: str, arguments: dict[str, Any]) -> Any:
    with anyio.fail_after(FAULT_BOUND_S):
        return await station.call_tool(f"mcp_rogue_{tool}", arguments)


async def test_a_notification_flood_leaves_both_servers_answering() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("notification-flood")) as station:
            idle = await _neighbour_p95(station)
            assert (await _call(station, "flood", {})).text == "flooding 200000"
            echoed = await _call(station, "echo", {"message": "during the flood"})
            during = await _neighbour_p95(station)
            status = next(s for s in station.status().servers if s.name == "rogue")
    assert echoed.outcome is Outcome.OK and echoed.text == "during the flood"
    assert _near(during, idle), f"neighbour p95 {during * 1000:.1f} ms during the flood, {idle * 1000:.1f} ms idle"
    assert status.state == "READY"


async def test_a_list_changed_storm_leaves_the_catalog_usable() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("list-changed-storm")) as station:
            idle = await _neighbour_p95(station)
            echoed = [await _call(station, "echo", {"message": f"m{i}"}) for i in range(5)]
            during = await _neighbour_p95(station)
            assert "mcp_rogue_echo" in {t.name for t in station.tools}
    assert [(r.outcome, r.text) for r in echoed] == [(Outcome.OK, f"m{i}") for i in range(5)]
    assert _near(during, idle), f"neighbour p95 {during * 1000:.1f} ms during the storm, {idle * 1000:.1f} ms idle"


async def test_ten_thousand_list_changed_cost_a_few_listings_one_at_a_time() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("list-changed-storm", "--count", "10000")) as station:
            await anyio.sleep(STORM_WINDOW_S)  # the window the bound is about, not a wait for an event
            stats = json.loads((await _call(station, "list_stats", {})).text)
    # The start's listing, then refreshes spaced further apart while every listing announces another.
    assert stats["lists"] <= MAX_LISTS_IN_WINDOW, stats
    assert stats["most_open"] == 1, stats


async def test_a_leader_exiting_with_a_grandchild_on_stdout_is_a_lost_connection_and_ends_the_group(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("exit-with-grandchild", "--pidfile", str(pidfile))) as station:
            grandchild = int(pidfile.read_text())
            assert alive(grandchild)
            exited = await _call(station, "exit_now", {})
            with anyio.fail_after(FAULT_BOUND_S):
                while alive(grandchild):  # noqa: ASYNC110 - a pid has no event to wait on
                    await anyio.sleep(0.05)
            await _neighbour_p95(station)  # the neighbour still answers every call
    assert exited.outcome is Outcome.CONNECTION_LOST and not exited.ok


async def test_lying_answers_never_reach_the_caller_or_the_catalog() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("lying-answers")) as station:
            echoed = [await _call(station, "echo", {"message": f"m{i}"}) for i in range(5)]
            catalog = [t.name for t in station.tools if t.server == "rogue"]
            seen = json.dumps([[r.text for r in echoed], catalog, [t.description for t in station.tools]])
    assert [(r.outcome, r.text) for r in echoed] == [(Outcome.OK, f"m{i}") for i in range(5)]
    assert catalog == ["mcp_rogue_echo"] and INJECTED not in seen


async def test_a_server_guessing_request_ids_gets_nothing_into_the_catalog_or_a_result() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("pre-answers")) as station:
            echoed = [await _call(station, "echo", {"message": f"m{i}"}) for i in range(5)]
            catalog = [t.name for t in station.tools if t.server == "rogue"]
            rogue = station.connection("rogue")
            seen = json.dumps([[r.text for r in echoed], catalog, [t.description for t in station.tools]])
    assert [(r.outcome, r.text) for r in echoed] == [(Outcome.OK, f"m{i}") for i in range(5)]
    assert catalog == ["mcp_rogue_echo"] and INJECTED not in seen
    assert rogue.server_name == "rogue"


async def test_a_50_mib_line_is_too_large_in_bounded_memory_and_the_server_keeps_serving() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("big-line")) as station:
            idle = await _neighbour_p95(station)
            with peak_rss() as grown:
                big = await _call(station, "big_line", {"mb": 50})
            peak = grown()
            after = await _call(station, "echo", {"message": "still here"})
            during = await _neighbour_p95(station)
    assert big.outcome is Outcome.TOO_LARGE and "too large" in (big.error or "")
    assert after.outcome is Outcome.OK and after.text == "still here"
    assert peak <= DEFAULT_MAX_MESSAGE_BYTES + MEMORY_SLACK_BYTES, f"peak RSS grew {peak // 2**20} MiB"
    assert _near(during, idle)


async def test_an_endless_line_fails_the_next_call_in_bounded_memory() -> None:
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(_station("endless-line")) as station:
            started = await _call(station, "endless", {})
            with peak_rss() as grown:
                behind = await _call(station, "echo", {"message": "behind the endless line"})
            peak = grown()
            await _neighbour_p95(station)  # the neighbour still answers every call
    assert started.outcome is Outcome.OK and started.text == "ok"
    assert behind.outcome in (Outcome.TOO_LARGE, Outcome.CONNECTION_LOST), behind
    assert peak <= DEFAULT_MAX_MESSAGE_BYTES + MEMORY_SLACK_BYTES, f"peak RSS grew {peak // 2**20} MiB"
