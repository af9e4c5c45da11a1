"""In-process servers over the SDK's memory streams: JSON-RPC framing without a pipe or a socket.

The server runs in a task of the transport's own task group for as long as the transport is
open; closing the client's streams ends it (bounded by `SERVER_STOP_GRACE_S`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.memory import create_client_server_memory_streams

SERVER_STOP_GRACE_S = 2.0  # time an in-process server gets to finish after its client closed


def lowlevel_server(server: object) -> Server[Any]:
    """The low-level SDK `Server` behind `server` (an `MCPServer` keeps its own private)."""
    if isinstance(server, MCPServer):
        return server._lowlevel_server
    if isinstance(server, Server):
        return server
    raise TypeError(f"an in-process server must be an mcp.server Server or MCPServer, not {type(server).__name__}")


@asynccontextmanager
async def inprocess_transport(server: object) -> AsyncIterator[tuple[Any, Any]]:
    """The client's two streams to `server`, run in this transport's task group."""
    target = lowlevel_server(server)
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        server_read, server_write = server_streams
        ended = anyio.Event()

        async def serve() -> None:
            try:
                await target.run(server_read, server_write, target.create_initialization_options())
            finally:
                ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                yield client_streams
            finally:
                # EOF first, so a well-behaved server ends on its own; cancel what is left.
                await client_streams[1].aclose()
                with anyio.move_on_after(SERVER_STOP_GRACE_S, shield=True):
                    await ended.wait()
                tg.cancel_scope.cancel()
