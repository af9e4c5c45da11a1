"""One battery every transport of ours passes, stdio and WebSocket, in both protocol eras.

Like trio's stream conformance checks: framing keeps every byte, answers match their calls in any
order, progress keeps its order, cancelling one call leaves the session working, closing is not
breaking, a dead peer fails what is pending, and large messages pass up to the cap and fail their
own call beyond it. The SDK `Client` drives each transport against our demo server.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import pytest
from _processes import alive
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcpstation.connection._stdio import stdio_transport
from mcpstation.connection._websocket import websocket_transport
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, InboundLimits
from mcpstation.connection.stats import CloseReason, TransportStats
from mcpstation.testing import demo_server_params, serve_demo

pytestmark = pytest.mark.anyio

SESSION_TIMEOUT_S = 60.0  # one test's whole session, start to close, on a loaded machine
MIB = 1024 * 1024
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@dataclass
class Kit:
    """How to open one of our transports to a demo server, and how to kill that server."""

    kind: str
    mode: str
    open: Callable[..., AbstractAsyncContextManager[Any]]
    kill: Callable[[TransportStats], None]

    @asynccontextmanager
    async def client(self, stats: TransportStats, limits: InboundLimits | None = None) -> AsyncIterator[Client]:
        async with Client(self.open(stats=stats, limits=limits), mode=self.mode) as client:
            yield client


@pytest.fixture(params=[(kind, mode) for kind in ("stdio", "websocket") for mode in ERAS], ids=lambda p: "-".join(p))
async def kit(request: pytest.FixtureRequest) -> AsyncIterator[Kit]:
    kind, mode = request.param
    with anyio.fail_after(SESSION_TIMEOUT_S):
        if kind == "stdio":

            def open_stdio(*, stats: TransportStats, limits: InboundLimits | None) -> AbstractAsyncContextManager[Any]:
                return stdio_transport(demo_server_params(), server="demo", stats=stats, limits=limits)

            def kill_stdio(stats: TransportStats) -> None:
                assert stats.pid is not None
                os.kill(stats.pid, signal.SIGKILL)

            yield Kit(kind, mode, open_stdio, kill_stdio)
            return
        async with serve_demo("ws") as server:

            def open_ws(*, stats: TransportStats, limits: InboundLimits | None) -> AbstractAsyncContextManager[Any]:
                return websocket_transport(server.url, server="demo", stats=stats, limits=limits)

            yield Kit(kind, mode, open_ws, lambda stats: os.kill(server.pid, signal.SIGKILL))


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_session_negotiates_the_era_asked_for(kit: Kit) -> None:
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(TransportStats()) as client:
            assert client.protocol_version == ERAS[kit.mode]
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}


async def test_framing_keeps_every_byte_both_ways(kit: Kit) -> None:
    messages = ["", "a\nb\r\nc\n", 'tab\t"quote" \\back\\ {"id":1}', "é ☃ 𝄞 \u2028\u2029", "\x00nul\x7f"]
    messages.append("x" * (3 * MIB))
    stats = TransportStats()
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(stats) as client:
            echoed = [_text(await client.call_tool("echo", {"message": m})) for m in messages]
    assert echoed == messages
    assert stats.unreadable == stats.unexpected_responses == 0


async def test_concurrent_answers_each_reach_their_own_call(kit: Kit) -> None:
    answers: dict[int, str] = {}
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(TransportStats()) as client:

            async def call(i: int) -> None:
                answers[i] = _text(await client.call_tool("echo", {"message": f"call {i}"}))

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(call, i)
    assert answers == {i: f"call {i}" for i in range(50)}


async def test_progress_keeps_its_order_and_comes_before_its_result(kit: Kit) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(TransportStats()) as client:
            result = await client.call_tool("slow", {"seconds": 0.4}, progress_callback=on_progress)
    assert _text(result) == "slept 0.4 s"
    assert seen == [1.0, 2.0, 3.0, 4.0]


async def test_cancelling_or_timing_out_one_call_leaves_the_session_working(kit: Kit) -> None:
    stats = TransportStats()
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(stats) as client:
            started = anyio.Event()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                started.set()

            async with anyio.create_task_group() as tg:
                # Its first progress report (of 4) comes after 1 s of 4: it is cancelled while it runs.
                tg.start_soon(lambda: client.call_tool("slow", {"seconds": 4}, progress_callback=on_progress))
                await started.wait()
                tg.cancel_scope.cancel()
            assert _text(await client.call_tool("echo", {"message": "after a cancel"})) == "after a cancel"
            with pytest.raises(MCPError) as caught:
                await client.call_tool("slow", {"seconds": 20}, read_timeout_seconds=0.5)
            assert caught.value.error.code == types.REQUEST_TIMEOUT
            assert _text(await client.call_tool("echo", {"message": "after a timeout"})) == "after a timeout"
    assert stats.unexpected_responses == 0


async def test_closing_is_clean_not_broken(kit: Kit) -> None:
    stats = TransportStats()
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(stats) as client:
            await client.call_tool("echo", {"message": "hi"})
    assert stats.closed in (None, CloseReason.EOF)  # never BROKEN, never a fault
    if kit.kind == "stdio":
        assert stats.pid is not None and not alive(stats.pid)


async def test_a_peer_dying_mid_call_fails_it_as_connection_closed(kit: Kit) -> None:
    stats = TransportStats()
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(stats) as client:

            async def kill_server(progress: float, total: float | None, message: str | None) -> None:
                kit.kill(stats)  # the call is running on the server now

            with pytest.raises(MCPError) as caught:
                await client.call_tool("slow", {"seconds": 2}, progress_callback=kill_server)
    assert caught.value.error.code == types.CONNECTION_CLOSED


async def test_large_messages_pass_up_to_the_cap_and_fail_only_their_call_beyond_it(kit: Kit) -> None:
    stats = TransportStats()
    limits = InboundLimits(max_message_bytes=2 * MIB)
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with kit.client(stats, limits) as client:
            fits = "f" * (MIB // 2)
            assert _text(await client.call_tool("echo", {"message": fits})) == fits
            with pytest.raises(MCPError) as caught:
                await client.call_tool("echo", {"message": "o" * (3 * MIB)})
            assert caught.value.error.code == MESSAGE_TOO_LARGE
            if kit.kind == "stdio":  # a line can be skipped; a WebSocket closes on an oversized frame
                assert _text(await client.call_tool("echo", {"message": "next"})) == "next"
    assert stats.oversized == 1 or stats.closed is CloseReason.MESSAGE_TOO_LARGE
