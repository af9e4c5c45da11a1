"""The event stream over a real socket, and `mcpstation up` serving HTTP until SIGTERM."""

from __future__ import annotations

import json
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
from api_helpers import START_TIMEOUT_S, demo, running_api
from station_helpers import inproc

from mcpstation.api.serve import SHUTDOWN_GRACE_S

pytestmark = pytest.mark.anyio


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict]]:
    """(event, data) pairs from SSE lines; comments and `retry:` skipped."""
    kind = None
    async for line in lines:
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: ") and kind is not None:
            yield kind, json.loads(line.removeprefix("data: "))
            kind = None


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
