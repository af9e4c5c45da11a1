"""Servers added at run time: persisted first, admitted by policy, shadowed by static, audited."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from station_helpers import PY, START_TIMEOUT_S, demo

from mcpstation import Station, StationConfig
from mcpstation.dynamic import parse_spec
from mcpstation.store import Store
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

POLICY = {
    "allowed_dynamic_stdio_commands": [PY, sys.executable],  # the forking shim, and the interpreter itself
    "allowed_dynamic_url_prefixes": ["http://127.0.0.1:"],
}


def config(*servers: dict, **policy: object) -> StationConfig:
    return StationConfig(servers=servers, policy={**POLICY, **policy})


async def open_store(tmp_path: Path) -> Store:
    return await Store.open(data_dir=tmp_path)


async def test_added_server_connects_and_is_connected_again_after_a_restart(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store:
            async with Station(config(demo("static")), store=store) as station:
                change = await station.add_server(demo("extra"), actor="alice")
                assert change.ok and change.state == "READY"
                assert change.message == "connected 'extra': 12 tools"
                assert (await station.call_tool("mcp_extra_add", {"a": 2, "b": 2})).ok
                origins = {s.name: s.origin for s in station.list_servers()}
                assert origins == {"static": "static", "extra": "dynamic"}
        async with await open_store(tmp_path) as store:
            async with Station(config(demo("static")), store=store) as station:
                assert station.connection("extra").is_ready
                actions = await store.list_actions(server="extra")
                assert [(a.action, a.actor) for a in actions] == [("add", "alice")]
                calls = await store.list_calls(server="extra")
                assert [(c.tool, c.outcome) for c in calls] == [("add", "ok")]


async def test_a_command_off_the_allowlist_is_refused_and_writes_nothing(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            change = await station.add_server({"name": "evil", "command": "/bin/sh", "args": ["-c", "id"]})
            assert not change.ok and "not in policy.allowed_dynamic_stdio_commands" in change.message
            url = await station.add_server({"name": "far", "transport": "http", "url": "http://10.0.0.1/mcp"})
            assert not url.ok and "does not start with an allowed prefix" in url.message
            assert await store.list_dynamic_servers() == ()
            assert await store.list_actions() == ()


async def test_inline_code_is_denied_even_for_an_allowlisted_interpreter(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            change = await station.add_server({"name": "inline", "command": sys.executable, "args": ["-c", "print(1)"]})
            assert not change.ok and "inline" in change.message.lower()
            assert await store.list_dynamic_servers() == ()


async def test_static_servers_cannot_be_changed_through_the_dynamic_path(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store, Station(config(demo("ops")), store=store) as station:
            assert not (await station.add_server(demo("ops"))).ok
            assert not (await station.remove_server("ops")).ok
            assert not (await station.disable_server("ops")).ok
            assert station.connection("ops").is_ready


async def test_a_stored_server_with_a_static_name_is_shadowed_and_kept(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store:
            async with Station(config(), store=store) as station:
                assert (await station.add_server(demo("shared", "--name", "dynamic-one"))).ok
        async with await open_store(tmp_path) as store:
            async with Station(config(demo("shared")), store=store) as station:
                statuses = [(s.name, s.origin, s.state) for s in station.list_servers()]
                assert ("shared", "static", "READY") in statuses
                assert ("shared", "dynamic", "SHADOWED") in statuses
                assert station.connection("shared").server_name == "demo"
            assert [r.name for r in await store.list_dynamic_servers()] == ["shared"]


async def test_failed_connect_on_add_stays_saved_and_is_retried_at_next_start(tmp_path: Path):
    async with serve_demo("http") as server:
        url = server.url
    spec = {"name": "later", "transport": "http", "url": url, "startup_timeout_s": 3}
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            change = await station.add_server(spec)
            assert change.ok and "did not connect" in change.message and "next start" in change.message
            assert [r.name for r in await store.list_dynamic_servers()] == ["later"]
    port = url.split(":")[2].split("/")[0]
    async with serve_demo("http", port=int(port)) as server:
        assert server.url == url
        with anyio.fail_after(START_TIMEOUT_S):
            async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
                assert station.connection("later").is_ready


async def test_allowlist_changes_skip_stored_servers_without_deleting_them(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store:
            async with Station(config(), store=store) as station:
                assert (await station.add_server(demo("tool"))).ok
        async with await open_store(tmp_path) as store:
            strict = StationConfig(policy={"allowed_dynamic_stdio_commands": ["npx"]})
            async with Station(strict, store=store) as station:
                [status] = station.list_servers()
                assert status.state == "REFUSED" and "no longer allowed" in status.error
                assert "tool" not in station.connections
            assert [r.name for r in await store.list_dynamic_servers()] == ["tool"]


async def test_disable_enable_and_remove_apply_to_the_catalog(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            assert (await station.add_server(demo("x"))).ok
            assert (await station.disable_server("x")).state == "DISABLED"
            assert not any(t.server == "x" for t in station.tools)
            assert (await station.enable_server("x")).state == "READY"
            assert any(t.server == "x" for t in station.tools)
            assert (await station.remove_server("x")).ok
            assert not any(t.server == "x" for t in station.tools)
            assert await store.list_dynamic_servers() == ()
            assert [a.action for a in reversed(await store.list_actions(server="x"))] == [
                "add", "disable", "enable", "remove",
            ]  # fmt: skip


async def test_a_runtime_url_is_judged_again_at_connect_time(tmp_path: Path):
    from mcpstation.policy import UrlGuard

    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"]])

    def rebinding_resolver(host: str) -> list[str]:
        return next(answers)

    with anyio.fail_after(START_TIMEOUT_S):
        async with await open_store(tmp_path) as store:
            station_config = config(allowed_dynamic_url_prefixes=["http://"])
            async with Station(station_config, store=store) as station:
                station._url_guard = UrlGuard(resolver=rebinding_resolver)
                change = await station.add_server(
                    {"name": "rebind", "transport": "http", "url": "http://rebind.test/mcp"}
                )
                assert change.ok and "refused before connecting" in change.message
                assert "loopback" in change.message


async def test_a_server_stored_as_active_under_looser_rules_waits_for_a_person_until_approved(tmp_path: Path):
    import mcpstation.testing.demo_server as demo_module

    script = {"name": "legacy", "command": sys.executable, "args": [demo_module.__file__]}  # a script: confirm
    with anyio.fail_after(START_TIMEOUT_S * 2):
        async with await open_store(tmp_path) as store:
            await store.add_dynamic_server(parse_spec(script), actor="old-release")  # stored active, never approved
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            [held] = [s for s in station.list_servers() if s.name == "legacy"]
            assert held.state == "PENDING" and "approve" in (held.error or "")
            assert "legacy" not in station.connections
            approved = await station.approve_server("legacy", actor="cli")
            assert approved.ok and approved.state == "READY", approved.message
        async with await open_store(tmp_path) as store, Station(config(), store=store) as station:
            assert station.connection("legacy").is_ready  # approved once is approved
        tightened = config(allowed_dynamic_stdio_commands=["npx"])
        async with await open_store(tmp_path) as store, Station(tightened, store=store) as station:
            [refused] = [s for s in station.list_servers() if s.name == "legacy"]
            assert refused.state == "REFUSED"
