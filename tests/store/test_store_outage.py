"""The store going away, for real, and coming back: the HTTP API and the gateway answer 503 with
`Retry-After` (never a 500 or a hang), no call is sent whose answer could not be recorded first,
a management change is refused whole, and the station recovers without a restart.

Three outages: PostgreSQL behind a TCP proxy that is cut (connections closed, the port refusing)
and restored; an SQLite file whose write lock another connection holds past the wait; an SQLite
file on a tmpfs that is filled up (skipped, with the reason, where this process may not mount).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fork_server import interpreter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from outage_helpers import SqliteLock, small_disk, tcp_proxy
from sqlalchemy.engine import make_url
from store_helpers import fresh_database, require_postgres

from mcpstation import Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port, build_app
from mcpstation.api.errors import RETRY_AFTER_S
from mcpstation.config.models import InProcessServerSpec, Role
from mcpstation.errors import StoreUnavailable
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller, Face, audit, store_gate
from mcpstation.store import DATABASE_FILE_NAME, Store
from mcpstation.store import _engine as engine

pytestmark = pytest.mark.anyio

TIMEOUT_S = 90.0  # a station, its store and the HTTP server, cut and restored, on a loaded 2-core machine
RECOVERY_S = 30.0  # how long the station may take to notice the store is back
PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@dataclass
class Outage:
    """Where the store is, and how to take it away and bring it back."""

    url: str | None
    data_dir: Path | None
    reads_fail: bool  # reads fail too (PostgreSQL gone), not only writes (an SQLite file locked or full)
    cut: Callable[[], Awaitable[None]]
    restore: Callable[[], Awaitable[None]]

    async def open(self) -> Store:
        return await Store.open(self.url, data_dir=self.data_dir)


@pytest.fixture(params=["postgresql-cut", "sqlite-locked", "sqlite-full"])
async def outage(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Outage]:
    monkeypatch.setattr(store_gate, "PROBE_INTERVAL_S", 0.1)
    monkeypatch.setattr(audit, "AUDIT_WAIT_S", 60.0)  # an answer waits for the writer's verdict, not the bound
    if request.param == "postgresql-cut":
        async with (
            fresh_database(await require_postgres()) as url,
            tcp_proxy(make_url(url).host or "127.0.0.1", make_url(url).port or 5432) as proxy,
        ):
            proxied = make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
            yield Outage(proxied, None, True, proxy.cut, proxy.restore)
        return
    if request.param == "sqlite-locked":
        monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_S", 0.3)  # a write waits this long for the lock
        lock = SqliteLock(tmp_path / "data" / DATABASE_FILE_NAME)
        yield Outage(None, tmp_path / "data", False, lock.cut, lock.restore)
        return
    with small_disk(tmp_path / "disk") as disk:
        yield Outage(None, disk.where / "data", False, disk.cut, disk.restore)


class Counter:
    """An in-process server whose `count` tool counts its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.server = MCPServer("counter")

        @self.server.tool()
        def count() -> str:
            self.runs += 1
            return str(self.runs)


@dataclass
class Served:
    url: str
    station: Station
    store: Store
    counter: Counter
    admin: str
    user: str

    def client(self, token: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60.0)

    async def call(self) -> httpx2.Response:
        async with self.client(self.user) as user:
            return await user.post("/api/mcp/tools/mcp_c_count/call", json={})


@asynccontextmanager
async def served(outage: Outage) -> AsyncIterator[Served]:
    counter = Counter()
    config = StationConfig(
        servers=[InProcessServerSpec(name="c", server=counter.server)],
        policy={"allowed_dynamic_stdio_commands": [PY]},
    )
    async with await outage.open() as store:
        admin, _ = await store.create_token("admin-token", "admin")
        user, _ = await store.create_token("user-token", "user")
        sock = bind_socket("127.0.0.1", 0)
        port = bound_port(sock)
        with sock:
            async with Station(config, store=store) as station:
                server = ApiServer(build_app(station, host="127.0.0.1", port=port))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.serve, [sock])
                    await server.wait_started()
                    try:
                        yield Served(f"http://127.0.0.1:{port}", station, store, counter, admin, user)
                    finally:
                        server.should_exit = True


