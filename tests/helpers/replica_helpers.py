"""Helpers for the replica tests: HAProxy in front of `mcpstation up` replicas, waiting for another
process's state, and the HTTP API calls those tests make.

`balancer` runs exactly `haproxy.cfg` (beside this file; docs/deploy.md shows it), filled in with
the replicas' addresses, listening on a Unix socket. Tests that need it call `haproxy_or_skip()`
first: without HAProxy they are skipped with the reason.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from face_helpers import RunningUp

from mcpstation.cli._control_transport import control_transport

HAPROXY_CONFIG = Path(__file__).resolve().parents[1] / "store" / "haproxy.cfg"
BALANCER_HOST = "balancer"  # the Host header clients of the balancer send; every replica accepts it
BALANCER_ARGS = ("--public-health", "--allow-host", f"{BALANCER_HOST}:*")  # `up` behind the balancer
ROTATION_TIMEOUT_S = 60.0  # the balancer's health checks put every replica in rotation
HAPROXY_START_S = 30.0  # HAProxy binding its socket on a loaded 2-core machine
HAPROXY_STOP_S = 10.0
POLL_S = 0.02  # how often a condition is looked at again (never a synchronisation)


def haproxy_or_skip() -> str:
    found = shutil.which("haproxy")
    if found is None:
        pytest.skip("HAProxy is not installed (Debian: apt-get install haproxy)")
    return found


def balancer_socket(tmp_path: Path) -> Path:
    """Where `balancer(haproxy, tmp_path, ...)` listens."""
    return tmp_path / "balancer.sock"


def balancer_log(tmp_path: Path) -> Path:
    """Where `balancer(haproxy, tmp_path, ...)` logs (server state changes: `Server replicas/r1 is DOWN`)."""
    return tmp_path / "haproxy.log"


def balancer_transport(tmp_path: Path) -> httpx2.AsyncHTTPTransport:
    """A transport to the balancer's socket, for clients of it made by hand (send `Host: balancer`)."""
    return control_transport(balancer_socket(tmp_path))  # anyio's raw Unix stream races a cancelled read


@asynccontextmanager
async def balancer(haproxy: str, tmp_path: Path, replicas: list[RunningUp]) -> AsyncIterator[httpx2.AsyncClient]:
    """HAProxy in front of `replicas` (server `r1` is `replicas[0]`, ...), listening on a Unix socket;
    a client of it, once it listens."""
    servers = "\n".join(
        f"    server r{index} {replica.url.removeprefix('http://')} check inter 250ms fall 2 rise 1"
        for index, replica in enumerate(replicas, 1)
    )
    bind = f"unix@{balancer_socket(tmp_path)}"
    text = HAPROXY_CONFIG.read_text().format(bind=bind, host=BALANCER_HOST, servers=servers)
    config = tmp_path / "haproxy.cfg"
    config.write_text(text)
    checked = await anyio.run_process([haproxy, "-c", "-f", str(config)], check=False)
    assert checked.returncode == 0, checked.stderr.decode(errors="replace")
    with balancer_log(tmp_path).open("wb") as log:
        process = await anyio.open_process([haproxy, "-db", "-f", str(config)], stdout=log, stderr=log)
        try:

            async def listening() -> bool:
                if process.returncode is not None:
                    raise AssertionError(f"HAProxy exited {process.returncode}:\n{balancer_log(tmp_path).read_text()}")
                return await anyio.Path(balancer_socket(tmp_path)).exists()

            # A loaded machine may take a while to start HAProxy: no request before it listens.
            await within(HAPROXY_START_S, "HAProxy listening", listening)
            base_url = f"http://{BALANCER_HOST}"
            async with httpx2.AsyncClient(transport=balancer_transport(tmp_path), base_url=base_url, timeout=30) as lb:
                yield lb
        finally:
            process.terminate()
            with anyio.CancelScope(shield=True), anyio.move_on_after(HAPROXY_STOP_S):
                await process.wait()
            if process.returncode is None:
                process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()


async def in_rotation(lb: httpx2.AsyncClient, replica_ids: set[str]) -> None:
    """Wait until requests through the balancer have reached each of `replica_ids` (each in rotation)."""
    seen: set[str] = set()

    async def all_seen() -> bool:
        answer = await lb.get("/api/health")
        if answer.status_code == 200:
            seen.add(answer.json()["replica"]["id"])
        return seen >= replica_ids

    await within(ROTATION_TIMEOUT_S, "every replica served through the balancer", all_seen)
    assert seen == replica_ids


async def within(seconds: float, what: str, check: Callable[[], Awaitable[bool]]) -> float:
    """Wait until `check()` is true; how long it took. Fails the test past `seconds`."""
    started = time.perf_counter()
    with anyio.move_on_after(seconds):
        while not await check():  # noqa: ASYNC110  # state of other processes, seen over HTTP
            await anyio.sleep(POLL_S)
        return time.perf_counter() - started
    raise AssertionError(f"{what}: not within {seconds} s")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def tool_names(client: httpx2.AsyncClient, url: str, token: str) -> set[str]:
    answer = await client.get(f"{url}/api/mcp/tools", headers=bearer(token))
    assert answer.status_code == 200, answer.text
    return {tool["name"] for tool in answer.json()["tools"]}


async def call(client: httpx2.AsyncClient, url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    answer = await client.post(
        f"{url}/api/mcp/tools/{tool}/call", params={"answer": "result"}, json=arguments, headers=bearer(token)
    )
    return answer.json()


async def add_http_server(client: httpx2.AsyncClient, url: str, token: str, name: str, server_url: str) -> None:
    """Add a streamable HTTP server through the API at `url`; it must be READY in the answer."""
    added = await client.post(
        f"{url}/api/mcp/servers", json={"name": name, "transport": "http", "url": server_url}, headers=bearer(token)
    )
    assert added.status_code == 200 and added.json()["state"] == "READY", added.text


def adds_up(client: httpx2.AsyncClient, url: str, token: str, tool: str) -> Callable[[], Awaitable[bool]]:
    """A check for `within`: `tool` (the demo server's `add`) answers 2 + 3 through the API at `url`."""

    async def check() -> bool:
        result = await call(client, url, token, tool, {"a": 2, "b": 3})
        return bool(result.get("outcome") == "ok" and result.get("text") == "5")

    return check
