"""A stdio gateway answers its client's lists before its station is up (`gateway._starting`).

The gateway's server runs in-process, a real SDK `Client` over the SDK's memory transport in front
of it; the station behind it fronts our demo server in-process. What is observed is when the
station is opened, relative to what the client asks, and what the client is told afterwards.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from station_helpers import inproc

from mcpstation import Station, StationConfig
from mcpstation.errors import StoreError
from mcpstation.gateway._serving import gateway_server
from mcpstation.gateway._sessions import DownstreamSessions
from mcpstation.gateway._snapshot import ServedLists, read_snapshot, write_snapshot
from mcpstation.gateway._starting import ListSnapshot, OpenedGateway, StartingGateway
from mcpstation.gateway.relay import GatewayRelay
from mcpstation.gateway.server import Gateway
from mcpstation.gateway.stdio import LOCAL_CALLER
from mcpstation.per_input import KEEP

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60.0
NEVER_QUIET_S = 3600.0  # the station opens only when a request needs it
KEY = "the-input"


class Opener:
    """Opens a station fronting the demo server as `a`, and records that it did."""

    def __init__(self) -> None:
        self.opened = anyio.Event()
        self.station: Station | None = None

    @asynccontextmanager
    async def __call__(self, sessions: DownstreamSessions) -> AsyncIterator[OpenedGateway]:
        self.opened.set()
        relay = GatewayRelay(sessions=sessions)
        config = StationConfig(servers=(inproc("a"),), station={"naming": "prefix"})
        async with Station(config, hooks=relay) as station:
            self.station = station
            yield OpenedGateway(Gateway(station, relay, LOCAL_CALLER), None)


def lists(*tool_names: str) -> ServedLists:
    tools = [types.Tool(name=name, input_schema={"type": "object"}) for name in tool_names]
    return ServedLists(
        tools=types.ListToolsResult(tools=tools),
        prompts=types.ListPromptsResult(prompts=[]),
        resources=types.ListResourcesResult(resources=[]),
        templates=types.ListResourceTemplatesResult(resource_templates=[]),
    )


def names(result: types.ListToolsResult) -> set[str]:
    return {tool.name for tool in result.tools}


async def test_lists_come_from_the_snapshot_and_the_station_opens_for_the_first_call(tmp_path: Path):
    opener = Opener()
    kept = lists("mcp_a_add", "mcp_a_echo")
    starting = StartingGateway(opener, ListSnapshot(tmp_path, KEY, kept), quiet_s=NEVER_QUIET_S)
    with anyio.fail_after(TIMEOUT_S):
        async with Client(gateway_server(starting), mode="legacy") as client:
            assert names(await client.list_tools()) == {"mcp_a_add", "mcp_a_echo"}
            assert (await client.list_prompts()).prompts == []
            assert not opener.opened.is_set()  # answered without the station

            added = await client.call_tool("mcp_a_add", {"a": 2, "b": 40})  # this one needs it
            assert opener.opened.is_set()
            assert not added.is_error and added.structured_content == {"result": 42}
            assert "mcp_a_slow" in names(await client.list_tools())  # now the station's own list


async def test_a_list_answered_early_that_the_station_serves_otherwise_is_announced(tmp_path: Path):
    opener = Opener()
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    starting = StartingGateway(opener, ListSnapshot(tmp_path, KEY, lists("mcp_a_gone")), quiet_s=NEVER_QUIET_S)
    with anyio.fail_after(TIMEOUT_S):
        async with Client(gateway_server(starting), mode="legacy", message_handler=on_message) as client:
            assert names(await client.list_tools()) == {"mcp_a_gone"}
            await client.call_tool("mcp_a_add", {"a": 1, "b": 1})
            await changed.wait()
            listed = names(await client.list_tools())
            assert "mcp_a_gone" not in listed and "mcp_a_add" in listed


async def test_the_station_opens_once_the_client_is_quiet_and_the_snapshot_follows_its_lists(tmp_path: Path):
    opener = Opener()
    starting = StartingGateway(opener, ListSnapshot(tmp_path, KEY, lists("mcp_a_gone")), quiet_s=0.05)
    with anyio.fail_after(TIMEOUT_S):
        async with Client(gateway_server(starting), mode="legacy") as client:
            assert names(await client.list_tools()) == {"mcp_a_gone"}
            await opener.opened.wait()  # no request needed it: the client went quiet
            while "mcp_a_add" not in (served := names(await client.list_tools())):  # noqa: ASYNC110  # until it is up
                await anyio.sleep(0.01)
            while (kept := read_snapshot(tmp_path, KEY)) is None or names(kept.tools) != served:  # noqa: ASYNC110  # a file
                await anyio.sleep(0.01)
    assert opener.station is not None
    assert read_snapshot(tmp_path, "another input") is None


async def test_with_no_snapshot_the_station_is_up_before_the_handshake_is_answered(tmp_path: Path):
    opener = Opener()
    starting = StartingGateway(opener, ListSnapshot(tmp_path, KEY, None), quiet_s=NEVER_QUIET_S)
    with anyio.fail_after(TIMEOUT_S):
        async with Client(gateway_server(starting), mode="legacy") as client:
            assert opener.station is not None  # entered before the first message was read
            assert "mcp_a_add" in names(await client.list_tools())
    kept = read_snapshot(tmp_path, KEY)  # kept for the next gateway on this input
    assert kept is not None and "mcp_a_add" in names(kept.tools)


@pytest.mark.parametrize("kept", [lists("mcp_a_add"), None], ids=["lists kept", "no lists"])
async def test_a_station_that_cannot_open_ends_the_serving_with_its_own_error(tmp_path: Path, kept: ServedLists | None):
    @asynccontextmanager
    async def failing(sessions: DownstreamSessions) -> AsyncIterator[OpenedGateway]:
        raise StoreError("the store is not a database")
        yield  # pragma: no cover

    starting = StartingGateway(failing, ListSnapshot(tmp_path, KEY, kept), quiet_s=0.0)
    server = gateway_server(starting)
    with anyio.fail_after(TIMEOUT_S):
        async with server.lifespan(server):
            await anyio.sleep_forever()  # the serving, until the failure stops it
    assert isinstance(starting.failure, StoreError) and "not a database" in str(starting.failure)


def test_a_snapshot_that_does_not_parse_or_belongs_to_another_input_is_ignored(tmp_path: Path):
    write_snapshot(tmp_path, KEY, lists("x"))
    kept = read_snapshot(tmp_path, KEY)
    assert kept is not None and names(kept.tools) == {"x"}
    path = tmp_path / "gateway-lists" / f"{KEY}.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_snapshot(tmp_path, "other") is None
    path.rename(path.with_name("other.json"))  # a file under another input's name is not that input's
    assert read_snapshot(tmp_path, "other") is None
    path.write_text('{"format": 1, "key": "the-input", "lists": {"tools": 3}}')
    assert read_snapshot(tmp_path, KEY) is None
    path.write_text("not json")
    assert read_snapshot(tmp_path, KEY) is None
    assert read_snapshot(tmp_path / "missing", KEY) is None


def test_the_most_recently_written_snapshots_are_kept(tmp_path: Path):
    for index in range(KEEP + 3):
        write_snapshot(tmp_path, f"input-{index}", lists(f"t{index}"))
        os.utime(tmp_path / "gateway-lists" / f"input-{index}.json", (index, index))  # written in this order
    write_snapshot(tmp_path, "input-0", lists("t0"))  # written again: the newest
    kept = {path.stem for path in (tmp_path / "gateway-lists").glob("*.json")}
    assert kept == {"input-0", *(f"input-{index}" for index in range(4, KEEP + 3))}
    assert len(kept) == KEEP
