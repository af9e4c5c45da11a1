"""The LLM surface per caller and the meta-tools answered in resolution, over in-process servers with the
real tool lists of public MCP servers (bench/search/servers)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from listed_server import build_listed_server, generated_tools, stored_tools
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Caller, Face, InProcessServerSpec, Role, Station, StationConfig
from mcpstation.catalog import estimate_tool_tokens
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import META_TOOLS
from mcpstation.testing.demo_server import build_demo_server

pytestmark = pytest.mark.anyio

USER = Caller("model", Role.USER, Face.LLM)
ADMIN = Caller.library()
CHANGE_TIMEOUT_S = 30.0  # a listing change reaching the catalog and the index on a loaded machine


def listed(name: str, tools: Any = None, **fields: Any) -> InProcessServerSpec:
    """An in-process server listing `tools` (default: the stored listing of the public server `name`)."""
    listing = stored_tools(name) if tools is None else tools
    return InProcessServerSpec(name=name, server=build_listed_server(name, listing), **fields)


def config(*servers: InProcessServerSpec, **station: Any) -> StationConfig:
    return StationConfig(servers=servers, station=station)


def names(tools: Any) -> list[str]:
    return [t.name for t in tools]


async def test_auto_hands_the_search_surface_only_to_a_caller_over_the_threshold():
    # github 26 (admins only) + gitlab 9 + slack 8: an admin sees 43 tools, a user 17.
    servers = (listed("github", min_role=Role.ADMIN), listed("gitlab"), listed("slack"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            assert len(station.visible_tools(ADMIN)) == 43 and len(station.visible_tools(USER)) == 17
            assert names(station.tools_for(ADMIN)) == list(META_TOOLS)
            assert names(station.tools_for(USER)) == names(station.visible_tools(USER))
            assert station.requests.surface_for(ADMIN).search and not station.requests.surface_for(USER).search


async def test_auto_turns_search_on_for_few_tools_over_the_token_budget():
    # Notion's 24 tools are estimated at ~17k schema tokens: under the tool threshold, over the token budget.
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(listed("notion"))) as station:
            visible = station.visible_tools(USER)
            assert len(visible) == 24 and sum(map(estimate_tool_tokens, visible)) > 10_000
            assert names(station.tools_for(USER)) == list(META_TOOLS)
        async with Station(config(listed("notion"), tool_search_token_budget=50_000)) as station:
            assert len(station.tools_for(USER)) == 24


async def test_on_and_off_override_the_sizes():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("demo"), tool_search="on")) as station:
            assert names(station.tools_for(USER)) == list(META_TOOLS)
        servers = (listed("github"), listed("gitlab"), listed("slack"))
        async with Station(config(*servers, tool_search="off")) as station:
            assert len(station.tools_for(USER)) == 43
            result = await station.call_tool("mcp_search_tools", {"query": "open an issue"}, caller=USER)
            assert result.outcome is Outcome.NOT_FOUND and result.error.startswith("no tool 'mcp_search_tools'.")


async def test_pinned_tools_stay_on_the_search_surface_by_station_and_server_globs():
    servers = (listed("github"), listed("gitlab", always_visible=("create_issue",)), listed("slack"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, always_visible=("mcp_slack_*",))) as station:
            surface = names(station.tools_for(USER))
    slack = [f"mcp_slack_{t.name}" for t in stored_tools("slack")]
    assert surface == ["mcp_gitlab_create_issue", *slack, *META_TOOLS]


async def test_meta_tool_names_are_reserved_for_the_host_whatever_the_mode():
    [widget] = generated_tools(1)
    squatter = listed("squat", [widget, *(widget.model_copy(update={"name": n}) for n in META_TOOLS)], naming="bare")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(squatter, listed("slack"), tool_search="on")) as station:
            reserved = {c.name for c in station.catalog.conflicts if c.reason == "name is reserved for the host"}
            assert reserved == set(META_TOOLS) and not set(META_TOOLS) & set(station.catalog.tools)
            found = await station.call_tool("mcp_search_tools", {"query": "post a message"}, caller=USER)
    assert found.ok and found.server == "mcpstation"
    assert found.structured is not None and all(t["server"] != "squat" for t in found.structured["tools"])


async def test_a_search_answers_public_name_server_description_schema_and_score_best_first():
    servers = (listed("github"), listed("gitlab"), listed("slack"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, tool_search="on")) as station:
            found = await station.call_tool(
                "mcp_search_tools", {"query": "post a message in a slack channel", "limit": 3}, caller=USER
            )
            only_gitlab = await station.call_tool(
                "mcp_search_tools", {"query": "create an issue", "server": "gitlab", "limit": 20}, caller=USER
            )
            catalog = station.catalog
    assert found.ok and found.structured is not None
    hits = found.structured["tools"]
    assert len(hits) == 3 and hits[0]["name"] == "mcp_slack_slack_post_message"
    assert set(hits[0]) == {"name", "server", "tool", "score", "description", "input_schema"}
    assert hits[0]["input_schema"] == dict(catalog.tools["mcp_slack_slack_post_message"].input_schema)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert only_gitlab.structured is not None
    gitlab = only_gitlab.structured["tools"]
    assert gitlab and {h["server"] for h in gitlab} == {"gitlab"} and gitlab[0]["tool"] == "create_issue"


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("mcp_search_tools", {}, "needs `query`"),
        ("mcp_search_tools", {"query": "   "}, "needs `query`"),
        ("mcp_search_tools", {"query": "issue", "limit": 0}, "`limit` must be"),
        ("mcp_search_tools", {"query": "issue", "limit": 21}, "`limit` must be"),
        ("mcp_search_tools", {"query": "issue", "limit": "5"}, "`limit` must be"),
        ("mcp_search_tools", {"query": "issue", "limit": True}, "`limit` must be"),
        ("mcp_search_tools", {"query": "issue", "server": 3}, "`server` must be"),
        ("mcp_call_tool", {}, "needs `name`"),
        ("mcp_call_tool", {"name": "mcp_slack_slack_list_channels", "arguments": [1]}, "must be an object"),
    ],
)
async def test_bad_meta_tool_arguments_are_tool_errors_the_model_can_read(tool: str, arguments: dict, says: str):
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(listed("slack"), tool_search="on")) as station:
            result = await station.call_tool(tool, arguments, caller=USER)
    assert result.outcome is Outcome.TOOL_ERROR and result.raw is not None and result.raw.is_error
    assert says in (result.error or "")


async def test_mcp_call_tool_answers_exactly_as_the_direct_call():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(listed("slack"), listed("gitlab", min_role=Role.ADMIN), tool_search="on")) as st:
            arguments = {"channel_id": "C1", "text": "hi"}
            direct = await st.call_tool("mcp_slack_slack_post_message", arguments, caller=USER)
            inner = await st.call_tool(
                "mcp_call_tool", {"name": "mcp_slack_slack_post_message", "arguments": arguments}, caller=USER
            )
            hidden = [
                await st.call_tool(name, args, caller=USER)
                for name, args in (
                    ("mcp_gitlab_create_issue", {}),
                    ("mcp_call_tool", {"name": "mcp_gitlab_create_issue"}),
                    ("mcp_slack_nope", {}),
                    ("mcp_call_tool", {"name": "mcp_slack_nope"}),
                )
            ]
    assert direct.ok and inner.ok
    assert (inner.name, inner.server, inner.tool, inner.structured) == (
        direct.name, direct.server, direct.tool, direct.structured
    )  # fmt: skip
    assert inner.structured == {"server": "slack", "tool": "slack_post_message", "arguments": arguments}
    hidden_direct, hidden_inner, unknown_direct, unknown_inner = hidden
    assert hidden_direct.outcome is hidden_inner.outcome is Outcome.NOT_FOUND
    assert hidden_direct.error == hidden_inner.error == "no tool 'mcp_gitlab_create_issue'."
    assert unknown_direct.error == unknown_inner.error and unknown_inner.outcome is Outcome.NOT_FOUND


async def test_the_index_follows_a_listing_change_and_a_server_leaving():
    demo = inproc("demo", server=build_demo_server(registering=True))
    with anyio.fail_after(START_TIMEOUT_S + CHANGE_TIMEOUT_S):
        async with Station(config(demo, listed("slack"), tool_search="on")) as station:
            assert not await station.search_tools("launch the rocket", caller=USER)
            with station.events.subscribe() as events:
                registered = await station.call_tool("mcp_demo_register_tool", {"name": "launch_rocket"})
                assert registered.ok, registered.error
                async for event in events:
                    if event.kind == "catalog" and "mcp_demo_launch_rocket" in station.catalog.tools:
                        break
            [hit] = await station.search_tools("launch the rocket", caller=USER, limit=1)
            assert (hit.tool.name, hit.tool.server) == ("mcp_demo_launch_rocket", "demo")

            await station.reload(config(listed("slack"), tool_search="on"))
            assert not await station.search_tools("launch the rocket", caller=USER)
            assert (await station.search_tools("post a message", caller=USER, limit=1))[0].tool.server == "slack"
