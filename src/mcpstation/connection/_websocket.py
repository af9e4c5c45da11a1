"""MCP over WebSocket: a client `Transport` the SDK no longer ships (removed in mcp 2.0).

One JSON-RPC message per frame, subprotocol `mcp` (as mcp 1.x and its servers used). The
context manager yields the SDK's stream pair, so `Client(websocket_transport(url))` negotiates
either protocol era unchanged. Built on `websockets`' asyncio client: asyncio backend only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.typing import Subprotocol

logger = logging.getLogger(__name__)

MCP_SUBPROTOCOL = Subprotocol("mcp")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # largest frame we accept; tool results can be big
CLOSE_TIMEOUT_S = 2.0  # time the server gets to answer our close frame before we drop the socket

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
    url: str, headers: Mapping[str, str] | None = None, *, open_timeout_s: float = 10.0
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Connect to an MCP server at a `ws://` or `wss://` URL and yield `(read_stream, write_stream)`.

    Frames that are not valid JSON-RPC arrive on the read stream as `Exception` values (the session
    survives them); the server closing the connection closes the read stream (EOF).

    Raises:
        WebSocketHandshakeError: the server rejected the upgrade (e.g. HTTP 403/404).
        WebSocketConnectError: connection refused, unreachable, or not open within `open_timeout_s`.
        ValueError: `url` is not a WebSocket URL.
    """
    websocket = await _open(url, headers, open_timeout_s)
    if websocket.subprotocol != MCP_SUBPROTOCOL:
        logger.debug("server at %s did not confirm the %r subprotocol", url, MCP_SUBPROTOCOL)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_frames_to_session, websocket, read_send)
            tg.start_soon(_session_to_frames, websocket, write_recv)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await websocket.close()


async def _open(url: str, headers: Mapping[str, str] | None, open_timeout_s: float) -> ClientConnection:
    try:
        return await connect(
            url,
            subprotocols=[MCP_SUBPROTOCOL],
            additional_headers=dict(headers or {}),
            open_timeout=open_timeout_s,
            close_timeout=CLOSE_TIMEOUT_S,
            max_size=MAX_MESSAGE_BYTES,
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


async def _frames_to_session(
    websocket: ClientConnection, read_send: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    async with read_send:  # closing it is EOF for the session: pending requests fail with -32000
        try:
            async for frame in websocket:
                try:
                    message = types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
                except ValueError as exc:  # pydantic's ValidationError: reaches message_handler, not fatal
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))
        except ConnectionClosed as exc:
            logger.debug("websocket closed abnormally: %s", exc)


async def _session_to_frames(
    websocket: ClientConnection, write_recv: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    async with write_recv:
        async for session_message in write_recv:
            data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await websocket.send(data)
            except ConnectionClosed as exc:
                # The read side reports the closure as EOF; drop what the session still sends.
                logger.debug("dropping outbound message, websocket closed: %s", exc)
