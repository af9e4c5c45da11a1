"""A station served over HTTP that trusts a running `TestIdp`, and MCP clients at each protocol version.

The station's socket is bound first, so its public URL (the audience its tokens must name) is
known before the identity provider and the config are made.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types as types
from idp import STATION_CLIENT, TestIdp
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpstation import Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port, build_app
from mcpstation.store import Store

START_TIMEOUT_S = 60.0  # a station, its HTTP server and the provider on a loaded 2-core machine
VERSIONS = ("2025-06-18", "2025-11-25", "2026-07-28")
ACCEPT = "application/json, text/event-stream"
ADMINS = "mcp-admins"
USERS = "mcp-users"


def issuer_entry(idp: TestIdp, **fields: Any) -> dict[str, Any]:
    """An `[[auth.issuers]]` entry for `idp`: admins and users by group, scopes per face."""
    entry: dict[str, Any] = {
        "issuer": idp.issuer,
        "algorithms": ["ES256"],
        "gateway_scopes": ["mcp:tools"],
        "api_scopes": ["mcp:api"],
        "roles": {"admin_groups": [ADMINS], "user_groups": [USERS, ADMINS]},
    }
    entry.update(fields)
    return entry


@dataclass
class IdentityStation:
    """A served station trusting `idp`: its URL, its parts, a station token per role."""

    url: str
    station: Station
    store: Store
    idp: TestIdp
    station_tokens: dict[str, str]

    @property
    def gateway(self) -> str:
        return f"{self.url}/mcp"

    def http(self, token: str | None = None, **headers: str) -> httpx2.AsyncClient:
        sent = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
        return httpx2.AsyncClient(base_url=self.url, headers=sent, timeout=30.0)

    async def token(self, sub: str, *groups: str, scope: str = "mcp:tools mcp:api", **options: Any) -> str:
        return await self.idp.user_token(sub, groups=groups, scope=scope, **options)


@asynccontextmanager
async def identity_station(
    tmp_path: Path,
    servers: Sequence[Any] = (),
    *,
    issuer: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
    idp_options: dict[str, Any] | None = None,
) -> AsyncIterator[IdentityStation]:
    """A store, a `TestIdp`, and a station trusting it served on a real loopback socket."""
    async with station_socket() as (sock, public_url), running_provider(public_url, idp_options) as idp:
        async with serving(tmp_path, sock, public_url, idp, servers, issuer=issuer, auth=auth) as world:
            yield world


@asynccontextmanager
async def station_socket() -> AsyncIterator[tuple[socket.socket, str]]:
    """A bound loopback socket for a station, and the public URL it is reached at."""
    sock = bind_socket("127.0.0.1", 0)
    with sock:
        yield sock, f"http://127.0.0.1:{bound_port(sock)}"


@asynccontextmanager
async def running_provider(public_url: str, options: dict[str, Any] | None = None) -> AsyncIterator[TestIdp]:
    idp = TestIdp(public_url, **(options or {}))
    await idp.start()
    try:
        yield idp
    finally:
        await idp.stop()


StoreAt = tuple[str, str | None]
"""A shared store's database URL and schema (PostgreSQL), for replicas not on SQLite in `tmp_path`."""


def station_config(
    public_url: str,
    idp: TestIdp,
    servers: Sequence[Any],
    *,
    issuer: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
) -> StationConfig:
    return StationConfig(
        servers=tuple(servers),
        policy={"allowed_internal_hosts": ["127.0.0.1"]},
        station={"tool_search": "off"},  # every visible tool listed, so lists show who sees what
        auth={"public_url": public_url, "issuers": [issuer_entry(idp, **(issuer or {}))], **(auth or {})},
    )


