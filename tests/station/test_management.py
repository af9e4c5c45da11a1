"""The LLM manages servers in conversation, through the same rules as every other face."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from station_helpers import START_TIMEOUT_S, demo

from mcpstation import Station, StationConfig
from mcpstation.config.models import Role
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller, Face
from mcpstation.store import Store
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

SETTINGS = {"management_tools": True}
POLICY = {"allowed_dynamic_url_prefixes": ["http://localhost:"], "allowed_dynamic_stdio_commands": ["npx"]}


async def test_connect_the_server_on_a_local_port_in_conversation(tmp_path: Path):
    async with serve_demo("sse") as local:
        url = local.url.replace("127.0.0.1", "localhost")
        config = StationConfig(station=SETTINGS, policy=POLICY, servers=[demo("static")])
        with anyio.fail_after(START_TIMEOUT_S):
            async with await Store.open(data_dir=tmp_path) as store, Station(config, store=store) as station:
                names = {t.name for t in station.tools}
                assert {"mcp_add_server", "mcp_remove_server", "mcp_list_servers", "mcp_reload_server"} <= names
                added = await station.call_tool("mcp_add_server", {"name": "local-api", "transport": "sse", "url": url})
                assert added.ok and added.text == "connected 'local-api': 12 tools"
                assert (await station.call_tool("mcp_local-api_add", {"a": 1, "b": 2})).ok
                listed = await station.call_tool("mcp_list_servers", {})
                assert '"local-api"' in listed.text and '"dynamic"' in listed.text
                refused = await station.call_tool(
                    "mcp_add_server", {"name": "shell", "transport": "stdio", "command": sys.executable, "args": []}
                )
                assert not refused.ok and "not in policy.allowed_dynamic_stdio_commands" in refused.text
                assert refused.outcome is Outcome.REFUSED
                outside = await station.call_tool(
                    "mcp_add_server",
                    {"name": "meta", "transport": "streamable_http", "url": "http://169.254.169.254/mcp"},
                )
                assert not outside.ok and "refused" in outside.text
                removed = await station.call_tool("mcp_remove_server", {"name": "local-api"})
                assert removed.ok and "mcp_local-api_add" not in {t.name for t in station.tools}
                static = await station.call_tool("mcp_remove_server", {"name": "static"})
                assert not static.ok and "static server" in static.text
                actions = [(a.action, a.actor, a.server) for a in await store.list_actions()]
                assert ("add", "llm:library", "local-api") in actions and (
                    "remove",
                    "llm:library",
                    "local-api",
                ) in actions


async def test_management_tools_are_for_admins_only(tmp_path: Path):
    config = StationConfig(station=SETTINGS, policy=POLICY)
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store, Station(config, store=store) as station:
            user = Caller.token("bob", Role.USER, Face.HTTP_API)
            assert "mcp_add_server" not in {t.name for t in station.tools_for(user)}
            result = await station.call_tool("mcp_list_servers", {}, caller=user)
            assert result.outcome is Outcome.NOT_FOUND and result.error == "no tool 'mcp_list_servers'."


async def test_management_tools_are_an_ordinary_in_process_server(tmp_path: Path):
    config = StationConfig(station=SETTINGS, policy=POLICY)
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store, Station(config, store=store) as station:
            own = next(s for s in station.status().servers if s.name == "mcpstation")
            assert (str(own.origin), own.transport, str(own.state), own.tools) == ("host", "inprocess", "READY", 6)
            entry = station.catalog.tools["mcp_list_servers"]
            assert (entry.server, entry.tool) == ("mcpstation", "mcp_list_servers")
            assert station.connection("mcpstation").is_ready
            listed = await station.call_tool("mcp_list_servers", {})
            assert listed.ok and listed.server == "mcpstation" and listed.raw is not None
        async with await Store.open(data_dir=tmp_path) as store:
            audited = [(c.server, c.tool, c.outcome, c.caller) for c in await store.list_calls()]
            assert ("mcpstation", "mcp_list_servers", Outcome.OK, "library") in audited


async def test_management_tools_are_off_unless_configured(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store, Station(StationConfig(), store=store) as station:
            assert station.tools == []
