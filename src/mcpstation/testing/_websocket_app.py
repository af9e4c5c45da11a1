"""Serve a low-level MCP `Server` over WebSocket: one session per connection.

The SDK ships no WebSocket server, so this bridges a Starlette `WebSocketRoute` to
`Server.run(read_stream, write_stream, init_options)` through anyio memory streams, exactly as
the SDK's stdio server feeds `run()`: one JSON-RPC message per text (or binary) frame, parse
errors delivered to the session as values, EOF by closing the read side.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import Server
from mcp.shared.message import SessionMessage
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

logger = logging.getLogger(__name__)

MCP_SUBPROTOCOL = "mcp"
POLICY_VIOLATION = 1008  # close code used to refuse clients that do not offer the `mcp` subprotocol


def websocket_route(path: str, server: Server[Any]) -> WebSocketRoute:
    """A route that runs one MCP session of `server` per WebSocket connection on `path`.

    Clients must offer the `mcp` subprotocol; others are refused during the handshake (HTTP 403).
    """

    async def endpoint(websocket: WebSocket) -> None:
        if MCP_SUBPROTOCOL not in websocket.scope.get("subprotocols", []):
            await websocket.close(code=POLICY_VIOLATION)
            return
        await websocket.accept(subprotocol=MCP_SUBPROTOCOL)
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_frames_to_session, websocket, read_send)
            tg.start_soon(_session_to_frames, websocket, write_recv, tg.cancel_scope)
            await server.run(read_recv, write_send, server.create_initialization_options())
            tg.cancel_scope.cancel()
        if websocket.client_state is WebSocketState.CONNECTED:
            try:
                await websocket.close()
            except (WebSocketDisconnect, RuntimeError):  # the peer went away while we closed
                logger.debug("websocket peer left before close")

    return WebSocketRoute(path, endpoint)


async def _frames_to_session(
    websocket: WebSocket, read_send: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    async with read_send:  # closing it is EOF for the session
        while True:
            frame = await websocket.receive()
            if frame["type"] == "websocket.disconnect":
                return
            data = frame.get("text") or frame.get("bytes") or b""
            try:
                message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
            except ValueError as exc:  # pydantic's ValidationError: surfaced to the session, not fatal
                await read_send.send(exc)
                continue
            await read_send.send(SessionMessage(message))


async def _session_to_frames(
    websocket: WebSocket, write_recv: MemoryObjectReceiveStream[SessionMessage], session_scope: anyio.CancelScope
) -> None:
    async with write_recv:
        async for session_message in write_recv:
            data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await websocket.send_text(data)
            except WebSocketDisconnect:
                session_scope.cancel()  # nobody is listening any more: end the session
                return
