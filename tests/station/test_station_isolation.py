"""Two stations in one process share nothing: not their servers' logs, not their catalogs."""

from __future__ import annotations

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.mcpserver import Context, MCPServer
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.events import StationEvent

pytestmark = pytest.mark.anyio

QUIET_S = 1.0  # how long a stream must stay silent to count as drained


def chatty(word: str) -> MCPServer:
    server = MCPServer("chatty")

    @server.tool()
    async def say(ctx: Context) -> str:
        await ctx.info(f"{word} says hello")
        return word

    return server


def config(word: str) -> StationConfig:
    return StationConfig(servers=[inproc("chatty", server=chatty(word), protocol="legacy", log_level="debug")])


async def log_messages(events: MemoryObjectReceiveStream[StationEvent]) -> list[str]:
    found: list[str] = []
    with anyio.move_on_after(QUIET_S):
        while True:
            event = await events.receive()
            if event.kind == "log":
                found.append(event.data["message"])
    return found


async def test_two_stations_in_one_process_do_not_see_each_others_server_logs():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config("alpha")) as alpha, Station(config("beta")) as beta:
            with alpha.events.subscribe() as alpha_events, beta.events.subscribe() as beta_events:
                assert (await alpha.call_tool("mcp_chatty_say", {})).text == "alpha"
                assert (await beta.call_tool("mcp_chatty_say", {})).text == "beta"
                assert await log_messages(alpha_events) == ["alpha says hello"]
                assert await log_messages(beta_events) == ["beta says hello"]
