"""The same demo server reached over streamable HTTP, SSE and WebSocket through the station."""

from __future__ import annotations

import os
import signal
from urllib.parse import urlparse

import anyio
import pytest
from anyio.abc import TaskStatus
from station_helpers import START_TIMEOUT_S

from mcpstation import Station, StationConfig
from mcpstation.catalog.results import ToolResult
from mcpstation.connection import ConnectionState
from mcpstation.outcomes import Outcome
from mcpstation.testing import RunningServer, serve_demo

pytestmark = pytest.mark.anyio

KINDS = {"http": "streamable_http", "sse": "sse", "ws": "websocket"}
RESTART_TEST_S = 240.0  # two server starts and a station's: over a minute on a loaded 2-core machine


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
async def test_remote_transports_list_and_call(transport: str, protocol: str):
    with anyio.fail_after(START_TIMEOUT_S):
        async with serve_demo(transport) as server:  # type: ignore[arg-type]
            spec = {"name": "remote", "transport": KINDS[transport], "url": server.url, "protocol": protocol}
            async with Station(StationConfig(servers=[spec])) as station:
                [status] = station.status().servers
                assert status.state == "READY", status.error
                expected = "2026-07-28" if protocol == "auto" else "2025-11-25"
                assert status.protocol_version == expected
                assert status.tools == 12 and status.templates == 1
                result = await station.call_tool("mcp_remote_add", {"a": 20, "b": 22})
                assert result.ok and result.structured == {"result": 42}
                assert (await station.read_resource("demo://notes/7")).contents


async def test_http_server_that_is_not_there_is_reported_not_fatal():
    spec = {"name": "gone", "transport": "http", "url": "http://127.0.0.1:9/mcp", "startup_timeout_s": 5}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[spec])) as station:
            [status] = station.status().servers
            assert status.state == "FAILED"
            assert status.error


async def test_bearer_token_and_headers_reach_the_server_but_never_status():
    with anyio.fail_after(START_TIMEOUT_S):
        async with serve_demo("http") as server:
            spec = {
                "name": "auth",
                "transport": "http",
                "url": server.url,
                "bearer_token": "tok-sentinel-123",
                "headers": {"X-Api-Key": "key-sentinel-456"},
            }
            async with Station(StationConfig(servers=[spec])) as station:
                text = str(station.status().to_dict())
                assert "tok-sentinel-123" not in text and "key-sentinel-456" not in text
                assert station.status().servers[0].state == "READY"


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_an_http_entry_for_a_server_that_speaks_only_sse_falls_back_and_says_so_once(
    protocol: str, caplog: pytest.LogCaptureFixture
):
    with anyio.fail_after(START_TIMEOUT_S):
        async with serve_demo("sse") as server:
            spec = {"name": "old", "transport": "http", "url": server.url, "protocol": protocol}
            async with Station(StationConfig(servers=[spec])) as station:
                [status] = station.status().servers
                assert status.state == "READY", status.error
                result = await station.call_tool("mcp_old_add", {"a": 20, "b": 22})
                assert result.ok and result.structured == {"result": 42}
                assert station.connection("old").info.transport == "sse"
                said = [w for w in status.warnings if "HTTP+SSE" in w]
                assert len(said) == 1 and "connected over SSE" in said[0]
                assert len([w for w in station.status().servers[0].warnings if "HTTP+SSE" in w]) == 1
    assert len([r for r in caplog.records if "HTTP+SSE" in r.getMessage()]) == 1


async def test_an_http_server_that_is_down_does_not_fall_back_to_sse():
    spec = {"name": "gone", "transport": "http", "url": "http://127.0.0.1:9/mcp", "startup_timeout_s": 5}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[spec])) as station:
            [status] = station.status().servers
            assert status.state == "FAILED"
            assert station.connection("gone").info.transport is None
            assert not [w for w in status.warnings if "SSE" in w]


async def _serve_until(stop: anyio.Event, *, task_status: TaskStatus[RunningServer]) -> None:
    async with serve_demo("http") as server:
        task_status.started(server)
        await stop.wait()


@pytest.mark.timeout(RESTART_TEST_S + 30)
async def test_a_session_the_restarted_server_forgot_is_renewed_at_once_and_the_requests_sent_again():
    stop_first = anyio.Event()
    with anyio.fail_after(RESTART_TEST_S):
        async with anyio.create_task_group() as servers:
            server = await servers.start(_serve_until, stop_first)
            port = urlparse(server.url).port
            spec = {"name": "remote", "transport": "http", "url": server.url, "protocol": "legacy"}
            settings = {"health_interval_s": 0, "restart_backoff_s": 30}  # a backoff would show
            async with Station(StationConfig(servers=[spec], station=settings)) as station:
                assert (await station.call_tool("mcp_remote_add", {"a": 1, "b": 2})).structured == {"result": 3}
                connection = station.connection("remote")
                os.kill(server.pid, signal.SIGKILL)  # the server dies between requests, and forgets every session
                stop_first.set()
                async with serve_demo("http", port=port or 0):
                    started = anyio.current_time()
                    # The call's own request is refused for its unknown session: it never ran, so it is sent again.
                    called = await station.call_tool("mcp_remote_add", {"a": 2, "b": 3})
                    renewed_in = anyio.current_time() - started
                    read = await station.read_resource("demo://notes/7")
                    assert called.ok and called.structured == {"result": 5}, called.error
                    assert read.contents
                    assert connection.is_ready and connection.restarts == 1
    assert renewed_in < 30  # at once, not after the restart backoff


@pytest.mark.timeout(RESTART_TEST_S + 30)
async def test_a_call_cut_by_a_server_restart_fails_clearly_and_the_server_comes_back():
    stop_first = anyio.Event()
    cut: list[ToolResult] = []
    with anyio.fail_after(RESTART_TEST_S):
        async with anyio.create_task_group() as servers:
            server = await servers.start(_serve_until, stop_first)
            port = urlparse(server.url).port
            spec = {"name": "remote", "transport": "http", "url": server.url, "protocol": "legacy"}
            settings = {"health_interval_s": 0, "restart_backoff_s": 0.2, "restart_backoff_max_s": 1.0}
            settings["max_consecutive_failures"] = 1000  # it keeps trying while the server restarts
            async with Station(StationConfig(servers=[spec], station=settings)) as station:
                connection = station.connection("remote")
                async with anyio.create_task_group() as tg:

                    async def slow_call() -> None:
                        cut.append(await station.call_tool("mcp_remote_slow", {"seconds": 30}))

                    tg.start_soon(slow_call)
                    while connection.idle_remaining_s() is not None:  # noqa: ASYNC110 - no event says "sent"
                        await anyio.sleep(0.01)
                    os.kill(server.pid, signal.SIGKILL)  # the server dies mid-call
                stop_first.set()
                async with serve_demo("http", port=port or 0):
                    await connection.wait_for_state(ConnectionState.READY)
                    after = await station.call_tool("mcp_remote_add", {"a": 2, "b": 3})
                    assert after.ok and after.structured == {"result": 5}, after.error
    [interrupted] = cut
    assert not interrupted.ok and interrupted.outcome is Outcome.CONNECTION_LOST
    assert "not retried" in (interrupted.error or "")  # a call that may have run is never sent twice
