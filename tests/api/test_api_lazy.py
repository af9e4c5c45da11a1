"""A lazy server through the HTTP faces: listed from the cache while IDLE, started by a call over
the API or the gateway, like any other request."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from api_helpers import START_TIMEOUT_S, running_api
from listed_server import build_listed_server, generated_tools
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcpstation import InProcessServerSpec, Station, StationConfig
from mcpstation.connection import ConnectionState
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

SETTINGS = {"health_interval_s": 0}


def lazy(name: str) -> InProcessServerSpec:
    server = build_listed_server(name, generated_tools(3, topic=name))
    return InProcessServerSpec(name=name, server=server, start="lazy")


async def test_idle_lazy_servers_are_listed_and_started_by_api_and_gateway_calls(tmp_path: Path):
    servers = (lazy("api_side"), lazy("gateway_side"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:  # a first run fills the catalog cache
            async with Station(StationConfig(servers=servers, station=SETTINGS), store=store):
                pass
        async with running_api(tmp_path, servers, station_settings=SETTINGS) as api, api.client("user") as user:
            states = {s["name"]: s["state"] for s in (await user.get("/api/mcp/servers")).json()["servers"]}
            assert states == {"api_side": "IDLE", "gateway_side": "IDLE"}
            names = {t["name"] for t in (await user.get("/api/mcp/tools")).json()["tools"]}
            assert {"mcp_api_side_api_side_step_0", "mcp_gateway_side_gateway_side_step_2"} <= names

            called = await user.post("/api/mcp/tools/mcp_api_side_api_side_step_0/call", json={"id": "7"})
            assert called.status_code == 200, called.text
            answer = {"server": "api_side", "tool": "api_side_step_0", "arguments": {"id": "7"}}
            assert called.json()["structured"] == answer
            assert api.station.connection("api_side").state is ConnectionState.READY
            assert api.station.connection("gateway_side").state is ConnectionState.IDLE

            headers = {"Authorization": f"Bearer {api.tokens['user']}"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http_client:
                transport = streamable_http_client(f"{api.url}/mcp", http_client=http_client)
                async with Client(transport, mode="legacy") as gateway:
                    listed = {tool.name for tool in (await gateway.list_tools()).tools}
                    assert "mcp_gateway_side_gateway_side_step_1" in listed  # 6 tools: no tool search
                    result = await gateway.call_tool("mcp_gateway_side_gateway_side_step_1", {"id": "x"})
            assert not result.is_error and result.structured_content == {
                "server": "gateway_side",
                "tool": "gateway_side_step_1",
                "arguments": {"id": "x"},
            }
            assert api.station.connection("gateway_side").state is ConnectionState.READY
