"""Tool search and schema tokens over the HTTP API: the token's caller decides what a search can find."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from api_helpers import START_TIMEOUT_S, running_api
from listed_server import build_listed_server, stored_tools

from mcpstation import InProcessServerSpec, Role
from mcpstation.catalog import CatalogTool, estimate_tool_tokens

pytestmark = pytest.mark.anyio


def listed(name: str, **fields: Any) -> InProcessServerSpec:
    return InProcessServerSpec(name=name, server=build_listed_server(name, stored_tools(name)), **fields)


SERVERS = (listed("github", min_role=Role.ADMIN), listed("gitlab"), listed("slack"))


async def test_search_finds_only_what_the_token_s_role_may_see(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, SERVERS) as api, api.client("user") as user, api.client("admin") as admin:
            as_user = await user.get("/api/mcp/tools/search", params={"q": "open a new issue", "limit": 20})
            as_admin = await admin.get("/api/mcp/tools/search", params={"q": "open a new issue on GitHub"})
            one = await user.get("/api/mcp/tools/search", params={"q": "post a message", "server": "slack", "limit": 1})
            hidden = await user.get("/api/mcp/tools/search", params={"q": "create an issue", "server": "github"})
            no_query = await user.get("/api/mcp/tools/search")
            bad_limit = await user.get("/api/mcp/tools/search", params={"q": "issue", "limit": 0})
    assert as_user.status_code == 200, as_user.text
    body = as_user.json()
    assert set(body) == {"query", "hybrid", "tools"} and body["query"] == "open a new issue"
    assert body["tools"][0]["name"] == "mcp_gitlab_create_issue"
    assert all(hit["server"] != "github" for hit in body["tools"])
    assert set(body["tools"][0]) == {"name", "server", "tool", "score", "description"}
    assert as_admin.json()["tools"][0]["name"] == "mcp_github_create_issue"
    assert [hit["name"] for hit in one.json()["tools"]] == ["mcp_slack_slack_post_message"]
    assert hidden.status_code == 200 and hidden.json()["tools"] == []
    assert no_query.status_code == 400 and no_query.json()["type"] == "BadRequest"
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["message"]


async def test_tools_servers_health_and_metrics_carry_schema_tokens(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, SERVERS) as api, api.client("admin") as admin:
            tools = (await admin.get("/api/mcp/tools")).json()["tools"]
            servers = (await admin.get("/api/mcp/servers")).json()
            health = (await admin.get("/api/health")).json()
            metrics = (await admin.get("/metrics")).text
            document = json.loads((await admin.get("/openapi.json")).text)
    assert len(tools) == 43  # every tool the token may see, whatever the LLM surface
    for entry in tools:
        tool = CatalogTool(
            entry["name"], entry["server"], entry["tool"], entry["description"], entry["input_schema"], None
        )  # type: ignore[arg-type]
        assert entry["tokens"] == estimate_tool_tokens(tool)
    total = sum(t["tokens"] for t in tools)
    by_server = {s["name"]: s["tokens"] for s in servers["servers"]}
    assert by_server == {name: sum(t["tokens"] for t in tools if t["server"] == name) for name in by_server}
    assert servers["surface"] == health["surface"]
    surface = health["surface"]
    assert surface["search"] is True and surface["tools"] == 2 == surface["with_search"]["tools"]
    assert surface["without_search"] == {"tools": 43, "tokens": total}
    gauges = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if line.startswith("mcpstation_tool_schema"))
    assert float(gauges['mcpstation_tool_schema_tokens{surface="all"}']) == total
    assert float(gauges['mcpstation_tool_schema_tokens{surface="search"}']) == surface["with_search"]["tokens"]
    operation = document["paths"]["/api/mcp/tools/search"]["get"]
    assert [p["name"] for p in operation["parameters"]] == ["q", "limit", "server"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("ToolSearchBody")
