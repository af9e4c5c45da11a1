"""The paged server: cursors walk every item, and the two broken-cursor modes misbehave as promised."""

from __future__ import annotations

import anyio
import pytest
from mcp.client import Client

from mcpstation.testing import paged_server_params

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT_S = 30.0


async def test_walking_tool_pages_returns_every_tool() -> None:
    names: list[str] = []
    pages = 0
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(paged_server_params("--tools", "10", "--page-size", "3")) as client:
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [tool.name for tool in page.tools]
                pages += 1
                if (cursor := page.next_cursor) is None:
                    break
            called = await client.call_tool("t9", {})
    assert names == [f"t{i}" for i in range(10)]
    assert pages == 4
    assert called.content[0].text == "t9"  # type: ignore[union-attr]


async def test_prompts_and_resources_are_paged_like_tools() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(paged_server_params("--tools", "5", "--page-size", "2"), mode="legacy") as client:
            prompts = await client.list_prompts()
            resources = await client.list_resources(cursor="4")
            read = await client.read_resource("paged://r4")
    assert [prompt.name for prompt in prompts.prompts] == ["p0", "p1"] and prompts.next_cursor == "2"
    assert [str(resource.uri) for resource in resources.resources] == ["paged://r4"]
    assert resources.next_cursor is None
    assert read.contents[0].text == "r4"  # type: ignore[union-attr]


async def test_repeat_cursor_hands_out_the_same_cursor_after_page_two() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(paged_server_params("--page-size", "2", "--repeat-cursor")) as client:
            first = await client.list_tools()
            second = await client.list_tools(cursor=first.next_cursor)
            third = await client.list_tools(cursor=second.next_cursor)
    assert first.next_cursor == second.next_cursor == third.next_cursor == "2"


async def test_endless_hands_out_fresh_cursors_and_names() -> None:
    cursors: list[str] = []
    names: set[str] = set()
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(paged_server_params("--tools", "3", "--page-size", "3", "--endless")) as client:
            cursor: str | None = None
            for _ in range(5):
                page = await client.list_tools(cursor=cursor)
                names.update(tool.name for tool in page.tools)
                assert page.next_cursor is not None
                cursor = page.next_cursor
                cursors.append(cursor)
    assert len(set(cursors)) == 5 and len(names) == 15
