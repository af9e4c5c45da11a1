"""The fetch server as a real stdio subprocess, driven by the SDK `Client`, against a 127.0.0.1 site."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from fetch_pages import Site, serve_site
from mcp import StdioServerParameters
from mcp.client import Client

pytestmark = pytest.mark.anyio

CALL_TIMEOUT_S = 30.0


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as running:
        yield running


def fetch_server(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcpstation.servers.fetch", *args])


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_fetch_tool_matches_mcp_server_fetch_and_refuses_internal_redirects(site: Site) -> None:
    with anyio.fail_after(CALL_TIMEOUT_S):
        async with Client(fetch_server("--allow-host", "127.0.0.1", "--user-agent", "TestAgent/1.0")) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["fetch"]
            assert set(tools[0].input_schema["properties"]) == {"url", "max_length", "start_index", "raw"}
            assert tools[0].input_schema["required"] == ["url"]

            page = await client.call_tool("fetch", {"url": f"{site.base}/article"})
            assert not page.is_error
            assert "# Guarded fetch" in text_of(page)

            part = await client.call_tool("fetch", {"url": f"{site.base}/long", "max_length": 50, "start_index": 10})
            assert text_of(part).split(":\n", 1)[1].startswith("0123456789" * 5)
            assert "start_index of 60" in text_of(part)

            refused = await client.call_tool("fetch", {"url": f"{site.base}/to-metadata"})
            assert refused.is_error
            assert "169.254.169.254" in text_of(refused)
            assert refused.structured_content == {"success": False, "error": text_of(refused)}

            robots = await client.call_tool("fetch", {"url": f"{site.base}/private/page"})
            assert robots.is_error and "robots.txt" in text_of(robots)

            internal = await client.call_tool("fetch", {"url": "http://10.0.0.1/"})
            assert internal.is_error and "private network" in text_of(internal)

            unallowed = await client.call_tool("fetch", {"url": f"http://localhost:{site.port}/article"})
            assert unallowed.is_error and "local machine" in text_of(unallowed)
    assert ("/private/page", f"127.0.0.1:{site.port}") not in site.requests
    assert all(path != "/latest/meta-data/" for path, _ in site.requests)


async def test_without_exceptions_even_loopback_is_refused(site: Site) -> None:
    with anyio.fail_after(CALL_TIMEOUT_S):
        async with Client(fetch_server()) as client:
            result = await client.call_tool("fetch", {"url": f"{site.base}/article"})
    assert result.is_error and "loopback" in text_of(result)
    assert site.requests == []


async def test_ignore_robots_txt_flag(site: Site) -> None:
    with anyio.fail_after(CALL_TIMEOUT_S):
        async with Client(fetch_server("--allow-cidr", "127.0.0.0/8", "--ignore-robots-txt")) as client:
            result = await client.call_tool("fetch", {"url": f"{site.base}/private/page", "raw": True})
    assert not result.is_error and "<p>secret</p>" in text_of(result)
    assert all(path != "/robots.txt" for path, _ in site.requests)