@asynccontextmanager
async def serving(
    tmp_path: Path,
    sock: socket.socket,
    public_url: str,
    idp: TestIdp,
    servers: Sequence[Any] = (),
    *,
    issuer: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
    store_at: StoreAt | None = None,
) -> AsyncIterator[IdentityStation]:
    """A station on `sock` trusting `idp`, its store in `tmp_path` (or at `store_at`), shared by replicas."""
    config = station_config(public_url, idp, servers, issuer=issuer, auth=auth)
    url, schema = store_at if store_at is not None else (None, None)
    async with await Store.open(url, data_dir=None if url else tmp_path, schema=schema) as store:
        tokens = {}
        for role in ("admin", "user"):
            known = {t.name for t in await store.list_tokens()}
            if f"{role}-token" not in known:
                tokens[role] = (await store.create_token(f"{role}-token", role))[0]
        async with Station(config, store=store) as station:
            port = bound_port(sock)
            server = ApiServer(build_app(station, host="127.0.0.1", port=port))
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                with anyio.fail_after(START_TIMEOUT_S):
                    await server.wait_started()
                try:
                    yield IdentityStation(f"http://127.0.0.1:{port}", station, store, idp, tokens)
                finally:
                    server.should_exit = True


# -- MCP clients by protocol version ------------------------------------------------------------------


