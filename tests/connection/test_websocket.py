"""The WebSocket client transport against the demo server's `/ws` endpoint and a relaying stub."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from mcpstation.connection._websocket import (
    WebSocketConnectError,
    WebSocketHandshakeError,
    websocket_transport,
)
from mcpstation.connection.stats import TransportStats
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT_S = 30.0
REFUSED_WITHIN_S = 2.0  # a refused connection must fail fast, not wait for open_timeout_s
GARBAGE_FRAME = "this is not JSON-RPC"

Peer = ServerConnection | ClientConnection


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_raises_promptly() -> None:
    url = f"ws://127.0.0.1:{_unused_port()}/ws"
    with anyio.fail_after(REFUSED_WITHIN_S), pytest.raises(WebSocketConnectError) as caught:
        async with websocket_transport(url, open_timeout_s=CONNECT_TIMEOUT_S):
            pytest.fail("connected to a closed port")
    assert isinstance(caught.value, ConnectionError) and caught.value.url == url
    assert url in str(caught.value)


async def test_rejected_handshake_raises_with_status() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with serve_demo("ws") as server:
            wrong_path = server.url.removesuffix("/ws") + "/nope"
            with pytest.raises(WebSocketHandshakeError) as caught:
                async with websocket_transport(wrong_path):
                    pytest.fail("handshake on a path with no WebSocket route succeeded")
    assert caught.value.status == 403
    assert "refused the upgrade with HTTP 403" in str(caught.value)


async def test_not_a_websocket_url_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a WebSocket URL"):
        async with websocket_transport("http://127.0.0.1:1/mcp"):
            pytest.fail("opened an http:// URL")


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_both_eras_work_and_large_messages_pass(mode: str, era: str) -> None:
    big = "x" * (3 * 1024 * 1024)  # over websockets' 1 MiB default frame limit, both directions
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with serve_demo("ws") as server, Client(websocket_transport(server.url), mode=mode) as client:
            assert client.protocol_version == era
            echoed = await client.call_tool("echo", {"message": big})
    assert echoed.structured_content == {"result": big}


@asynccontextmanager
async def _garbage_then_relay(upstream_url: str) -> AsyncIterator[str]:
    """A WebSocket server that sends one garbage frame, then relays frames to and from `upstream_url`."""

    async def relay(downstream: ServerConnection) -> None:
        await downstream.send(GARBAGE_FRAME)
        async with connect(upstream_url, subprotocols=[Subprotocol("mcp")]) as upstream:

            async def pump(source: Peer, sink: Peer) -> None:
                with suppress(ConnectionClosed):
                    async for frame in source:
                        await sink.send(frame)
                tg.cancel_scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(pump, downstream, upstream)
                tg.start_soon(pump, upstream, downstream)

    async with serve(relay, "127.0.0.1", 0, subprotocols=[Subprotocol("mcp")]) as stub:
        port = next(iter(stub.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/"


async def test_garbage_frame_is_counted_and_survived() -> None:
    surfaced: list[Exception] = []
    stats = TransportStats()

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            surfaced.append(message)

    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with serve_demo("ws") as server, _garbage_then_relay(server.url) as relay_url:
            transport = websocket_transport(relay_url, stats=stats)
            async with Client(transport, mode="legacy", message_handler=on_message) as client:
                added = await client.call_tool("add", {"a": 1, "b": 2})
    assert added.structured_content == {"result": 3}
    assert stats.unreadable == 1 and surfaced == []  # skipped and counted by the transport, never fatal


async def test_server_death_fails_the_pending_call_with_connection_closed() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with serve_demo("ws") as server, Client(websocket_transport(server.url), mode="legacy") as client:

            async def kill_server(progress: float, total: float | None, message: str | None) -> None:
                os.kill(server.pid, signal.SIGKILL)  # the call is running on the server now

            with pytest.raises(MCPError) as caught:
                await client.call_tool("slow", {"seconds": 2}, progress_callback=kill_server)
    assert caught.value.error.code == types.CONNECTION_CLOSED
