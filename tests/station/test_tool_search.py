"""Tool search from the library and an adapter: what each role finds and calls, Chinese requests, the audit of
`mcp_call_tool`, token accounting in `status` and the start-up line, provider-native deferral in the exports.

The servers are in process and list the real tools of public MCP servers (bench/search/servers)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from listed_server import STORED, build_listed_server, stored_tools
from station_helpers import START_TIMEOUT_S

from mcpstation import Caller, Face, InProcessServerSpec, Role, Station, StationConfig
from mcpstation.catalog import estimate_tool_tokens, format_tokens
from mcpstation.catalog.schemas import ANTHROPIC_TOOL_SEARCH_BM25, OPENAI_TOOL_SEARCH
from mcpstation.errors import UsageError
from mcpstation.integrations import anthropic as station_anthropic
from mcpstation.integrations import openai as station_openai
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import META_TOOLS
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

USER = Caller("model", Role.USER, Face.LLM)
ADMIN = Caller.library()
ALL_STORED = sorted(path.stem for path in STORED.glob("*.json"))
LINE_TIMEOUT_S = 60.0  # the start-up line waits for the index to count every tool on a loaded machine


def listed(name: str, **fields: Any) -> InProcessServerSpec:
    return InProcessServerSpec(name=name, server=build_listed_server(name, stored_tools(name)), **fields)


def config(*servers: InProcessServerSpec, **station: Any) -> StationConfig:
    return StationConfig(servers=servers, station=station)


def found(result: Any) -> list[dict[str, Any]]:
    assert result.ok, result.error
    return list(result.structured["tools"])


ISSUE = {"owner": "octo", "repo": "demo", "title": "x"}  # what create_issue requires
CONVERT = {"source_timezone": "Asia/Shanghai", "time": "15:00", "target_timezone": "America/New_York"}


async def test_a_user_never_finds_or_calls_a_tool_of_an_admin_only_server():
    servers = (listed("github", min_role=Role.ADMIN), listed("gitlab"), listed("slack"), listed("git"))
    request = {"query": "open a new issue in the repository", "limit": 20}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, tool_search="on")) as station:
            as_user = found(await station.call_tool("mcp_search_tools", request, caller=USER))
            as_admin = found(await station.call_tool("mcp_search_tools", request, caller=ADMIN))
            only_github = found(
                await station.call_tool("mcp_search_tools", {**request, "server": "github"}, caller=USER)
            )
            hits = await station.search_tools("create issue", caller=USER, limit=100)
            called = await station.call_tool(
                "mcp_call_tool", {"name": "mcp_github_create_issue", "arguments": ISSUE}, caller=USER
            )
            direct = await station.call_tool("mcp_github_create_issue", ISSUE, caller=USER)
            as_admin_called = await station.call_tool(
                "mcp_call_tool", {"name": "mcp_github_create_issue", "arguments": ISSUE}, caller=ADMIN
            )
    assert as_user and all(hit["server"] != "github" for hit in as_user)
    assert as_user[0]["name"] == "mcp_gitlab_create_issue"
    assert "mcp_github_create_issue" in [hit["name"] for hit in as_admin]
    assert only_github == [] and all(hit.tool.server != "github" for hit in hits)
    assert called.outcome is direct.outcome is Outcome.NOT_FOUND and called.error == direct.error
    assert called.error == "no tool 'mcp_github_create_issue'."  # no did-you-mean among hidden tools
    assert as_admin_called.ok and as_admin_called.structured == {
        "server": "github",
        "tool": "create_issue",
        "arguments": ISSUE,
    }


async def test_tool_roles_keep_single_tools_out_of_a_user_s_search():
    servers = (listed("gitlab", tool_roles={"create_*": Role.ADMIN}), listed("slack"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, tool_search="on")) as station:
            as_user = await station.search_tools("create a merge request or an issue", caller=USER, limit=20)
            as_admin = await station.search_tools("create a merge request or an issue", caller=ADMIN, limit=20)
    assert as_user and not any(hit.tool.tool.startswith("create_") for hit in as_user)
    assert as_admin[0].tool.tool in ("create_merge_request", "create_issue")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("把北京时间下午三点换算成纽约时间", "mcp_time_convert_time"),
        ("查看当前工作区的 git 状态", "mcp_git_git_status"),
        ("给 Slack 的 #general 频道发一条消息", "mcp_slack_slack_post_message"),
        ("在 GitLab 项目 42 中创建合并请求", "mcp_gitlab_create_merge_request"),
    ],
)
async def test_a_chinese_request_finds_the_right_tool_among_nineteen_servers(query: str, expected: str):
    servers = tuple(listed(name) for name in ALL_STORED)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            assert len(station.visible_tools(USER)) == 190
            assert [t.name for t in station.tools_for(USER)] == list(META_TOOLS)  # auto: far over 40 tools
            hits = found(await station.call_tool("mcp_search_tools", {"query": query}, caller=USER))
    assert hits[0]["name"] == expected


async def test_audit_records_the_inner_tool_of_mcp_call_tool_and_nothing_for_a_search(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(config(listed("slack"), tool_search="on"), store=store) as station:
                found(await station.call_tool("mcp_search_tools", {"query": "post a message"}, caller=USER))
                inner = {"name": "mcp_slack_slack_post_message", "arguments": {"channel_id": "C1", "text": "hi"}}
                assert (await station.call_tool("mcp_call_tool", inner, caller=USER)).ok
                missing = await station.call_tool("mcp_call_tool", {"name": "mcp_slack_nope"}, caller=USER)
                assert missing.outcome is Outcome.NOT_FOUND
            calls = await store.list_calls()
    [call] = calls  # the unknown name resolved to nothing, so like a direct call of it nothing was audited
    assert (call.server, call.tool, call.caller, call.outcome) == ("slack", "slack_post_message", "model", "ok")


class _Lines(logging.Handler):
    """Collects log lines and says when the surface line arrived."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self.surface = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.getMessage().startswith("catalog: "):
            self.surface.set()


