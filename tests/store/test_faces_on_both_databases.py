"""Every face that keeps state, on SQLite and on PostgreSQL: the station with tool pinning on, servers
managed at run time, `mcpstation up` with its HTTP API and gateway, the CLI verbs, audit, tokens and
OAuth token storage, all against one database given by URL (`db_url`: a new SQLite file, or a new
PostgreSQL database, dropped afterwards).
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import httpx2
import pytest
import sqlalchemy as sa
from face_helpers import START_TIMEOUT_S, cli, demo, running_up, station_config, time_server, tiny, toml_config
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from mcpstation import Station
from mcpstation.errors import StoreError
from mcpstation.events import StationEvent
from mcpstation.host.oauth import StoreTokenStorage
from mcpstation.store import Store

# Real processes throughout (servers, the CLI, `up`): minutes on a loaded 2-core machine, not the default 120 s.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

DEMO_TOOLS = 12


def _store_trouble(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the station logged about its store or pins at WARNING and above, and every ERROR."""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in caplog.records
        if record.levelno >= logging.ERROR
        or (record.levelno >= logging.WARNING and record.name.startswith(("mcpstation.pinning", "mcpstation.store")))
    ]


async def test_a_station_with_pinning_on_starts_checks_its_pins_and_stops(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = station_config([demo("d1")], {"tool_pinning": "block"})
    caplog.set_level(logging.INFO)
    for _ in range(2):  # first start pins every tool; the restart finds them all pinned
        async with await Store.open(db_url) as store:
            station = Station(config, store=store)
            catalog_checked = anyio.Event()

            def on_event(event: StationEvent, checked: anyio.Event = catalog_checked) -> None:
                if event.kind == "catalog":  # published after the catalog watcher's own pin check
                    checked.set()

            station.events.add_listener(on_event)
            with anyio.fail_after(START_TIMEOUT_S):
                async with station:
                    assert station.connection("d1").is_ready
                    await catalog_checked.wait()
                    assert len(station.tools) == DEMO_TOOLS  # block mode: every tool checked and published
                    assert (await station.call_tool("mcp_d1_add", {"a": 2, "b": 3})).text == "5"
            pins = await store.list_pins("d1")
            assert len(pins) == DEMO_TOOLS and all(pin.is_approved for pin in pins)
            assert [(c.tool, c.outcome) for c in await store.list_calls()][:1] == [("add", "ok")]
    assert _store_trouble(caplog) == []


async def test_servers_added_approved_and_removed_at_run_time_are_kept_in_the_database(db_url: str) -> None:
    config = station_config([])
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(db_url) as store, Station(config, store=store) as station:
            added = await station.add_server(demo("kept"), actor="alice")
            assert added.ok and added.state == "READY"
            # A module not on the allowlist: saved, and connected once a person approves it.
            pending = await station.add_server(time_server("time"), actor="alice")
            assert pending.ok and pending.state == "PENDING"
            approved = await station.approve_server("time", actor="ops")
            assert approved.ok and approved.state == "READY", approved
            assert (await station.call_tool("mcp_time_get_current_time", {"timezone": "UTC"})).ok
            assert (await station.remove_server("time", actor="bob")).ok
        async with await Store.open(db_url) as store, Station(config, store=store) as station:
            assert station.connection("kept").is_ready and "time" not in station.connections
            assert [s.name for s in await store.list_dynamic_servers()] == ["kept"]
            actions = [(a.action, a.server, a.actor) for a in await store.list_actions()]
            assert actions == [
                ("remove", "time", "bob"),
                ("approve", "time", "ops"),
                ("add", "time", "alice"),
                ("add", "kept", "alice"),
            ]
            assert {pin.server for pin in await store.list_pins()} == {"kept", "time"}


async def test_up_serves_the_api_and_the_gateway_from_the_database(db_url: str, tmp_path: Path) -> None:
    config = toml_config(tmp_path / "c.toml", [demo("d1")])
    created = await cli(tmp_path, db_url, "token", "create", "--role", "admin", "--name", "ops", "--json")
    headers = {"Authorization": f"Bearer {created['token']}"}

    async with running_up(tmp_path, db_url, config) as up:
        async with httpx2.AsyncClient(base_url=up.url, headers=headers, timeout=60) as http:
            servers = (await http.get("/api/mcp/servers")).json()
            assert [(s["name"], s["state"]) for s in servers["servers"]] == [("d1", "READY")]
            response = await http.post("/api/mcp/servers", json=demo("extra"))
            assert response.status_code in (200, 201), response.text
            assert response.json()["message"] == "connected 'extra': 12 tools"
            assert (await http.get("/api/health", headers={"Authorization": "Bearer wrong"})).status_code == 401
            transport = streamable_http_client(f"{up.url}/mcp", http_client=http)
            async with Client(transport, mode="legacy") as gateway:
                names = {tool.name for tool in (await gateway.list_tools()).tools}
                assert {"mcp_d1_add", "mcp_extra_add"} <= names
                result = await gateway.call_tool("mcp_d1_add", {"a": 20, "b": 22})
                assert not result.is_error and result.content[0].text == "42"
    assert "StoreError" not in up.text and "Traceback" not in up.text, up.text

    async with await Store.open(db_url) as store:
        assert [s.name for s in await store.list_dynamic_servers()] == ["extra"]
        assert [(c.server, c.tool, c.outcome) for c in await store.list_calls()] == [("d1", "add", "ok")]
        pinned = await store.list_pins()
        assert {p.server for p in pinned} == {"d1", "extra"} and len(pinned) == 2 * 12
        assert [t.name for t in await store.list_tokens()] == ["ops"]


async def test_cli_verbs_share_one_database(db_url: str, tmp_path: Path) -> None:
    config = toml_config(tmp_path / "c.toml", [])
    token = await cli(tmp_path, db_url, "token", "create", "--role", "user", "--name", "laptop", "--json")
    command = tiny("x")  # starts in milliseconds: each verb below starts its own station, and with it `x`
    added = await cli(
        tmp_path, db_url, "servers", "add", "x", "--json", "--", command["command"], *command["args"], config=config
    )
    assert added["ok"] and added["state"] == "PENDING", added  # a script: a person says yes first
    approved = await cli(tmp_path, db_url, "servers", "approve", "x", "--json", config=config)
    assert approved["ok"] and approved["state"] == "READY", approved
    listed = await cli(tmp_path, db_url, "servers", "list", "--json", config=config)
    assert [(s["name"], s["origin"], s["state"]) for s in listed] == [("x", "dynamic", "READY")]
    called = await cli(tmp_path, db_url, "call", "mcp_x_add", "--args", '{"a": 1, "b": 2}', "--json", config=config)
    assert called["ok"] and called["text"] == "3", called
    audit = await cli(tmp_path, db_url, "audit", "--json")
    assert [(c["server"], c["tool"], c["outcome"]) for c in audit["calls"]] == [("x", "add", "ok")]
    assert [(a["action"], a["actor"]) for a in audit["actions"]] == [
        ("approve", "cli"),
        ("add", "cli"),
        ("create_token", "cli"),
    ]
    removed = await cli(tmp_path, db_url, "servers", "remove", "x", "--json", config=config)
    assert removed["ok"] and removed["state"] == "REMOVED"

    async with await Store.open(db_url) as store:
        assert await store.list_dynamic_servers() == ()
        assert [(t.name, t.role) for t in await store.list_tokens()] == [("laptop", "user")]
        assert (await store.verify_token(token["token"])) is not None


async def test_oauth_tokens_kept_by_two_stations_at_once_are_one_record(db_url: str) -> None:
    resource = "https://mcp.example/mcp"
    async with await Store.open(db_url) as first, await Store.open(db_url) as second:
        mine, theirs = StoreTokenStorage(first, "remote", resource), StoreTokenStorage(second, "remote", resource)
        client = OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
        async with anyio.create_task_group() as group:
            group.start_soon(mine.set_tokens, OAuthToken(access_token="a", refresh_token="r", expires_in=60))
            group.start_soon(theirs.set_client_info, client)

        for storage in (mine, theirs):
            tokens = await storage.get_tokens()
            assert tokens is not None and (tokens.access_token, tokens.refresh_token) == ("a", "r")
            info = await storage.get_client_info()
            assert info is not None and info.client_id == "c"
        await theirs.clear()
        assert await mine.get_tokens() is None and await mine.get_client_info() is None


async def test_a_failing_store_fails_the_request_that_needs_it_and_nothing_else(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def execute(store: Store, statement: str) -> None:
        async with store.engine.begin() as connection:
            await connection.execute(sa.text(statement))

    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(db_url) as store, Station(station_config([tiny("t")]), store=store) as station:
            await execute(store, "ALTER TABLE dynamic_servers RENAME TO dynamic_servers_away")
            await execute(store, "ALTER TABLE call_audit RENAME TO call_audit_away")
            with pytest.raises(StoreError, match=r"adding dynamic server 'extra' failed in the store at "):
                await station.add_server(demo("extra"), actor="alice")
            with caplog.at_level(logging.ERROR):
                result = await station.call_tool("mcp_t_add", {"a": 1, "b": 2})  # its audit write fails meanwhile
                assert result.ok and result.text == "3"
                await execute(store, "ALTER TABLE dynamic_servers_away RENAME TO dynamic_servers")
                assert (await station.add_server(demo("extra"), actor="alice")).ok  # the station carried on
            await execute(store, "ALTER TABLE call_audit_away RENAME TO call_audit")
            assert station.connection("t").is_ready and station.connection("extra").is_ready
    assert "could not write an audit record for t/add" in caplog.text
