"""An MCP server behind OAuth, served on loopback by uvicorn, and a browser that consents at once."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send


class ProtectedServer:
    """An MCP server behind OAuth; `authorization_server` None means its own origin is the AS."""

    def __init__(self, authorization_server: str | None, *, access_token: str = "t1") -> None:
        self.authorization_server = authorization_server
        self.access_token = access_token
        self.tokens: set[str] = set()
        mcp = MCPServer("guarded", log_level="WARNING")

        @mcp.tool()
        def ping() -> str:
            """Answer pong."""
            return "pong"

        self.inner = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request = Request(scope, receive)
        response = await self.answer(request, f"http://{request.url.netloc}")
        await (response or self.inner)(scope, receive, send)

    async def answer(self, request: Request, base: str) -> Response | None:
        path = request.url.path
        issuer = self.authorization_server or base
        if path == "/.well-known/oauth-protected-resource/mcp":
            return JSONResponse({"resource": f"{base}/mcp", "authorization_servers": [issuer]})
        if self.authorization_server is None and path == "/.well-known/oauth-authorization-server":
            return JSONResponse(
                {
                    "issuer": base,
                    "authorization_endpoint": f"{base}/authorize",
                    "token_endpoint": f"{base}/token",
                    "registration_endpoint": f"{base}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                }
            )
        if self.authorization_server is None and path == "/register":
            body = json.loads(await request.body())
            return JSONResponse({**body, "client_id": "dyn", "token_endpoint_auth_method": "none"}, status_code=201)
        if self.authorization_server is None and path == "/token":
            form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
            if form.get("code") != "good-code":
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            self.tokens.add(self.access_token)
            return JSONResponse({"access_token": self.access_token, "token_type": "Bearer", "expires_in": 3600})
        if path.startswith("/mcp"):
            if request.headers.get("authorization", "").removeprefix("Bearer ") in self.tokens:
                return None
            metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
            return Response(status_code=401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})
        return Response(status_code=404)


async def consenting_browser(authorization_url: str) -> None:
    query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
    async with httpx2.AsyncClient() as browser:
        await browser.get(query["redirect_uri"], params={"code": "good-code", "state": query["state"]})