async def list_tools(url: str, token: str, version: str) -> set[str]:
    """The tool names the gateway at `url` lists to `token`'s caller at `version`."""
    if version == "2025-06-18":
        async with RawSession(url, token, version) as session:
            result = await session.request("tools/list", {})
            return {tool["name"] for tool in result["tools"]}
    async with _client(url, token, version) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def call_tool(url: str, token: str, version: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """`(is_error, first text)` of calling `name` through the gateway as `token`'s caller at `version`."""
    if version == "2025-06-18":
        async with RawSession(url, token, version) as session:
            result = await session.request("tools/call", {"name": name, "arguments": arguments})
            return bool(result.get("isError")), str(result["content"][0]["text"])
    async with _client(url, token, version) as client:
        called = await client.call_tool(name, arguments)
        first = called.content[0]
        return bool(called.is_error), first.text if isinstance(first, types.TextContent) else ""


async def call_error(url: str, token: str, version: str, name: str, arguments: dict[str, Any]) -> tuple[int, str]:
    """`(code, message)` of the JSON-RPC error calling `name` through the gateway is answered with."""
    if version == "2025-06-18":
        async with RawSession(url, token, version) as session:
            error = await session.error("tools/call", {"name": name, "arguments": arguments})
            return int(error["code"]), str(error["message"])
    async with _client(url, token, version) as client:
        try:
            called = await client.call_tool(name, arguments)
        except MCPError as exc:
            return exc.error.code, exc.error.message
    raise AssertionError(f"answered with a result, not an error: {called}")


@asynccontextmanager
async def _client(url: str, token: str, version: str) -> AsyncIterator[Client]:
    mode = "legacy" if version == "2025-11-25" else version
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            if version == "2025-11-25":
                assert client.protocol_version == version
            yield client


class RawSession:
    """A handshake-era session over plain HTTP at a pinned version (the SDK client always asks for
    the newest handshake version): initialize, then requests with the session id."""

    def __init__(self, url: str, token: str, version: str) -> None:
        self.url = url
        self.version = version
        self.headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        self.session_id: str | None = None
        self._http = httpx2.AsyncClient(timeout=30)
        self._ids = 0

    async def __aenter__(self) -> RawSession:
        await self._http.__aenter__()
        params = {
            "protocolVersion": self.version,
            "capabilities": {},
            "clientInfo": {"name": "identity-test", "version": "1"},
        }
        result = await self.request("initialize", params)
        assert result["protocolVersion"] == self.version, result
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.__aexit__(*exc)

    async def post(self, message: dict[str, Any], **headers: str) -> httpx2.Response:
        sent = {**self.headers, **headers}
        if self.session_id is not None:
            sent["Mcp-Session-Id"] = self.session_id
            sent["MCP-Protocol-Version"] = self.version
        response = await self._http.post(self.url, json=message, headers=sent)
        if "mcp-session-id" in response.headers:
            self.session_id = response.headers["mcp-session-id"]
        return response

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        response = await self.post({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        assert response.status_code == 200, (response.status_code, response.text)
        message = _jsonrpc_answer(response)
        assert "result" in message, message
        result: dict[str, Any] = message["result"]
        return result

    async def error(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC error a request is answered with (a result fails the test)."""
        self._ids += 1
        response = await self.post({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        message = _jsonrpc_answer(response)
        assert "error" in message, message
        error: dict[str, Any] = message["error"]
        return error


def _jsonrpc_answer(response: httpx2.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message: dict[str, Any] = json.loads(line[5:])
                if "id" in message:
                    return message
        raise AssertionError(f"no answer in the event stream: {response.text!r}")
    answer: dict[str, Any] = response.json()
    return answer


# -- an upstream that verifies its own audience -------------------------------------------------------

UPSTREAM = Path(__file__).with_name("audience_server.py")


@dataclass
class Upstream:
    """A running `audience_server.py`: its URL, and every request's headers it recorded."""

    url: str
    record: Path

    def requests(self) -> list[dict[str, str]]:
        if not self.record.exists():
            return []
        return [dict(json.loads(line)["headers"]) for line in self.record.read_text().splitlines()]

    def bearer_claims(self) -> list[dict[str, Any]]:
        """The claims of every bearer token it was sent (unverified: what arrived)."""
        found = []
        for headers in self.requests():
            token = headers.get("authorization", "").removeprefix("Bearer ")
            if token.count(".") == 2:
                found.append(jwt.decode(token, options={"verify_signature": False}))
        return found

    async def refuse_next(self, sub: str) -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            await http.post(self.url.removesuffix("/mcp") + "/test/refuse-next", params={"sub": sub})


@asynccontextmanager
async def running_upstream(idp: TestIdp, tmp_path: Path) -> AsyncIterator[Upstream]:
    record = tmp_path / f"upstream-{secrets.token_hex(4)}.jsonl"
    process = await anyio.open_process([sys.executable, str(UPSTREAM), idp.issuer, str(record)])
    try:
        assert process.stdout is not None
        seen = b""
        with anyio.fail_after(START_TIMEOUT_S):
            while b"\n" not in seen:
                seen += await process.stdout.receive()
        yield Upstream(seen.split(b"\n", 1)[0].decode().strip(), record)
    finally:
        process.terminate()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


# -- a server each user authorizes (user-oauth) ---------------------------------------------------------


def user_oauth(upstream: Upstream, issuer: str) -> dict[str, Any]:
    """A `jira` entry each user authorizes, as the provider's station client (which also lists the
    catalog as the station, by client credentials)."""
    return {
        "name": "jira",
        "transport": "streamable_http",
        "url": upstream.url,
        "auth": {
            "upstream": "user-oauth",
            "issuer": issuer,
            "client_id": STATION_CLIENT[0],
            "client_secret": STATION_CLIENT[1],
        },
    }


@asynccontextmanager
async def user_oauth_world(
    tmp_path: Path, *, store_at: StoreAt | None = None, auth: dict[str, Any] | None = None
) -> AsyncIterator[tuple[IdentityStation, Upstream]]:
    """A provider, an upstream verifying its audience, and a station serving it as `jira` (user-oauth)."""
    async with station_socket() as (sock, public_url), running_provider(public_url) as idp:
        async with running_upstream(idp, tmp_path) as upstream:
            entry = user_oauth(upstream, idp.issuer)
            async with serving(tmp_path, sock, public_url, idp, [entry], store_at=store_at, auth=auth) as served:
                yield served, upstream


def whoami(served: IdentityStation) -> str:
    """The public name of the upstream's `whoami` tool (its bearer token's claims), as listed."""
    names = [tool.name for tool in served.station.tools if tool.server == "jira"]
    assert names, "the shared connection listed no tools"
    return next(name for name in names if name.endswith("whoami"))
