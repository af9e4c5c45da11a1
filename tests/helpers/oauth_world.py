"""A scripted OAuth world for the OAuth tests: a protected MCP endpoint and its authorization server
(httpx2.MockTransport), and a browser that consents at once."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.lowlevel
import httpx2

from mcpstation.config.models import OAuthSettings, StreamableHttpServerSpec

RESOURCE = "http://mcp.test/mcp"
ISSUER = "http://auth.test"


def spec(oauth: OAuthSettings | None = None, *, name: str = "remote", url: str = RESOURCE) -> StreamableHttpServerSpec:
    return StreamableHttpServerSpec(name=name, url=url, oauth=oauth or OAuthSettings())


class AuthWorld:
    """A protected MCP endpoint and its authorization server, scripted; counts what was asked."""

    def __init__(self) -> None:
        self.valid_tokens: set[str] = set()
        self.refresh_tokens = {"r0": "a-refreshed"}
        self.counts: dict[str, int] = {}
        self.issued = 0
        self.registered_redirect: str | None = None

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        await anyio.lowlevel.checkpoint()  # let concurrent requests interleave
        url = str(request.url)
        if url == RESOURCE:
            self.count("resource")
            if request.headers.get("authorization", "").removeprefix("Bearer ") in self.valid_tokens:
                return httpx2.Response(200, json={"ok": True})
            metadata = "http://mcp.test/.well-known/oauth-protected-resource/mcp"
            return httpx2.Response(401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})
        if url == "http://mcp.test/.well-known/oauth-protected-resource/mcp":
            return httpx2.Response(200, json={"resource": RESOURCE, "authorization_servers": [ISSUER]})
        if url == f"{ISSUER}/.well-known/oauth-authorization-server":
            return httpx2.Response(
                200,
                json={
                    "issuer": ISSUER,
                    "authorization_endpoint": f"{ISSUER}/authorize",
                    "token_endpoint": f"{ISSUER}/token",
                    "registration_endpoint": f"{ISSUER}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "authorization_response_iss_parameter_supported": True,
                },
            )
        if url == f"{ISSUER}/register":
            self.count("register")
            body = json.loads(request.content)
            self.registered_redirect = body["redirect_uris"][0]
            return httpx2.Response(201, json={**body, "client_id": "dyn-client", "token_endpoint_auth_method": "none"})
        if url.endswith("/token"):
            form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
            self.count(form["grant_type"])
            if form["grant_type"] == "authorization_code" and form["code"] == "good-code":
                return self.tokens(refresh=True)
            if form["grant_type"] == "refresh_token" and form["refresh_token"] in self.refresh_tokens:
                del self.refresh_tokens[form["refresh_token"]]  # rotating: each refresh token works once
                return self.tokens(refresh=True)
            if form["grant_type"] == "client_credentials" and request.headers.get("authorization", "").startswith(
                "Basic "
            ):
                return self.tokens(refresh=False)
            return httpx2.Response(400, json={"error": "invalid_grant"})
        return httpx2.Response(404)

    def tokens(self, *, refresh: bool) -> httpx2.Response:
        self.issued += 1
        access = f"a{self.issued}"
        self.valid_tokens.add(access)
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": 3600}
        if refresh:
            body["refresh_token"] = f"r{self.issued}"
            self.refresh_tokens[f"r{self.issued}"] = access
        return httpx2.Response(200, json=body)

    def client(self, auth: httpx2.Auth) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle), auth=auth)


async def concurrent_gets(world: AuthWorld, auths: list[httpx2.Auth], each: int) -> list[int]:
    """`each` requests at once through a client per auth, all clients at once; their statuses."""
    statuses: list[int] = []

    async def session(auth: httpx2.Auth) -> None:
        async with world.client(auth) as http, anyio.create_task_group() as group:
            for _ in range(each):
                group.start_soon(get, http)

    async def get(http: httpx2.AsyncClient) -> None:
        statuses.append((await http.get(RESOURCE)).status_code)

    async with anyio.create_task_group() as sessions:
        for auth in auths:
            sessions.start_soon(session, auth)
    return statuses


async def consenting_browser(authorization_url: str) -> None:
    """The person signs in at once: the browser lands on the loopback redirect URI."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
    async with httpx2.AsyncClient() as browser:
        landing = await browser.get(
            query["redirect_uri"], params={"code": "good-code", "state": query["state"], "iss": ISSUER}
        )
    assert landing.status_code == 200