LINE = re.compile(
    r"^catalog: (?P<tools>[\d,]+) tools \(~(?P<tokens>[\d.]+k?) tokens\); "
    r"LLM surface with tool search: (?P<surface>\d+) tools \(~(?P<surface_tokens>[\d.]+k?) tokens\)$"
)


async def test_start_up_says_what_the_catalog_and_the_search_surface_cost(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="mcpstation.station")
    lines = _Lines()
    logging.getLogger("mcpstation.station").addHandler(lines)
    servers = (listed("github"), listed("gitlab"), listed("slack"))
    try:
        with anyio.fail_after(START_TIMEOUT_S + LINE_TIMEOUT_S):
            async with Station(config(*servers, always_visible=("mcp_slack_slack_post_message",))) as station:
                await lines.surface.wait()
                every = station.visible_tools(ADMIN)
                surface = station.tools_for(ADMIN)
    finally:
        logging.getLogger("mcpstation.station").removeHandler(lines)
    [line] = [text for text in lines.lines if text.startswith("catalog: ")]
    match = LINE.match(line)
    assert match is not None, line
    assert match["tools"] == "43" and match["surface"] == "3" == str(len(surface))
    assert match["tokens"] == format_tokens(sum(map(estimate_tool_tokens, every)))
    assert match["surface_tokens"] == format_tokens(sum(map(estimate_tool_tokens, surface)))