def assert_store_unavailable(response: httpx2.Response) -> None:
    """503 with `Retry-After`, typed: an error body (the store could not check the token, or take a
    change) or a tool result that was not sent (`store_down`), saying why."""
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == str(RETRY_AFTER_S)
    body: dict[str, Any] = response.json()
    if "outcome" in body:
        assert body["outcome"] == Outcome.STORE_DOWN and not body["ok"], body
        message = body["error"]
    else:
        assert body["type"] == "StoreUnavailable", body
        message = body["message"]
    assert "cannot reach the" in message and "store" in message, body


async def test_the_api_answers_503_while_the_store_is_away_and_recovers_when_it_returns(outage: Outage) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with served(outage) as api:
            assert (await api.call()).status_code == 200
            await outage.cut()
            # The store's going is noticed by the first request that needs it: a token check (read),
            # or the audit record of a call that has already run (its answer still goes out).
            first = await api.call()
            assert first.status_code in (200, 503), first.text
            ran = api.counter.runs
            assert api.store.outage is not None
            for _ in range(3):
                assert_store_unavailable(await api.call())
            assert api.counter.runs == ran  # refused before reaching the server
            async with api.client(api.admin) as admin:
                added = await admin.post(
                    "/api/mcp/servers",
                    json={"name": "extra", "command": PY, "args": ["-m", "mcpstation.testing.demo_server"]},
                )
            assert_store_unavailable(added)

            await outage.restore()
            with anyio.fail_after(RECOVERY_S):
                while (answer := await api.call()).status_code != 200:
                    assert_store_unavailable(answer)
                    await anyio.sleep(0.1)
            assert api.counter.runs == ran + 1
            assert api.store.outage is None
            async with api.client(api.user) as user:
                servers = (await user.get("/api/mcp/servers")).json()
            assert "extra" not in {server["name"] for server in servers["servers"]}  # nothing half-written
            assert await api.store.get_dynamic_server("extra") is None
            assert not [a for a in await api.store.list_actions() if a.server == "extra"]
            assert (await api.store.list_calls(limit=1))[0].outcome is Outcome.OK  # audited again


async def test_the_gateway_refuses_a_call_it_could_not_record_with_a_typed_error(outage: Outage) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with served(outage) as api:
            await outage.cut()
            with pytest.raises(StoreUnavailable):  # the outage is found by a write, as the audit writer's would be
                await api.store.record_action("probe", actor="test")
            ran = api.counter.runs
            async with api.client(api.user) as http:
                if outage.reads_fail:  # the token cannot be checked: the gateway's door answers 503
                    answer = await http.post("/mcp", json=INITIALIZE, headers={"Accept": ACCEPT})
                    assert_store_unavailable(answer)
                else:
                    async with Client(streamable_http_client(f"{api.url}/mcp", http_client=http)) as client:
                        result = await client.call_tool("mcp_c_count", {})
                    assert result.is_error
                    assert "cannot reach the station's store" in result.content[0].text  # type: ignore[union-attr]
            assert api.counter.runs == ran
            await outage.restore()
            with anyio.fail_after(RECOVERY_S):
                while api.store.outage is not None:
                    await api.store.probe()
                    await anyio.sleep(0.1)
            result = await api.station.call_tool("mcp_c_count", {}, caller=Caller.token("gw", Role.USER, Face.GATEWAY))
            assert result.ok and api.counter.runs == ran + 1


async def test_library_calls_run_on_while_the_store_is_away(outage: Outage) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with served(outage) as api:
            await outage.cut()
            with pytest.raises(StoreUnavailable):
                await api.store.record_action("probe", actor="test")
            result = await api.station.call_tool("mcp_c_count", {})
            assert result.ok and api.counter.runs == 1
            remote = Caller.token("api", Role.USER, Face.HTTP_API)
            refused = await api.station.call_tool("mcp_c_count", {}, caller=remote)
            assert refused.outcome is Outcome.STORE_DOWN and "try again" in (refused.error or "").lower()
            assert api.counter.runs == 1
            await outage.restore()
