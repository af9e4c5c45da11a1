"""An upstream MCP server that verifies its own audience and records every request's headers.

    python audience_server.py ISSUER RECORD_FILE

It binds 127.0.0.1 on a free port, prints its endpoint `http://127.0.0.1:PORT/mcp` on the first
stdout line, and then serves streamable HTTP at it. Every request to the endpoint is appended to
RECORD_FILE as one JSON line `{"headers": {...}}` before anything else happens. A request passes
only with an access token (`typ` at+jwt) of ISSUER, signed by a key of its key set, naming this
endpoint as `aud`; anything else gets 401. Tool `whoami` answers the verified token's `sub`, `act`
and `aud` as JSON.

It is an OAuth protected resource (RFC 9728): its metadata, naming ISSUER as its authorization
server and `jira:read` as its scope, is served without a token at
`/.well-known/oauth-protected-resource/mcp` (and the root form), and every 401 names it in
`WWW-Authenticate`. So a client that discovers (the SDK's authorization code flow) finds ISSUER.

Test route (no token): `POST /test/refuse-next?sub=S` answers the next request of subject S with
401 even though its token is valid (an upstream that revoked a token early).
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import httpx2
import jwt
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

HOST = "127.0.0.1"
WELL_KNOWN_PRM = "/.well-known/oauth-protected-resource"


class Audience:
    """The ASGI app: record, verify, then the MCP app."""

    def __init__(self, issuer: str, record: Path, url: str) -> None:
        self.issuer = issuer
        self.record = record
        self.url = url
        self.refuse_next: set[str] = set()
        self.metadata_url = url.replace("/mcp", WELL_KNOWN_PRM + "/mcp", 1)
        self._keys: dict[str, jwt.PyJWK] = {}
        self.mcp = build_server().streamable_http_app(streamable_http_path="/mcp", host=HOST)

    def keys(self, kid: str) -> jwt.PyJWK | None:
        if kid not in self._keys:  # a test server: fetch the key set again, synchronously
            metadata = httpx2.get(f"{self.issuer}/.well-known/openid-configuration").json()
            found = jwt.PyJWKSet.from_dict(httpx2.get(metadata["jwks_uri"]).json())
            self._keys = {key.key_id: key for key in found.keys if key.key_id}
        return self._keys.get(kid)

    def verify(self, authorization: str) -> dict[str, Any]:
        token = authorization.removeprefix("Bearer ").strip()
        header = jwt.get_unverified_header(token)
        if header.get("typ") != "at+jwt":
            raise jwt.InvalidTokenError("not an access token")
        key = self.keys(str(header.get("kid")))
        if key is None:
            raise jwt.InvalidTokenError("unknown key")
        claims: dict[str, Any] = jwt.decode(
            token, key=key.key, algorithms=["ES256"], issuer=self.issuer, audience=self.url,
            options={"require": ["exp", "iss", "sub", "aud"]},
        )  # fmt: skip
        return claims

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.mcp(scope, receive, send)
            return
        request = Request(scope)
        if request.url.path.startswith(WELL_KNOWN_PRM):
            document = {"resource": self.url, "authorization_servers": [self.issuer], "scopes_supported": ["jira:read"]}
            await JSONResponse(document)(scope, receive, send)
            return
        if request.url.path == "/test/refuse-next":
            self.refuse_next.add(request.query_params["sub"])
            await Response(status_code=204)(scope, receive, send)
            return
        with self.record.open("a") as out:
            out.write(json.dumps({"headers": dict(request.headers)}) + "\n")
        try:
            claims = self.verify(request.headers.get("authorization", ""))
        except (jwt.InvalidTokenError, ValueError) as exc:
            await _refuse(str(exc), self.metadata_url)(scope, receive, send)
            return
        if claims["sub"] in self.refuse_next:
            self.refuse_next.discard(claims["sub"])
            await _refuse("refused once on request", self.metadata_url)(scope, receive, send)
            return
        await self.mcp(scope, receive, send)


def _refuse(why: str, metadata_url: str) -> Response:
    return JSONResponse(
        {"error": "invalid_token", "error_description": why},
        status_code=401,
        headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata_url}", error="invalid_token"'},
    )


def build_server() -> MCPServer:
    mcp = MCPServer("audience", version="0.1.0", log_level="WARNING")

    @mcp.tool()
    async def whoami(ctx: Context) -> str:
        """Who this request's token names: its subject, actor and audience."""
        request = ctx.request_context.request
        assert isinstance(request, Request)
        claims = jwt.decode(
            request.headers["authorization"].removeprefix("Bearer "), options={"verify_signature": False}
        )  # verified by the app before the request got here
        return json.dumps({"sub": claims.get("sub"), "act": claims.get("act"), "aud": claims.get("aud")})

    return mcp


class _Announcing(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, url: str) -> None:
        super().__init__(config)
        self.url = url

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.url, flush=True)


def main(argv: list[str]) -> None:
    issuer, record = argv[1], Path(argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))
    url = f"http://{HOST}:{sock.getsockname()[1]}/mcp"
    app = Audience(issuer, record, url)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    _Announcing(config, url).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv)
