"""Servers started before their station: the first session adopts the process started for its
server as it runs now, and what nobody adopted is stopped. Real subprocesses (the tiny server)."""

from __future__ import annotations

import anyio
import pytest
from mcp.client.stdio import get_default_environment
from station_helpers import START_TIMEOUT_S, pid_alive, tiny

from mcpstation import Station, StationConfig
from mcpstation.connection._launch import default_environment
from mcpstation.connection.early import EarlyStarts

pytestmark = pytest.mark.anyio


def config(*servers: dict[str, object]) -> StationConfig:
    return StationConfig(servers=servers)


async def test_the_servers_first_session_adopts_the_process_started_early():
    chosen = config(tiny("t"), tiny("u"))
    early = EarlyStarts()
    started = early.start(chosen.server("t"))
    assert started is not None
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(chosen, early=early) as station:
                pids = {server.name: server.pid for server in station.status().servers}
                assert pids["t"] == started.process.pid  # adopted, not spawned again
                assert pids["u"] not in (None, started.process.pid)
                assert (await station.call_tool("mcp_t_echo", {"message": "hi"})).text == "hi"
        assert started.process.returncode is not None  # stopped and reaped with its session
    finally:
        await early.aclose()


async def test_a_process_started_for_another_launch_is_not_adopted_and_is_stopped():
    early = EarlyStarts()
    started = early.start(config(tiny("t", env={"MODE": "old"})).server("t"))
    assert started is not None
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config(tiny("t", env={"MODE": "new"})), early=early) as station:
                (status,) = station.status().servers
                assert status.pid not in (None, started.process.pid)
                assert started.process.poll() is None  # still waiting for a session that never comes
    finally:
        with anyio.fail_after(START_TIMEOUT_S):
            await early.aclose()
    assert started.process.returncode is not None and not pid_alive(started.process.pid)


async def test_only_a_server_the_station_would_run_starts_early():
    early = EarlyStarts()
    refused = config(
        tiny("off", enabled=False),
        tiny("unusable", unusable="its env file is missing"),
        {"name": "missing", "command": "no-such-command-anywhere"},
    )
    try:
        assert [early.start(spec) for spec in refused.servers] == [None, None, None]
    finally:
        await early.aclose()


def test_every_server_inherits_the_sdks_short_list(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SHELL", "() { :; }; echo exported function")  # skipped by both
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("LOGNAME", raising=False)
    assert default_environment() == get_default_environment()
    assert "SHELL" not in default_environment() and default_environment()["TERM"] == "xterm"
