"""Entering and leaving a station: its task group is unwound in order, whatever ends the block."""

from __future__ import annotations

import anyio
import pytest
from _processes import processes_left_checked
from station_helpers import START_TIMEOUT_S, inproc, tiny

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState
from mcpstation.errors import UsageError

pytestmark = pytest.mark.anyio


class Boom(Exception):
    pass


async def test_an_error_in_the_block_reaches_the_caller_as_itself_and_the_station_stops():
    station = Station(StationConfig(servers=[inproc("demo")]))
    with anyio.fail_after(START_TIMEOUT_S), pytest.raises(Boom):  # not inside an ExceptionGroup
        async with station:
            assert (await station.call_tool("mcp_demo_add", {"a": 1, "b": 2})).ok
            raise Boom
    assert station.connection("demo").state is ConnectionState.STOPPED
    with pytest.raises(UsageError, match="not running"):
        await station.call_tool("mcp_demo_add", {"a": 1, "b": 2})


async def test_a_running_station_cannot_be_entered_twice_but_can_be_again_after_it_stopped():
    station = Station(StationConfig(servers=[inproc("demo")]))
    with anyio.fail_after(START_TIMEOUT_S):
        async with station:
            with pytest.raises(UsageError, match="already running"):
                await station.__aenter__()
        async with station:
            assert (await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})).ok


async def test_a_start_given_up_by_the_caller_ends_the_servers_it_spawned():
    station = Station(StationConfig(servers=[tiny("slow", "--init-delay", "30")]))
    with anyio.fail_after(START_TIMEOUT_S), processes_left_checked():
        with anyio.move_on_after(2.0) as scope:
            async with station:
                pytest.fail("a server that takes 30 s to initialize cannot be ready")
        assert scope.cancelled_caught
    with pytest.raises(UsageError, match="not running"):
        await station.call_tool("mcp_slow_echo", {"message": "x"})
