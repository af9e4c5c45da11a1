"""The same demo server reached over streamable HTTP, SSE and WebSocket through the station."""

from __future__ import annotations

import anyio
import pytest
from station_helpers import START_TIMEOUT_S

from mcpstation import Station, StationConfig
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

KINDS = {"http": "streamable_http", "sse": "sse", "ws": "websocket"}


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
