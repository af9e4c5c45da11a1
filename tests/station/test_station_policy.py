"""Policy inside the station: the fetch preset's URL guard refuses internal addresses as a result."""

from __future__ import annotations

import anyio
import pytest
from station_helpers import START_TIMEOUT_S, demo, inproc

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


async def test_role_visibility_filters_the_catalog_and_refuses_hidden_tools():
    from mcpstation.config.models import Role
    from mcpstation.pipeline import Caller, Face

    servers = [inproc("open"), inproc("ops", min_role="admin"), inproc("mixed", tool_roles={"fail": "admin"})]
    user, admin = Caller.token("alice", Role.USER, Face.HTTP_API), Caller.token("root", Role.ADMIN, Face.HTTP_API)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=servers)) as station:
            seen = {t.name for t in station.tools_for(user)}
            assert "mcp_open_add" in seen and "mcp_mixed_add" in seen
            assert not any(n.startswith("mcp_ops_") for n in seen) and "mcp_mixed_fail" not in seen
            assert "mcp_ops_add" in {t.name for t in station.tools_for(admin)}
            hidden = await station.call_tool("mcp_ops_add", {"a": 1, "b": 1}, caller=user)
            assert not hidden.ok and "no tool 'mcp_ops_add'" in hidden.error
            assert (await station.call_tool("mcp_ops_add", {"a": 1, "b": 1}, caller=admin)).ok


def test_descriptions_are_cleaned_of_control_characters_and_capped():
    import mcp_types as types

    from mcpstation.catalog import Catalog, ServerListing
    from mcpstation.policy import clean_text

    nasty = types.Tool(name="t", description="ok\x1b[31m\u202eevil\u200b" + "x" * 5000, input_schema={"type": "object"})
    catalog = Catalog.build(
        [ServerListing(server="s", tools=(nasty,))], naming="bare", clean=lambda t: clean_text(t, max_chars=100)
    )
    description = catalog.tools["t"].description
    assert "\x1b" not in description and "\u202e" not in description and "\u200b" not in description
    assert len(description) <= 140
