"""Who may use the API and from where: tokens and roles, Host and Origin, local-dev, bind refusal.

All over a real socket (uvicorn on 127.0.0.1:0) with demo servers as subprocesses.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import aiosqlite
import anyio
import pytest
from api_helpers import START_TIMEOUT_S, demo, running_api
from fork_server import interpreter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from station_helpers import inproc

from mcpstation.api import check_bind
from mcpstation.errors import UsageError
from mcpstation.store import DATABASE_FILE_NAME, Store

pytestmark = pytest.mark.anyio

PROTECTED = [
    ("GET", "/api/health"),
    ("GET", "/api/mcp/servers"),
    ("POST", "/api/mcp/servers"),
    ("DELETE", "/api/mcp/servers/demo"),
    ("POST", "/api/mcp/servers/demo/reconnect"),
    ("GET", "/api/mcp/tools"),
    ("POST", "/api/mcp/tools/mcp_demo_add/call"),
    ("GET", "/api/mcp/prompts"),
    ("GET", "/api/mcp/resources"),
    ("GET", "/api/mcp/resources/read?uri=demo://readme"),
    ("GET", "/api/mcp/audit"),
    ("GET", "/api/events"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("POST", "/mcp"),
]


def assert_error(response, status: int, kind: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"type", "message", "server", "tool"}
    assert body["type"] == kind and body["message"]
    return body


async def test_every_route_but_the_console_needs_a_valid_token(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client() as anonymous:
            for method, path in PROTECTED:
                response = await anonymous.request(method, path)
                assert_error(response, 401, "Unauthorized")
                assert response.headers["www-authenticate"] == "Bearer"
            bad = await anonymous.get("/api/mcp/tools", headers={"Authorization": "Bearer mcps_not-a-token"})
            assert "not valid" in assert_error(bad, 401, "Unauthorized")["message"]
            console = await anonymous.get("/")
            assert console.status_code == 200 and "<title>mcpstation</title>" in console.text
            assert (await anonymous.get("/static/console.js")).status_code == 200


async def test_health_can_be_made_public_and_nothing_else_is(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")], public_health=True) as api, api.client() as anonymous:
            health = await anonymous.get("/api/health")
            assert health.status_code == 200
            assert health.json()["auth"] == "token" and health.json()["servers"] == {"READY": 1}
            assert_error(await anonymous.get("/api/mcp/servers"), 401, "Unauthorized")


async def test_user_calls_tools_and_uses_the_gateway_but_only_admin_manages_servers_and_reads_audit(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api:
            async with api.client("user") as user, api.client("admin") as admin:
                called = await user.post("/api/mcp/tools/mcp_demo_add/call", json={"a": 2, "b": 3})
                assert called.status_code == 200 and called.json()["ok"] and called.json()["text"] == "5"
                assert (await user.get("/api/mcp/servers")).status_code == 200
                denied = await user.post("/api/mcp/servers", json=demo("extra"))
                assert "'admin' role" in assert_error(denied, 403, "Forbidden")["message"]
                for path in ("/api/mcp/servers/demo/disable", "/api/mcp/servers/demo/reconnect"):
                    assert_error(await user.post(path), 403, "Forbidden")
                assert_error(await user.get("/api/mcp/audit"), 403, "Forbidden")
                assert (await user.post("/mcp", json={})).status_code == 400  # past the door: a bad JSON-RPC body
                added = await admin.post("/api/mcp/servers", json=demo("extra"))
                assert added.status_code == 200 and added.json()["state"] == "READY"
                calls = (await admin.get("/api/mcp/audit", params={"server": "demo"})).json()["calls"]
                assert [(c["tool"], c["caller"]) for c in calls] == [("add", "user-token")]
                actions = (await admin.get("/api/mcp/audit", params={"server": "extra"})).json()["actions"]
                assert [(a["action"], a["actor"]) for a in actions] == [("add", "api:admin-token")]


async def test_user_sees_and_calls_only_the_tools_its_role_may_see(tmp_path: Path):
    servers = [inproc("ops", min_role="admin"), inproc("pub")]
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, servers) as api:
            async with api.client("user") as user, api.client("admin") as admin:
                user_tools = {t["server"] for t in (await user.get("/api/mcp/tools")).json()["tools"]}
                admin_tools = {t["server"] for t in (await admin.get("/api/mcp/tools")).json()["tools"]}
                assert user_tools == {"pub"} and admin_tools == {"ops", "pub"}
                hidden = await user.post("/api/mcp/tools/mcp_ops_add/call", json={"a": 1, "b": 1})
                body = assert_error(hidden, 404, "ToolNotFound")
                assert body["tool"] == "mcp_ops_add" and "mcp_ops" not in body["message"].replace("'mcp_ops_add'", "")
                assert (await admin.post("/api/mcp/tools/mcp_ops_add/call", json={"a": 1, "b": 1})).json()["ok"]


async def test_foreign_host_origin_and_cross_site_requests_are_refused(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")], allowed_hosts=["station.internal:*"]) as api:
            async with api.client("admin") as admin:
                rebound = await admin.get("/api/mcp/tools", headers={"Host": f"evil.example:{api.port}"})
                assert_error(rebound, 421, "InvalidHost")
                wrong_port = await admin.get("/api/mcp/tools", headers={"Host": "127.0.0.1:1"})
                assert_error(wrong_port, 421, "InvalidHost")
                console = await admin.get("/", headers={"Host": "evil.example"})
                assert_error(console, 421, "InvalidHost")
                foreign = await admin.post("/api/mcp/servers/demo/reconnect", headers={"Origin": "http://evil.example"})
                assert_error(foreign, 403, "Forbidden")
                cross_site = await admin.get("/api/mcp/tools", headers={"Sec-Fetch-Site": "cross-site"})
                assert_error(cross_site, 403, "Forbidden")
                for host in (f"localhost:{api.port}", f"[::1]:{api.port}", "station.internal:443"):
                    assert (await admin.get("/api/mcp/tools", headers={"Host": host})).status_code == 200
                same_origin = await admin.get("/api/mcp/tools", headers={"Origin": f"http://localhost:{api.port}"})
                assert same_origin.status_code == 200


async def test_loopback_without_tokens_is_local_dev_until_a_token_exists(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")], tokens=False) as api, api.client() as anonymous:
            assert (await anonymous.get("/api/health")).json()["auth"] == "local-dev"
            added = await anonymous.post("/api/mcp/servers", json=demo("extra"))
            assert added.status_code == 200 and added.json()["ok"]
            actions = (await anonymous.get("/api/mcp/audit", params={"server": "extra"})).json()["actions"]
            assert actions[0]["actor"] == "api:local"
            # Local-dev still refuses other origins: a page elsewhere cannot use it.
            foreign = await anonymous.get("/api/mcp/tools", headers={"Origin": "http://evil.example"})
            assert_error(foreign, 403, "Forbidden")
            # A token written by another process on the store ends local-dev with the next request.
            async with await Store.open(api.store.url) as elsewhere:
                await elsewhere.create_token("first", "admin")
            assert_error(await anonymous.get("/api/mcp/tools"), 401, "Unauthorized")


async def test_non_loopback_bind_without_tokens_is_refused(tmp_path: Path):
    async with await Store.open(data_dir=tmp_path) as store:
        await check_bind(store, "127.0.0.1")
        await check_bind(store, "::1")
        await check_bind(None, "localhost")
        for host in ("0.0.0.0", "192.168.1.20", "::"):
            with pytest.raises(UsageError, match="without any API token"):
                await check_bind(store, host)
        await store.create_token("ops", "admin")
        await check_bind(store, "0.0.0.0")


def test_up_refuses_a_non_loopback_bind_without_tokens_before_starting_servers(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text(f'[servers.demo]\ncommand = "{interpreter()}"\nargs = ["-m", "mcpstation.testing.demo_server"]\n')
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [interpreter(), "-m", "mcpstation", "--config", str(config), "up", "--host", "0.0.0.0", "--port", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "without any API token" in done.stderr and "token create" in done.stderr
    assert "ready" not in done.stderr


async def test_admin_token_reaches_the_gateway_at_mcp(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("admin") as http:
            transport = streamable_http_client(f"{api.url}/mcp", http_client=http)
            async with Client(transport) as client:
                tools = await client.list_tools()
                assert "mcp_demo_add" in {t.name for t in tools.tools}
                result = await client.call_tool("mcp_demo_add", {"a": 20, "b": 22})
                assert not result.is_error and result.content[0].text == "42"


async def test_a_token_that_cannot_be_checked_gets_the_stores_error_not_a_bare_500(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("user") as user:
            assert (await user.get("/api/mcp/tools")).status_code == 200
            async with aiosqlite.connect(tmp_path / DATABASE_FILE_NAME) as other:
                await other.execute("DROP TABLE api_tokens")  # the store breaks under the running station
                await other.commit()
            broken = await user.get("/api/mcp/tools")
            assert_error(broken, 500, "StoreError")
            assert "verifying an API token" in broken.json()["message"]
