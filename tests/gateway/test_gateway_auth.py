"""The gateway over HTTP authenticates every request as the API does, standalone and under `up`.

A `user` token lists and calls only what its role may see; an admin token sees everything; no
token or a wrong one is 401; a hidden tool is "not found". A standalone gateway refuses a
non-loopback bind when no token exists, exactly as `up` does, and warns in local-dev mode.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.abc import Process
from api_helpers import running_api
from fork_server import interpreter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from station_helpers import inproc

from mcpstation.store import Store

pytestmark = pytest.mark.anyio

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
START_TIMEOUT_S = 90.0  # a gateway subprocess starting a station on a loaded 2-core machine
SERVING = re.compile(rb"gateway serving \d+ tools at (http://\S+/mcp)")


def config_file(tmp_path: Path) -> Path:
    demo_args = '["-m", "mcpstation.testing.demo_server"]'
    path = tmp_path / "gateway.toml"
    path.write_text(
        "[station]\nserver_startup_timeout_s = 60\n\n"
        f'[servers.open]\ncommand = "{PY}"\nargs = {demo_args}\n\n'
        f'[servers.ops]\ncommand = "{PY}"\nargs = {demo_args}\nmin_role = "admin"\n'
    )
    return path


def env_for(tmp_path: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}


@asynccontextmanager
async def standalone_gateway(tmp_path: Path, *args: str) -> AsyncIterator[str]:
    """`mcpstation gateway` as a subprocess on a free loopback port; yields its URL."""
    command = [PY, "-m", "mcpstation", "--config", str(config_file(tmp_path)), "gateway", "--port", "0", *args]
    process: Process = await anyio.open_process(command, env=env_for(tmp_path))
    try:
        seen = b""
        with anyio.fail_after(START_TIMEOUT_S):
            assert process.stderr is not None
            while (found := SERVING.search(seen)) is None:
                seen += await process.stderr.receive()
        yield found.group(1).decode()
    finally:
        process.terminate()
        with anyio.move_on_after(20):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def tool_names(url: str, token: str | None) -> set[str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}


async def call_text(url: str, token: str, tool: str) -> tuple[str, str]:
    """How the call was answered ("result", "error result", or "invalid params" for a JSON-RPC
    error with that code) and the answer's text."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            try:
                result = await client.call_tool(tool, {"a": 1, "b": 2})
            except MCPError as exc:
                kind = "invalid params" if exc.error.code == types.INVALID_PARAMS else f"error {exc.error.code}"
                return kind, exc.error.message
            return "error result" if result.is_error else "result", result.content[0].text


async def test_standalone_gateway_needs_a_token_and_shows_each_role_its_own_tools(tmp_path: Path):
    """...and answers with the same security headers as the API (one middleware stack for both apps)."""
    async with await Store.open(data_dir=tmp_path) as store:
        admin, _ = await store.create_token("ops-person", "admin")
        user, _ = await store.create_token("agent", "user")
    async with standalone_gateway(tmp_path) as url:
        async with httpx2.AsyncClient(timeout=30) as http:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            headers = {"Accept": "application/json, text/event-stream"}
            refused = await http.post(url, json=initialize, headers=headers)
            assert refused.status_code == 401
            assert (
                refused.headers["x-frame-options"] == "DENY" and refused.headers["x-content-type-options"] == "nosniff"
            )
            wrong = {**headers, "Authorization": "Bearer not-a-token"}
            assert (await http.post(url, json=initialize, headers=wrong)).status_code == 401
        seen_by_user = await tool_names(url, user)
        seen_by_admin = await tool_names(url, admin)
        assert "mcp_open_add" in seen_by_user and not any(name.startswith("mcp_ops_") for name in seen_by_user)
        assert {"mcp_open_add", "mcp_ops_add"} <= seen_by_admin
        # Hidden: answered as a tool nobody has, a protocol error (SEP-2322).
        assert await call_text(url, user, "mcp_ops_add") == ("invalid params", "no tool 'mcp_ops_add'.")
        assert await call_text(url, admin, "mcp_ops_add") == ("result", "3")
    async with await Store.open(data_dir=tmp_path) as store:
        callers = {(c.server, c.caller) for c in await store.list_calls()}
    assert callers == {("ops", "ops-person")}  # the hidden call never reached anything to audit


async def test_a_non_loopback_gateway_without_tokens_is_refused_like_up(tmp_path: Path):
    env = env_for(tmp_path)
    config = str(config_file(tmp_path))
    with anyio.fail_after(START_TIMEOUT_S):
        gateway = await anyio.run_process(
            [PY, "-m", "mcpstation", "--config", config, "gateway", "--host", "0.0.0.0", "--port", "0"],
            env=env, check=False,
        )  # fmt: skip
        up = await anyio.run_process(
            [PY, "-m", "mcpstation", "--config", config, "up", "--host", "0.0.0.0", "--port", "0"], env=env, check=False
        )
    assert gateway.returncode == up.returncode == 2
    message = "refusing to serve on '0.0.0.0' without any API token"
    assert message in gateway.stderr.decode() and message in up.stderr.decode()


async def test_a_loopback_gateway_without_tokens_is_local_dev_and_says_so(tmp_path: Path):
    command = [PY, "-m", "mcpstation", "--config", str(config_file(tmp_path)), "gateway", "--port", "0"]
    process = await anyio.open_process(command, env=env_for(tmp_path))
    seen = b""
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            assert process.stderr is not None
            while (found := SERVING.search(seen)) is None:
                seen += await process.stderr.receive()
        assert b"local-dev mode" in seen
        assert "mcp_ops_add" in await tool_names(found.group(1).decode(), None)  # the local admin
    finally:
        process.terminate()
        with anyio.move_on_after(20):
            await process.wait()


async def test_under_up_a_user_token_uses_the_gateway_within_its_role(tmp_path: Path):
    servers = [inproc("open"), inproc("ops", min_role="admin")]
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, servers) as api:
            url = f"{api.url}/mcp"
            seen_by_user = await tool_names(url, api.tokens["user"])
            assert "mcp_open_add" in seen_by_user and "mcp_ops_add" not in seen_by_user
            assert "mcp_ops_add" in await tool_names(url, api.tokens["admin"])
            refused = ("invalid params", "no tool 'mcp_ops_add'.")
            assert await call_text(url, api.tokens["user"], "mcp_ops_add") == refused
            calls = {(c.server, c.caller) for c in await api.store.list_calls()}
    assert calls == set()
