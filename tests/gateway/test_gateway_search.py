"""Tool search through the gateway, as a downstream MCP client sees it: a real SDK `Client` over streamable
HTTP, each request running as its caller, the servers in process with the real tool lists of public servers."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_helpers import CALL_TIMEOUT_S, http_gateway, push
from listed_server import build_listed_server, stored_tools
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcpstation import Caller, Face, InProcessServerSpec, Role, StationConfig
from mcpstation.pipeline import META_TOOLS

pytestmark = pytest.mark.anyio

USER = Caller.token("ci-bot", Role.USER, Face.GATEWAY)


def listed(name: str, **fields: Any) -> InProcessServerSpec:
    return InProcessServerSpec(name=name, server=build_listed_server(name, stored_tools(name)), **fields)


def fleet() -> StationConfig:
    """A user sees gitlab, slack, git and playwright (54 tools: over the threshold); github is for admins."""
    servers = (
        listed("github", min_role=Role.ADMIN),
        listed("gitlab"),
        listed("slack"),
        listed("git", always_visible=("git_status",)),
        listed("playwright"),
    )
    return StationConfig(servers=servers)


def hits(result: Any) -> list[dict[str, Any]]:
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return list(result.structured_content["tools"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_user_lists_the_search_surface_then_searches_and_calls_through_it(mode: str):
    async with http_gateway(fleet(), caller=USER) as (_, url), Client(url, mode=mode) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            listed_tools = (await client.list_tools()).tools
            assert [t.name for t in listed_tools] == ["mcp_git_git_status", *META_TOOLS]
            search = next(t for t in listed_tools if t.name == "mcp_search_tools")
            assert search.input_schema["required"] == ["query"] and "gitlab (9)" in (search.description or "")
            assert "github" not in (search.description or "")

            found = hits(await client.call_tool("mcp_search_tools", {"query": "open a new issue", "limit": 10}))
            assert found[0]["name"] == "mcp_gitlab_create_issue" and found[0]["input_schema"]["type"] == "object"
            assert all(hit["server"] != "github" for hit in found)

            arguments = {"project_id": "42", "title": "flaky test"}
            called = await client.call_tool(
                "mcp_call_tool", {"name": "mcp_gitlab_create_issue", "arguments": arguments}
            )
            assert not called.is_error
            assert called.structured_content == {"server": "gitlab", "tool": "create_issue", "arguments": arguments}

            direct = await client.call_tool("mcp_slack_slack_list_channels", {})  # not on the surface, still callable
            assert not direct.is_error and direct.structured_content["tool"] == "slack_list_channels"

            # The same words both ways: the meta-tool's error result (the model corrects its argument),
            # and, called directly, the protocol error for a tool the caller does not have.
            hidden_inner = await client.call_tool("mcp_call_tool", {"name": "mcp_github_create_issue", "arguments": {}})
            with pytest.raises(MCPError) as hidden_direct:
                await client.call_tool("mcp_github_create_issue", {})
            assert hidden_inner.is_error and hidden_direct.value.error.code == types.INVALID_PARAMS
            assert hidden_inner.content[0].text == hidden_direct.value.error.message
            assert hidden_direct.value.error.message == "no tool 'mcp_github_create_issue'."

            bad = await client.call_tool("mcp_search_tools", {"query": ""})
            assert bad.is_error and "needs `query`" in bad.content[0].text


async def test_the_local_admin_finds_the_admin_only_server_s_tools_too():
    async with http_gateway(fleet()) as (_, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            assert [t.name for t in (await client.list_tools()).tools] == ["mcp_git_git_status", *META_TOOLS]
            found = hits(await client.call_tool("mcp_search_tools", {"query": "open a new issue on GitHub"}))
            assert found[0]["name"] == "mcp_github_create_issue"
            issue = {"owner": "octo", "repo": "demo", "title": "x"}  # what create_issue requires
            called = await client.call_tool("mcp_call_tool", {"name": "mcp_github_create_issue", "arguments": issue})
            assert not called.is_error and called.structured_content["server"] == "github"


async def _on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def test_an_upstream_question_during_mcp_call_tool_reaches_the_downstream_client():
    config = StationConfig(servers=(push("p"),), station={"tool_search": "on"})
    async with http_gateway(config) as (_, url), Client(url, mode="legacy", elicitation_callback=_on_elicit) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            asked = await client.call_tool("mcp_call_tool", {"name": "mcp_p_ask_name"})
    assert not asked.is_error and asked.content[0].text == "accept:Ada"
