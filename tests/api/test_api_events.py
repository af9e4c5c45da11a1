"""The event stream over a real socket, and `mcpstation up` serving HTTP until SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from _processes import alive, children_of
from api_helpers import START_TIMEOUT_S, demo, running_api, sse_events
from station_helpers import inproc
from uri_server import UriServer

from mcpstation.api.serve import SHUTDOWN_GRACE_S
from mcpstation.events import SUBSCRIBER_BUFFER, StationEvent
from mcpstation.pipeline import Caller

pytestmark = pytest.mark.anyio


async def test_event_stream_starts_with_a_snapshot_and_reports_an_added_server(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api:
            async with api.client() as anonymous, api.client("admin") as admin:
                # EventSource cannot send headers: the token goes in the query on this route only.
                async with anonymous.stream("GET", "/api/events", params={"token": api.tokens["user"]}) as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"].startswith("text/event-stream")
                    events = sse_events(stream.aiter_lines())
                    kind, snapshot = await anext(events)
                    assert kind == "snapshot" and [s["name"] for s in snapshot["servers"]] == ["demo"]
                    added = await admin.post("/api/mcp/servers", json=demo("extra"))
                    assert added.json()["ok"]
                    seen: list[tuple[str, dict]] = []
                    async for kind, data in events:
                        seen.append((kind, data))
                        if kind == "state" and data["server"] == "extra" and data["state"] == "READY":
                            break
                    assert ("state", "extra") in {(k, d["server"]) for k, d in seen}
                    assert all(k != "log" for k, _ in seen), "log lines are for admins only"
                    async for kind, data in events:
                        if kind == "server":
                            assert data["action"] == "add" and data["server"] == "extra"
                            break
            async with api.client() as anonymous:
                wrong = await anonymous.get("/api/events", params={"token": "nope"})
                assert wrong.status_code == 401
                query_elsewhere = await anonymous.get("/api/mcp/tools", params={"token": api.tokens["admin"]})
                assert query_elsewhere.status_code == 401


async def next_field(events: AsyncIterator[tuple[str, dict]], kind: str, field: str) -> str:
    """`field` of the next event of `kind` on the stream."""
    async for seen, data in events:
        if seen == kind:
            return str(data[field])
    raise AssertionError("the event stream ended")


async def test_a_resource_update_reaches_only_callers_who_can_see_its_server(tmp_path: Path):
    ops = UriServer("ops", listed=("ops://runbook",), subscribe=True)
    pub = UriServer("pub", listed=("pub://notes",), subscribe=True)
    servers = [
        inproc("ops", server=ops.server, min_role="admin", protocol="legacy"),
        inproc("pub", server=pub.server, protocol="legacy"),
    ]
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, servers) as api, api.client("user") as user, api.client("admin") as admin:
            for uri in ("ops://runbook", "pub://notes"):
                assert (await api.station.requests.subscribe(uri, caller=Caller.cli())).ok
            async with (
                user.stream("GET", "/api/events") as user_stream,
                admin.stream("GET", "/api/events") as admin_stream,
            ):
                user_events, admin_events = (
                    sse_events(user_stream.aiter_lines()),
                    sse_events(admin_stream.aiter_lines()),
                )
                assert (await anext(user_events))[0] == (await anext(admin_events))[0] == "snapshot"
                await ops.updated("ops://runbook")
                await pub.updated("pub://notes")  # after ops's: a user who saw ops's would see it first
                assert await next_field(user_events, "resource", "uri") == "pub://notes"
                assert [
                    await next_field(admin_events, "resource", "uri"),
                    await next_field(admin_events, "resource", "uri"),
                ] == [
                    "ops://runbook",
                    "pub://notes",
                ]


async def test_a_user_knows_only_the_servers_it_can_see_and_none_of_their_stderr(tmp_path: Path):
    servers = [demo("ops", min_role="admin"), demo("pub")]  # stdio demo servers: each says "listening" on stderr
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, servers) as api, api.client("user") as user, api.client("admin") as admin:
            while not all(s.stderr_tail for s in api.station.status().servers):  # noqa: ASYNC110 - no event for it
                await anyio.sleep(0.02)  # each server's "listening" line is read from its pipe after it is up
            listed = {s["name"]: s for s in (await user.get("/api/mcp/servers")).json()["servers"]}
            assert list(listed) == ["pub"] and listed["pub"]["stderr_tail"] == []
            everything = {s["name"]: s for s in (await admin.get("/api/mcp/servers")).json()["servers"]}
            assert set(everything) == {"ops", "pub"} and everything["pub"]["stderr_tail"], "admins see stderr"
            async with (
                user.stream("GET", "/api/events") as user_stream,
                admin.stream("GET", "/api/events") as admin_stream,
            ):
                user_events = sse_events(user_stream.aiter_lines())
                admin_events = sse_events(admin_stream.aiter_lines())
                kind, snapshot = await anext(user_events)
                assert kind == "snapshot" and [s["name"] for s in snapshot["servers"]] == ["pub"]
                assert {s["name"] for s in (await anext(admin_events))[1]["servers"]} == {"ops", "pub"}
                for name in ("ops", "pub"):  # ops first: a user who heard of it would hear of it first
                    assert (await admin.post(f"/api/mcp/servers/{name}/reconnect")).status_code == 200
                assert await next_field(user_events, "state", "server") == "pub"
                assert await next_field(admin_events, "state", "server") == "ops"


async def test_a_stream_that_fell_behind_says_how_many_events_it_lost(tmp_path: Path):
    flood = SUBSCRIBER_BUFFER + 50
    with anyio.fail_after(START_TIMEOUT_S):
        async with (
            running_api(tmp_path) as api,  # no server: no event of the station's own comes between ours
            api.client("admin") as admin,
            admin.stream("GET", "/api/events") as stream,
        ):
            events = sse_events(stream.aiter_lines())
            assert (await anext(events))[0] == "snapshot"
            for n in range(flood):  # at once: the stream cannot take them as they come
                api.station.events.publish(StationEvent("catalog", data={"changed": [], "n": n}))
            kind, data = await anext(events)
            assert kind == "lost" and flood - SUBSCRIBER_BUFFER - 1 <= data["lost"] <= flood - SUBSCRIBER_BUFFER
            received = [(await anext(events))[1]["n"] for _ in range(flood - data["lost"])]
            assert received == list(range(flood - data["lost"]))  # the oldest, in order; the rest were lost
            api.station.events.publish(StationEvent("catalog", data={"changed": [], "n": "after"}))
            kind, data = await anext(events)
            assert (kind, data["n"]) == ("catalog", "after")  # caught up: nothing more lost, no notice


async def test_open_event_streams_do_not_hold_up_shutdown(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("admin") as admin:
            async with admin.stream("GET", "/api/events") as stream:
                lines = stream.aiter_lines()
                assert (await anext(lines)).startswith("retry:")
                started = time.monotonic()
                api.server.should_exit = True
                with anyio.fail_after(SHUTDOWN_GRACE_S):
                    async for _ in lines:
                        pass
                assert time.monotonic() - started < SHUTDOWN_GRACE_S


def test_up_serves_the_api_and_stops_on_sigterm_with_exit_0_and_no_child_left(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text(
        f'[servers.demo]\ncommand = "{sys.executable}"\nargs = ["-m", "mcpstation.testing.demo_server"]\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    log = tmp_path / "up.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcpstation", "--config", str(config), "up", "--port", "0"],
            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := re.search(r"serving the console at (http://127\.0\.0\.1:\d+)/", log.read_text())):
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.1)
        base = found.group(1)
        assert "local-dev mode" in log.read_text()
        health = httpx2.get(f"{base}/api/health", timeout=10)
        assert health.status_code == 200 and health.json()["auth"] == "local-dev"
        tools = httpx2.get(f"{base}/api/mcp/tools", timeout=10).json()["tools"]
        assert "mcp_demo_add" in {t["name"] for t in tools}
        children = children_of(process.pid)
        assert children
        with httpx2.stream("GET", f"{base}/api/events", timeout=10) as events:
            next(events.iter_lines())
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, log.read_text()
    assert not [pid for pid in children if alive(pid)]