async def test_status_counts_schema_tokens_per_server_and_the_surface_with_and_without_search():
    servers = (listed("github"), listed("gitlab"), listed("time"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            status = station.status()
            catalog = station.catalog
            surface = station.tools_for(ADMIN)
            meta = station_meta(station)
    per_server = {s.name: s.tokens for s in status.servers}
    for server in ("github", "gitlab", "time"):
        expected = sum(estimate_tool_tokens(t) for t in catalog.tools.values() if t.server == server)
        assert per_server[server] == expected > 0
    assert status.surface is not None
    summary = status.to_dict()["surface"]
    assert summary["tool_search"] == "auto" and summary["search"] is False  # 37 tools, ~5k tokens: under both
    assert summary["without_search"] == {"tools": 37, "tokens": sum(per_server.values())}
    assert summary["tools"] == len(surface) == 37 and summary["tokens"] == sum(per_server.values())
    assert summary["with_search"] == {"tools": 2, "tokens": sum(map(estimate_tool_tokens, meta))}
    assert json.loads(json.dumps(status.to_dict()))["servers"][0]["tokens"] == per_server["github"]


def station_meta(station: Station) -> Any:
    assert station.requests.surface is not None
    return station.requests.surface.meta_tools(station.visible_tools(ADMIN))


async def test_an_anthropic_tool_use_loop_searches_then_calls_through_the_meta_tools():
    servers = tuple(listed(name) for name in ("time", "git", "slack", "github", "gitlab"))
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me find a tool."},
            {
                "type": "tool_use",
                "id": "u1",
                "name": "mcp_search_tools",
                "input": {"query": "把北京时间下午三点换算成纽约时间"},
            },
            {
                "type": "tool_use",
                "id": "u2",
                "name": "mcp_call_tool",
                "input": {"name": "mcp_time_convert_time", "arguments": CONVERT},
            },
            {"type": "tool_use", "id": "u3", "name": "mcp_time_get_current_time", "input": {"timezone": "UTC"}},
        ],
    }
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            tools = station_anthropic.tools(station)
            searched, called, direct = await station_anthropic.run_tool_uses(station, message)
    assert [t["name"] for t in tools] == list(META_TOOLS)  # 57 tools for the model's default caller: search
    assert json.loads(searched["content"][0]["text"])["tools"][0]["name"] == "mcp_time_convert_time"
    assert json.loads(called["content"][0]["text"]) == {
        "server": "time",
        "tool": "convert_time",
        "arguments": CONVERT,
    }
    assert json.loads(direct["content"][0]["text"])["tool"] == "get_current_time"
    assert not any(block.get("is_error") for block in (searched, called, direct))


async def test_exports_can_defer_every_unpinned_tool_to_the_provider_s_own_search():
    servers = (listed("github"), listed("gitlab"), listed("slack", always_visible=("slack_post_message",)))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            anthropic = station_anthropic.tools(station, caller=USER, defer=True)
            responses = station_openai.tools(station, caller=USER, api="responses", defer=True)
            with pytest.raises(UsageError, match="Responses API"):
                station_openai.tools(station, caller=USER, defer=True)
        async with Station(config(listed("time"))) as small:
            loaded = station_anthropic.tools(small, caller=USER, defer=True)
    assert len(anthropic) == 43 + 1 and anthropic[-1] == dict(ANTHROPIC_TOOL_SEARCH_BM25)
    kept = [t["name"] for t in anthropic[:-1] if not t.get("defer_loading")]
    assert kept == ["mcp_slack_slack_post_message"]
    assert responses[-1] == dict(OPENAI_TOOL_SEARCH)
    groups = {entry["name"]: entry for entry in responses if entry.get("type") == "namespace"}
    assert set(groups) == {"github", "gitlab", "slack"} and len(groups["github"]["tools"]) == 26
    assert all(tool["defer_loading"] for group in groups.values() for tool in group["tools"])
    [pinned] = [entry for entry in responses if entry.get("type") == "function"]
    assert pinned["name"] == "mcp_slack_slack_post_message" and "defer_loading" not in pinned
    assert [t["name"] for t in loaded] == ["mcp_time_get_current_time", "mcp_time_convert_time"]
    assert not any("defer_loading" in t for t in loaded)
