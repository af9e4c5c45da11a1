"""MCP over WebSocket: a client `Transport` the SDK no longer ships (removed in mcp 2.0).

One JSON-RPC message per frame, subprotocol `mcp` (as mcp 1.x and its servers used). The
context manager yields the SDK's stream pair, so `Client(websocket_transport(url))` negotiates
either protocol era unchanged. What the server sends is sorted by `_inbound` as on stdio
(answers first, floods bounded, listings screened); a frame over `max_message_bytes` ends the
connection (websockets closes it with 1009 without buffering the frame), and the requests in
flight fail with `MESSAGE_TOO_LARGE`. Built on `websockets`' asyncio client: asyncio backend only.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.frames import CloseCode
from websockets.typing import Subprotocol

from mcpstation.connection._inbound import Inbound
from mcpstation.connection._lanes import InboundStream
from mcpstation.connection._wire import encode_message
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, InboundLimits
from mcpstation.connection.stats import CloseReason, TransportStats

logger = logging.getLogger(__name__)

MCP_SUBPROTOCOL = Subprotocol("mcp")
CLOSE_TIMEOUT_S = 2.0  # time the server gets to answer our close frame before we drop the socket
MAX_QUEUED_REPLIES = 256  # refusals the transport sends itself, waiting to go out

__all__ = ["WebSocketConnectError", "WebSocketHandshakeError", "websocket_transport"]


class WebSocketConnectError(ConnectionError):
    """The WebSocket connection could not be opened (refused, unreachable, timed out)."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class WebSocketHandshakeError(WebSocketConnectError):
    """The server answered, but refused the WebSocket upgrade (`status` is its HTTP status, if any)."""

    def __init__(self, message: str, *, url: str, status: int | None) -> None:
        super().__init__(message, url=url)
        self.status = status


@asynccontextmanager
async def websocket_transport(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    open_timeout_s: float = 10.0,
    server: str | None = None,
    limits: InboundLimits | None = None,
    stats: TransportStats | None = None,
) -> AsyncIterator[tuple[InboundStream, MemoryObjectSendStream[SessionMessage]]]:
    """Connect to an MCP server at a `ws://` or `wss://` URL and yield `(read_stream, write_stream)`.

    `server` names it in errors and logs (default: the URL); `stats` collects what was dropped,
    refused or cut. The server closing the connection ends the read stream (EOF).

    Raises:
        WebSocketHandshakeError: the server rejected the upgrade (e.g. HTTP 403/404).
        WebSocketConnectError: connection refused, unreachable, or not open within `open_timeout_s`.
        ValueError: `url` is not a WebSocket URL.
    """
    limits = limits or InboundLimits()
    stats = stats if stats is not None else TransportStats()
    websocket = await _open(url, headers, open_timeout_s, limits.max_message_bytes)
    if websocket.subprotocol != MCP_SUBPROTOCOL:
        logger.debug("server at %s did not confirm the %r subprotocol", url, MCP_SUBPROTOCOL)
    replies = _Replies()
    inbound = Inbound(server or url, limits, stats, replies.put)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_frames_to_inbound, websocket, inbound)
            tg.start_soon(_session_to_frames, websocket, write_recv, inbound, replies)
            try:
                yield inbound.stream, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await websocket.close()


class _Replies:
    """Messages the transport itself answers the server with, bounded."""

    def __init__(self) -> None:
        self.queue: collections.deque[bytes] = collections.deque()
        self.ready = anyio.Event()

    def put(self, data: bytes) -> bool:
        if len(self.queue) >= MAX_QUEUED_REPLIES:
            return False
        self.queue.append(data)
        self.ready.set()
        return True


async def _open(
    url: str, headers: Mapping[str, str] | None, open_timeout_s: float, max_message_bytes: int
) -> ClientConnection:
    try:
        return await connect(
            url,
            subprotocols=[MCP_SUBPROTOCOL],
            additional_headers=dict(headers or {}),
            open_timeout=open_timeout_s,
            close_timeout=CLOSE_TIMEOUT_S,
            max_size=max_message_bytes,
        )
    except InvalidURI as exc:
        raise ValueError(f"not a WebSocket URL: {url!r} ({exc.msg}); use ws:// or wss://") from exc
    except InvalidStatus as exc:
        status = exc.response.status_code
        raise WebSocketHandshakeError(
            f"WebSocket server at {url} refused the upgrade with HTTP {status}. "
            "Check the URL path and that the server speaks MCP over WebSocket (subprotocol 'mcp').",
            url=url,
            status=status,
        ) from exc
    except InvalidHandshake as exc:
        raise WebSocketHandshakeError(
            f"WebSocket handshake with {url} failed: {exc}. Check that the URL points at a WebSocket endpoint.",
            url=url,
            status=None,
        ) from exc
    except TimeoutError as exc:
        raise WebSocketConnectError(
            f"WebSocket connection to {url} did not open within {open_timeout_s} s. "
            "Check that the server is running and reachable.",
            url=url,
        ) from exc
    except OSError as exc:
        raise WebSocketConnectError(
            f"could not connect to WebSocket server at {url}: {exc}. Check that the server is running.",
            url=url,
        ) from exc


async def _frames_to_inbound(websocket: ClientConnection, inbound: Inbound) -> None:
    try:
        while True:
            frame = await websocket.recv(decode=False)  # bytes: invalid UTF-8 is counted, not fatal
            inbound.feed(frame)
    except ConnectionClosed as exc:
        sent = exc.sent
        if sent is not None and sent.code == CloseCode.MESSAGE_TOO_BIG:
            cap = inbound.limits.max_message_bytes
            why = f"message too large (> {cap:,} byte cap) from server {inbound.server!r}; the connection was closed"
            inbound.fail_in_flight(MESSAGE_TOO_LARGE, why)
            inbound.end(CloseReason.MESSAGE_TOO_LARGE, why)
        else:
            logger.debug("websocket closed: %s", exc)
            inbound.end(CloseReason.EOF, f"the server closed the connection ({exc})")


async def _session_to_frames(
    websocket: ClientConnection,
    write_recv: MemoryObjectReceiveStream[SessionMessage],
    inbound: Inbound,
    replies: _Replies,
) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_send_replies, websocket, replies)
        async with write_recv:
            async for session_message in write_recv:
                message = inbound.outbound(session_message.message)
                await _send(websocket, encode_message(message))
        tg.cancel_scope.cancel()


async def _send_replies(websocket: ClientConnection, replies: _Replies) -> None:
    while True:
        await replies.ready.wait()
        replies.ready = anyio.Event()
        while replies.queue:
            await _send(websocket, replies.queue.popleft())


async def _send(websocket: ClientConnection, data: bytes) -> None:
    try:
        await websocket.send(data, text=True)
    except ConnectionClosed as exc:
        # The read side reports the closure as EOF; drop what the session still sends.
        logger.debug("dropping outbound message, websocket closed: %s", exc)
