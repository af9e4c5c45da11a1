"""Test servers and launchers: real MCP servers, scripted by argv, that tests start as subprocesses.

- `demo_server`: a well-behaved `MCPServer` over stdio, streamable HTTP, SSE or WebSocket.
- `paged_server`: a low-level server whose lists are paginated (and can page forever).
- `chaos_server`: a low-level server that crashes, hangs, floods or leaks, one fault per mode;
  its byte-level modes (lying ids, huge and endless lines, floods) also start fast through
  `rogue_server_params`.
"""

from mcpstation.testing._launch import (
    RunningServer,
    chaos_server_params,
    demo_server_params,
    paged_server_params,
    rogue_server_params,
    serve_demo,
)
from mcpstation.testing._websocket_app import websocket_route

__all__ = [
    "RunningServer",
    "chaos_server_params",
    "demo_server_params",
    "paged_server_params",
    "rogue_server_params",
    "serve_demo",
    "websocket_route",
]
