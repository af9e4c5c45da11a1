"""Policy inside the station: the fetch preset's URL guard refuses internal addresses as a result."""

from __future__ import annotations

import anyio
import pytest
from station_helpers import START_TIMEOUT_S, demo

from mcpstation import Station, StationConfig

pytestmark = pytest.mark.anyio


async def test_fetch_preset_refuses_internal_urls_with_a_result_the_llm_can_read():
    config = StationConfig(presets={"fetch_enabled": True}, servers=[demo("demo")])
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            assert "fetch" in {s.name for s in station.status().servers}
            assert "mcp_fetch_fetch" in {t.name for t in station.tools}
            for url in ("http://169.254.169.254/latest/meta-data/", "http://127.1:8080/", "http://localhost./admin"):
                result = await station.call_tool("mcp_fetch_fetch", {"url": url})
                assert not result.ok
                assert result.structured == {"success": False, "error": result.error}
                assert "Refused to fetch" in result.error
            # the guard applies only to fetch-like servers
            assert (await station.call_tool("mcp_demo_echo", {"message": "http://127.0.0.1/"})).ok


async def test_a_user_server_named_like_the_preset_replaces_it():
    config = StationConfig(presets={"fetch_enabled": True}, servers=[demo("fetch")])
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            [server] = station.status().servers
            assert server.name == "fetch" and "demo_server" in server.target
