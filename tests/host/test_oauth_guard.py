"""The URL guard on the OAuth flow of servers added at run time, against a real server on loopback.

The MCP server (the SDK's, over streamable HTTP on 127.0.0.1) is protected by a tiny scripted
authorization layer: a 401 naming its protected-resource metadata, which names an authorization
server. When that server is an internal address, the connect must fail naming the URL before any
request goes there; the guard's hook sees the attempt, and nothing is ever sent off loopback.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx2
import pytest
from gateway_helpers import serve_http
from mcp.client import Client
from protected_server import ProtectedServer, consenting_browser

from mcpstation.config.models import OAuthSettings, SseServerSpec, StreamableHttpServerSpec
from mcpstation.connection._errors import leaf_errors
from mcpstation.connection.transports import TransportContext, open_transport
from mcpstation.errors import ServerStartError
from mcpstation.host.oauth import OAuthProviders
from mcpstation.policy import UrlGuard
from mcpstation.policy.oauth_guard import oauth_request_guard

pytestmark = pytest.mark.anyio

FLOW_TIMEOUT_S = 30.0  # a whole connect with discovery, registration and token exchange
METADATA_IP = "http://169.254.169.254/latest"
PRIVATE_AS = "http://10.0.0.1"


class Watched:
    """The guard as the station installs it, recording what it was asked and what it let through."""

    def __init__(self, url: str) -> None:
        self.guard = oauth_request_guard(url, UrlGuard(), server="added")
        self.attempted: list[str] = []
        self.sent: list[str] = []

    async def __call__(self, request: httpx2.Request) -> None:
        self.attempted.append(str(request.url))
        await self.guard(request)
        self.sent.append(str(request.url))


def spec_for(url: str, transport: str) -> StreamableHttpServerSpec | SseServerSpec:
    if transport == "sse":
        return SseServerSpec(name="added", url=url, oauth=OAuthSettings())
    return StreamableHttpServerSpec(name="added", url=url, oauth=OAuthSettings())


async def connect(url: str, tmp_path: Path, watched: Watched) -> list[str]:
    spec = spec_for(url, "streamable_http")
    auth = OAuthProviders(tmp_path, redirect_handler=consenting_browser)(spec)
    context = TransportContext(auth=auth, request_guard=watched)
    async with Client(open_transport(spec, context)) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize(
    ("authorization_server", "transport"),
    [(METADATA_IP, "streamable_http"), (PRIVATE_AS, "streamable_http"), (METADATA_IP, "sse")],
)
async def test_an_internal_authorization_server_is_refused_before_any_request(
    authorization_server: str, transport: str, tmp_path: Path
) -> None:
    async def nobody(url: str) -> None:
        raise AssertionError("the flow reached authorization")

    async with serve_http(ProtectedServer(authorization_server)) as url:
        watched = Watched(url)
        spec = spec_for(url, transport)
        context = TransportContext(auth=OAuthProviders(tmp_path, redirect_handler=nobody)(spec), request_guard=watched)
        with anyio.fail_after(FLOW_TIMEOUT_S), pytest.raises(BaseException) as raised:
            async with Client(open_transport(spec, context)) as client:
                await client.list_tools()

    refusals = [leaf for leaf in leaf_errors(raised.value) if isinstance(leaf, ServerStartError)]
    assert refusals, f"expected a refusal, got {raised.value!r}"
    origin = authorization_server.rsplit("/", 1)[0] if authorization_server.count("/") > 2 else authorization_server
    refused = [attempt for attempt in watched.attempted if attempt.startswith(f"{origin}/")]
    assert refused == [refused[0]]  # the first request there was refused, and the flow stopped
    assert f"refused to send an OAuth request to {refused[0]!r}" in str(refusals[0])
    assert "allowed_internal_hosts" in str(refusals[0]) and refusals[0].server == "added"
    assert watched.sent and all(sent.startswith("http://127.0.0.1:") for sent in watched.sent)


async def test_an_authorization_server_on_the_servers_own_origin_is_let_through(tmp_path: Path) -> None:
    async with serve_http(ProtectedServer(None)) as url:
        watched = Watched(url)
        with anyio.fail_after(FLOW_TIMEOUT_S):
            assert await connect(url, tmp_path, watched) == ["ping"]

    origin = url.removesuffix("/mcp")
    assert {f"{origin}/register", f"{origin}/token"} <= set(watched.sent)
    assert watched.attempted == watched.sent


async def test_the_guard_judges_only_other_origins() -> None:
    judged: list[str] = []

    def resolver(host: str) -> list[str]:
        judged.append(host)
        return {"public.example": ["93.184.216.34"], "inside.example": ["192.168.1.5"]}.get(host, [])

    guard = oauth_request_guard("https://mcp.example:443/mcp", UrlGuard(resolver=resolver), server="added")
    await guard(httpx2.Request("POST", "https://mcp.example/token"))
    await guard(httpx2.Request("GET", "https://public.example/.well-known/oauth-authorization-server"))
    with pytest.raises(
        ServerStartError, match=r"(?s)'https://inside.example/token'.*192\.168\.1\.5.*allowed_internal_hosts"
    ):
        await guard(httpx2.Request("POST", "https://inside.example/token?secret=x"))
    with pytest.raises(ServerStartError, match=re.escape("'http://mcp.example/'")):  # another scheme is another origin
        await guard(httpx2.Request("GET", "http://mcp.example/"))
    assert judged == ["public.example", "inside.example", "mcp.example"]
