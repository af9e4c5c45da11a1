"""The API's routes against real demo servers: servers, catalog, calls, audit, OpenAPI (metrics: test_metrics.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from api_helpers import START_TIMEOUT_S, demo, running_api
from mcp.server.mcpserver import MCPServer
from starlette.routing import Route
from station_helpers import inproc

from mcpstation.outcomes import Outcome
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


async def test_servers_are_managed_through_the_station_rules(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("admin") as admin:
            listed = (await admin.get("/api/mcp/servers")).json()
            [static] = listed["servers"]
            assert (static["name"], static["origin"], static["state"], static["tools"]) == (
                "demo",
                "static",
                "READY",
                12,
            )
            assert static["server_name"] == "demo" and static["error"] is None and "conflicts" in listed

            added = await admin.post("/api/mcp/servers", json=demo("extra"))
            assert added.json() == {
                "ok": True, "action": "add", "server": "extra", "message": "connected 'extra': 12 tools",
                "state": "READY", "tools": 12, "conflict": False,
            }  # fmt: skip
            refused = await admin.post(
                "/api/mcp/servers", json={"name": "evil", "command": "/bin/sh", "args": ["-c", "id"]}
            )
            assert refused.status_code == 409 and not refused.json()["ok"]
            assert "not in policy.allowed_dynamic_stdio_commands" in refused.json()["message"]
            static_change = await admin.post("/api/mcp/servers/demo/disable")
            assert static_change.status_code == 409 and "static server" in static_change.json()["message"]

            disabled = await admin.post("/api/mcp/servers/extra/disable")
            assert disabled.json()["state"] == "DISABLED"
            states = {s["name"]: s["state"] for s in (await admin.get("/api/mcp/servers")).json()["servers"]}
            assert states == {"demo": "READY", "extra": "DISABLED"}
            assert (await admin.post("/api/mcp/servers/extra/enable")).json()["state"] == "READY"
            reconnected = await admin.post("/api/mcp/servers/extra/reconnect")
            assert reconnected.json()["ok"] and reconnected.json()["action"] == "reconnect"
            assert (await admin.post("/api/mcp/servers/demo/reload")).json()["state"] == "READY"
            not_pending = await admin.post("/api/mcp/servers/extra/approve")
            assert not_pending.status_code == 409 and "waiting for approval" in not_pending.json()["message"]
            unknown = await admin.post("/api/mcp/servers/nope/reconnect")
            assert unknown.status_code == 404 and unknown.json()["server"] == "nope"
            removed = await admin.delete("/api/mcp/servers/extra")
            assert removed.json()["state"] == "REMOVED"
            assert [s["name"] for s in (await admin.get("/api/mcp/servers")).json()["servers"]] == ["demo"]


async def test_bodies_are_validated_and_errors_have_one_shape(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("admin") as admin:
            invalid = await admin.post("/api/mcp/servers", json={"name": "x", "transport": "carrier-pigeon"})
            assert invalid.status_code == 422
            assert invalid.json()["type"] == "ValidationError" and "transport" in invalid.json()["message"]
            not_json = await admin.post("/api/mcp/tools/mcp_demo_add/call", content=b"{nope")
            assert not_json.status_code == 422 and not_json.json()["type"] == "ValidationError"
            not_object = await admin.post("/api/mcp/tools/mcp_demo_add/call", json=[1, 2])
            assert not_object.status_code == 422
            missing = await admin.get("/api/nothing-here")
            assert missing.status_code == 404 and set(missing.json()) == {"type", "message", "server", "tool"}
            wrong_method = await admin.put("/api/mcp/tools")
            assert wrong_method.status_code == 405 and wrong_method.json()["type"] == "MethodNotAllowed"
            bad_since = await admin.get("/api/mcp/audit", params={"since": "yesterday-ish"})
            assert bad_since.status_code == 400 and "ISO 8601" in bad_since.json()["message"]
            too_big = await admin.post("/api/mcp/tools/mcp_demo_echo/call", json={"message": "x" * (5 * 1024 * 1024)})
            assert too_big.status_code == 413


async def test_catalog_lists_calls_prompts_and_resources_in_the_library_shapes(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("user") as user:
            tools = {t["name"]: t for t in (await user.get("/api/mcp/tools")).json()["tools"]}
            add = tools["mcp_demo_add"]
            assert (add["server"], add["server_name"], add["tool"]) == ("demo", "demo", "add")
            assert add["description"] and add["input_schema"]["required"] == ["a", "b"]

            result = (await user.post("/api/mcp/tools/mcp_demo_add/call", json={"a": 2, "b": 3})).json()
            expected = (await api.station.call_tool("mcp_demo_add", {"a": 2, "b": 3})).to_dict()
            assert set(result) == set(expected)
            assert {k: v for k, v in result.items() if k != "duration_s"} == {
                k: v for k, v in expected.items() if k != "duration_s"
            }
            image = (await user.post("/api/mcp/tools/mcp_demo_get_image/call")).json()
            assert image["ok"] and image["content"][0]["type"] == "image" and image["content"][0]["mimeType"]
            structured = (await user.post("/api/mcp/tools/mcp_demo_structured/call")).json()
            assert structured["structured"]["sensor"]
            failed = await user.post("/api/mcp/tools/mcp_demo_fail/call", json={"message": "boom"})
            assert failed.status_code == 200 and not failed.json()["ok"] and "boom" in failed.json()["error"]
            slow = await user.post(
                "/api/mcp/tools/mcp_demo_slow/call", params={"timeout_s": "0.2"}, json={"seconds": 5}
            )
            assert not slow.json()["ok"] and "within" in slow.json()["error"]
            typo = await user.post("/api/mcp/tools/mcp_demo_ad/call", json={})
            assert typo.status_code == 404 and "mcp_demo_add" in typo.json()["message"]

            prompts = {p["name"]: p for p in (await user.get("/api/mcp/prompts")).json()["prompts"]}
            greet = prompts["mcp_demo_greet"]
            got = await user.post(f"/api/mcp/prompts/{greet['name']}/get", json={"name": "Ada"})
            assert got.status_code == 200 and "Ada" in json.dumps(got.json()["messages"])
            assert (await user.post("/api/mcp/prompts/nope/get", json={})).json()["type"] == "ToolNotFound"

            listed = (await user.get("/api/mcp/resources")).json()
            assert "demo://readme" in {r["uri"] for r in listed["resources"]}
            assert listed["templates"][0]["uri_template"] == "demo://notes/{note_id}"
            readme = await user.get("/api/mcp/resources/read", params={"uri": "demo://readme"})
            assert "mcpstation demo server" in readme.json()["contents"][0]["text"]
            note = await user.get("/api/mcp/resources/read", params={"uri": "demo://notes/1"})
            assert note.json()["contents"][0]["text"] == "first note"
            assert (await user.get("/api/mcp/resources/read")).status_code == 400
            # No listing holds it, and one server offers resources: it is asked, and its own answer comes back.
            unknown = await user.get("/api/mcp/resources/read", params={"uri": "nowhere://x"})
            assert unknown.status_code == 502 and "Unknown resource: nowhere://x" in unknown.json()["message"]


async def test_openapi_document_is_built_from_the_models_and_lists_every_route(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("demo")]) as api, api.client("user") as user:
            document = json.loads((await user.get("/openapi.json")).text)
            assert document["openapi"].startswith("3.1")
            paths = document["paths"]
            app_routes = {
                (method, route.path)
                for route in api.server.app.routes
                if isinstance(route, Route) and route.path.startswith(("/api", "/metrics", "/openapi"))
                for method in route.methods - {"HEAD"}
            }
            documented = {(method.upper(), path) for path, ops in paths.items() for method in ops}
            assert documented == app_routes
            schemas = document["components"]["schemas"]
            assert {"ErrorBody", "ServerInfo", "ToolResultBody", "AddServerRequest"} <= set(schemas)
            refs = set()

            def collect(node: object) -> None:
                if isinstance(node, dict):
                    if isinstance(node.get("$ref"), str):
                        refs.add(node["$ref"])
                    for value in node.values():
                        collect(value)
                elif isinstance(node, list):
                    for value in node:
                        collect(value)

            collect(document)
            assert refs and all(ref.removeprefix("#/components/schemas/") in schemas for ref in refs)
            call = paths["/api/mcp/tools/{name}/call"]["post"]
            assert call["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("CallToolRequest")
            assert call["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("ToolResultBody")


SENTINEL = "sentinel-5b1e-api-do-not-print"


async def test_no_secret_appears_in_any_response(tmp_path: Path):
    leaky = {
        "name": "leaky",
        "command": sys.executable,
        "args": ["-c", "import os, sys; sys.stderr.write('token=' + os.environ['TOKEN'] + '\\n'); sys.exit(3)"],
        "env": {"TOKEN": SENTINEL},
    }
    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [demo("demo", env={"API_KEY": SENTINEL}), leaky]) as api:
            bodies: list[str] = []
            async with api.client("admin") as admin:
                async with admin.stream("GET", "/api/events") as events:
                    lines = events.aiter_lines()
                    added = await admin.post("/api/mcp/servers", json=demo("extra", env={"SECRET": SENTINEL + "-2"}))
                    remote = await admin.post(
                        "/api/mcp/servers",
                        json={"name": "remote", "transport": "http", "url": "http://10.9.9.9/mcp",
                              "headers": {"Authorization": f"Bearer {SENTINEL}-3"}},
                    )  # fmt: skip
                    bodies += [added.text, remote.text]
                    with anyio.move_on_after(1.0):
                        async for line in lines:
                            bodies.append(line)
                for method, path in [
                    ("GET", "/api/health"), ("GET", "/api/mcp/servers"), ("GET", "/api/mcp/tools"),
                    ("GET", "/api/mcp/prompts"), ("GET", "/api/mcp/resources"), ("GET", "/api/mcp/audit"),
                    ("GET", "/metrics"), ("GET", "/openapi.json"), ("POST", "/api/mcp/servers/leaky/reconnect"),
                    ("POST", "/api/mcp/servers/extra/reload"), ("POST", "/api/mcp/servers/remote/approve"),
                ]:  # fmt: skip
                    bodies.append((await admin.request(method, path)).text)
                bodies.append((await admin.post("/api/mcp/tools/mcp_demo_echo/call", json={"message": "hi"})).text)
            status = {s.name: s for s in api.station.status().servers}
            assert any(SENTINEL in line for line in status["leaky"].stderr_tail), "the leak was not planted"
            assert all(SENTINEL not in body for body in bodies), [b for b in bodies if SENTINEL in b][:1]
            assert any("**********" in body for body in bodies)


async def test_a_call_whose_client_leaves_is_cancelled_upstream_and_audited_so(tmp_path: Path):
    started, cancelled = anyio.Event(), anyio.Event()
    hanging = MCPServer("hanging")

    @hanging.tool()
    async def hang() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    with anyio.fail_after(START_TIMEOUT_S):
        async with running_api(tmp_path, [inproc("hang", server=hanging)]) as api, api.client("user") as user:
            async with anyio.create_task_group() as group:
                leaving = anyio.CancelScope()

                async def call() -> None:
                    with leaving:
                        await user.post("/api/mcp/tools/mcp_hang_hang/call", json={})

                group.start_soon(call)
                await started.wait()
                leaving.cancel()  # the client gives up: its connection closes
                await cancelled.wait()  # the server's handler was cancelled: it was told
        async with await Store.open(data_dir=tmp_path) as store:  # the station wrote every record as it closed
            assert [(c.tool, c.outcome) for c in await store.list_calls()] == [("hang", Outcome.CANCELLED)]
