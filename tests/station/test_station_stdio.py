"""The station over real stdio servers: catalog, calls, prompts, resources, failures, start-up."""

from __future__ import annotations

import time

import anyio
import mcp_types as types
import pytest
from station_helpers import START_TIMEOUT_S, chaos, demo, paged, pid_alive, tiny

from mcpstation import Station, StationConfig
from mcpstation.outcomes import Outcome

pytestmark = pytest.mark.anyio


def config(*servers: dict, **station: object) -> StationConfig:
    return StationConfig(servers=servers, station=station)


async def test_demo_server_tools_are_published_and_calls_are_routed():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("demo"))) as station:
            names = {t.name for t in station.tools}
            assert {"mcp_demo_add", "mcp_demo_echo", "mcp_demo_get_image"} <= names
            added = await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})
            assert added.ok and added.structured == {"result": 5} and added.text == "5"
            assert (added.server, added.tool, added.name) == ("demo", "add", "mcp_demo_add")
            assert added.duration_s > 0 and added.raw is not None
            image = await station.call_tool("mcp_demo_get_image", {})
            assert image.ok and isinstance(image.content[0], types.ImageContent)
            assert image.text.startswith("[image: image/png,")


async def test_tool_error_unknown_tool_and_timeout_are_results_not_exceptions():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("demo"))) as station:
            failed = await station.call_tool("mcp_demo_fail", {"message": "disk on fire"})
            assert not failed.ok and "disk on fire" in failed.error
            unknown = await station.call_tool("mcp_demo_ad", {"a": 1, "b": 1})
            assert not unknown.ok and "Did you mean 'mcp_demo_add'" in unknown.error
            started = time.monotonic()
            slow = await station.call_tool("mcp_demo_slow", {"seconds": 30}, timeout_s=0.5)
            assert not slow.ok and "did not answer within 0.5 s" in slow.error
            assert time.monotonic() - started < 10
            # the session survives the timeout
            assert (await station.call_tool("mcp_demo_add", {"a": 1, "b": 1})).structured == {"result": 2}


async def test_prompts_and_resources_including_templates_are_routed_to_their_owner():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("demo"))) as station:
            assert {p.name for p in station.prompts} == {"mcp_demo_greet", "mcp_demo_status"}
            prompt = await station.get_prompt("mcp_demo_greet", {"name": "Ada"})
            assert prompt.outcome is Outcome.OK and "Ada" in prompt.messages[0].content.text
            readme = await station.read_resource("demo://readme")
            assert readme.contents[0].text
            note = await station.read_resource("demo://notes/42")
            assert "42" in note.contents[0].text
            # No listing holds it and one server offers resources: that server is asked, and says no.
            nowhere = await station.read_resource("nowhere://x")
            assert nowhere.outcome is Outcome.REMOTE_ERROR and not nowhere.contents
            assert nowhere.server == "demo" and "Unknown resource: nowhere://x" in (nowhere.error or "")
            # No listing holds it and its prefix names demo: demo is asked, says no, and the answer
            # suggests the name it lists.
            typo = await station.get_prompt("mcp_demo_gret")
            assert typo.outcome is Outcome.REMOTE_ERROR and typo.server == "demo" and typo.prompt == "gret"
            assert "did you mean 'mcp_demo_greet'?" in (typo.error or ""), typo


async def test_failing_servers_are_reported_and_skipped_while_others_come_up():
    servers = (
        demo("good"),
        {"name": "missing", "command": "no-such-mcp-server-binary"},
        chaos("dies", "exit-at-start"),
        chaos("hangs", "hang-on-initialize", startup_timeout_s=1.5),
    )
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            status = {s.name: s for s in station.status().servers}
            assert status["good"].state == "READY"
            assert status["missing"].state == "FAILED"
            assert "command not found: no-such-mcp-server-binary" in status["missing"].error
            assert status["dies"].state == "FAILED"
            assert "fatal: missing API key" in status["dies"].error
            assert status["hangs"].state == "FAILED"
            assert "did not start within 1.5 s" in status["hangs"].error
            assert (await station.call_tool("mcp_good_add", {"a": 1, "b": 2})).ok


async def test_station_runs_with_an_empty_catalog_when_every_server_fails():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config({"name": "x", "command": "no-such-binary-either"})) as station:
            assert station.tools == []
            result = await station.call_tool("mcp_x_anything", {})
            assert result.outcome is Outcome.UNAVAILABLE
            assert "server 'x' is not running" in result.error and "command not found" in result.error


async def test_ten_servers_taking_one_second_each_start_concurrently():
    # The stdlib tiny server costs no import time, so what is measured is the overlap of the waits.
    servers = [tiny(f"s{i}", "--init-delay", "1") for i in range(10)]
    started = time.monotonic()
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, startup_timeout_s=30)) as station:
            elapsed = time.monotonic() - started
            assert all(s.state == "READY" for s in station.status().servers)
            assert len(station.tools) == 10 * 2
    assert elapsed < 5.0, f"10 one-second starts took {elapsed:.1f} s: they did not overlap"


async def test_overall_deadline_keeps_ready_servers_and_leaves_slow_ones_starting():
    servers = [tiny("fast"), tiny("slow", "--init-delay", "4", startup_timeout_s=30)]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers, startup_timeout_s=2.0)) as station:
            status = {s.name: s.state for s in station.status().servers}
            assert status == {"fast": "READY", "slow": "STARTING"}
            with anyio.fail_after(20):
                await station.connection("slow").settled.wait()
            assert station.connection("slow").is_ready
            assert "mcp_slow_echo" in {t.name for t in station.tools}


async def test_pagination_is_followed_to_the_end():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(paged("p", "--tools", "250", "--page-size", "7"))) as station:
            assert len(station.tools) == 250
            assert (await station.call_tool("mcp_p_t249", {})).ok


async def test_repeated_cursor_stops_discovery_with_a_warning_naming_the_server():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(paged("loop", "--tools", "50", "--page-size", "5", "--repeat-cursor"))) as station:
            [server] = station.status().servers
            assert server.state == "READY"
            assert server.tools > 0
            assert any("'loop' repeated tools cursor" in w for w in server.warnings)


async def test_endless_pagination_is_bounded_by_max_list_pages():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(paged("endless", "--endless", "--page-size", "3"), max_list_pages=20)) as station:
            [server] = station.status().servers
            assert server.tools == 60
            assert any("more than 20 pages" in w for w in server.warnings)


async def test_stopping_the_station_leaves_no_server_process_behind():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("a"), demo("b"))) as station:
            pids = [s.pid for s in station.status().servers]
            assert all(pids) and all(pid_alive(p) for p in pids)
    assert not any(pid_alive(p) for p in pids)


async def test_secrets_never_appear_in_repr_or_status():
    secret = "sk-sentinel-8c1f2a"
    spec = demo("demo", env={"API_KEY": secret})
    cfg = config(spec)
    assert secret not in repr(cfg)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(cfg) as station:
            assert secret not in repr(station.status())
            assert secret not in str(station.status().to_dict())


async def test_completion_is_routed_to_the_prompts_owner():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("demo"))) as station:
            ref = types.PromptReference(type="ref/prompt", name="mcp_demo_greet")
            completed = await station.complete(ref, {"name": "style", "value": "f"})
            assert completed.values == ("formal", "friendly", "funny")
            template = types.ResourceTemplateReference(type="ref/resource", uri="demo://notes/{note_id}")
            notes = await station.complete(template, {"name": "note_id", "value": ""})
            assert notes.ok and notes.values
            nope = await station.complete(
                types.PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}
            )
            assert nope.outcome is Outcome.NOT_FOUND
