"""A stdio MCP server that reaches the network the way packages do: through the proxy and CAs of its environment.

    python tests/connection/network_server.py

Tools: `fetch(url)` reads the URL with urllib (which follows HTTPS_PROXY and friends, and
verifies TLS against SSL_CERT_FILE); `variable(name)` says whether the variable is set and to what.
"""

from __future__ import annotations

import os
import urllib.request

from mcp.server.mcpserver import MCPServer

FETCH_TIMEOUT_S = 20.0  # one loopback request through the test's proxy, on a loaded machine

mcp = MCPServer("network")


@mcp.tool()
def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response:
        return str(response.read().decode())


@mcp.tool()
def variable(name: str) -> str:
    value = os.environ.get(name)
    return "<unset>" if value is None else value


if __name__ == "__main__":
    mcp.run("stdio")
