"""Servers that crash, hang, flood or lie never take the station down (one test per fault)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from fork_server import interpreter
from station_helpers import START_TIMEOUT_S, chaos, demo, inproc, paged, pid_alive

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState, _stdio
from mcpstation.outcomes import Outcome

pytestmark = pytest.mark.anyio

FAST_RESTARTS = {"restart_backoff_s": 0.1, "restart_backoff_max_s": 0.5}


def config(*servers: object, **station: object) -> StationConfig:
    return StationConfig(servers=servers, station=station)


async def wait_state(station: Station, name: str, *states: str, timeout_s: float = 20.0) -> None:
    with anyio.fail_after(timeout_s):
        await station.connection(name).wait_for_state(*(ConnectionState[state] for state in states))


async def healthy_neighbour_answers(station: Station) -> None:
    result = await station.call_tool("mcp_healthy_add", {"a": 1, "b": 2}, timeout_s=10)
    assert result.ok and result.structured == {"result": 3}


async def test_crash_mid_call_reports_connection_lost_and_restarts_with_backoff():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("healthy"), chaos("crashy", "crash-on-call"), **FAST_RESTARTS)) as station:
            first_pid = station.connection("crashy").pid
            result = await station.call_tool("mcp_crashy_boom", {})
            assert not result.ok and "connection lost" in result.error and "not retried" in result.error
            await healthy_neighbour_answers(station)
            await wait_state(station, "crashy", "READY")
            connection = station.connection("crashy")
            assert connection.restarts >= 1 and connection.pid != first_pid
            assert (await station.call_tool("mcp_crashy_ping_me", {})).text == "pong"


async def test_circuit_breaker_opens_after_consecutive_failures_until_reconnect():
    settings = {**FAST_RESTARTS, "max_consecutive_failures": 3}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("healthy"), chaos("crashy", "crash-on-call"), **settings)) as station:
            for _ in range(3):
                await wait_state(station, "crashy", "READY", "FAILED")
                if str(station.connection("crashy").state) == "FAILED":
                    break
                await station.call_tool("mcp_crashy_boom", {})
                await wait_state(station, "crashy", "BACKING_OFF", "FAILED", "STARTING")
            await wait_state(station, "crashy", "FAILED")
            [status] = [s for s in station.status().servers if s.name == "crashy"]
            assert status.state == "FAILED" and "connection lost" in status.error
            await healthy_neighbour_answers(station)
            assert await station.reconnect(failed_only=True) == ["crashy"]
            assert station.connection("crashy").is_ready


async def test_hung_call_times_out_cancels_only_that_request():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("healthy"), chaos("hangs", "hang-on-call"))) as station:
            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                outcome: dict[str, object] = {}

                async def hang() -> None:
                    outcome["hang"] = await station.call_tool("mcp_hangs_hang", {}, timeout_s=1.0)

                tg.start_soon(hang)
                await healthy_neighbour_answers(station)
                assert (await station.call_tool("mcp_hangs_ping_me", {})).text == "pong"
            hung = outcome["hang"]
            assert not hung.ok and "did not answer within 1.0 s" in hung.error  # type: ignore[union-attr]
            assert time.monotonic() - started < 10
            assert station.connection("hangs").is_ready


@pytest.mark.parametrize("mode", ["garbage-stdout", "invalid-utf8", "wrong-ids", "stderr-flood"])
async def test_noise_on_the_wire_is_survived(mode: str):
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("healthy"), chaos("noisy", mode, protocol="legacy"))) as station:
            [noisy] = [s for s in station.status().servers if s.name == "noisy"]
            assert noisy.state == "READY", noisy.error
            assert (await station.call_tool("mcp_noisy_ping_me", {})).text == "pong"
            assert len(noisy.stderr_tail) <= 20
            assert all(len(line) <= 2000 for line in noisy.stderr_tail)
            await healthy_neighbour_answers(station)


async def test_oversized_result_fails_with_a_clear_error_and_the_session_survives():
    settings = {"hard_max_result_bytes": 8 * 1024 * 1024}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(inproc("healthy"), chaos("big", "big-result", "--mb", "50"), **settings)) as station:
            result = await station.call_tool("mcp_big_big", {}, timeout_s=60)
            assert result.outcome is Outcome.TOO_LARGE and "message too large" in result.error
            assert (await station.call_tool("mcp_big_ping_me", {})).text == "pong"
            await healthy_neighbour_answers(station)


async def test_large_result_is_cut_with_head_tail_and_marker():
    with anyio.fail_after(START_TIMEOUT_S):
        spec = chaos("big", "big-result", "--mb", "1", max_result_bytes=4096)
        async with Station(config(spec)) as station:
            result = await station.call_tool("mcp_big_big", {})
            assert result.ok
            assert "bytes cut by mcpstation (max_result_bytes=4096)" in result.text
            assert result.text.startswith("xxx") and result.text.endswith("xxx")
            assert len(result.text.encode()) < 5000


async def test_notification_storm_costs_a_handful_of_list_requests():
    with anyio.fail_after(START_TIMEOUT_S):
        spec = chaos("stormy", "flood", "--count", "300", protocol="legacy")
        async with Station(config(inproc("healthy"), spec)) as station:
            before = int((await station.call_tool("mcp_stormy_list_count", {})).text)
            flooded = await station.call_tool("mcp_stormy_flood", {}, timeout_s=30)
            assert flooded.ok, flooded.error
            await healthy_neighbour_answers(station)
            await anyio.sleep(1.0)  # let the debounced refresh run
            after = int((await station.call_tool("mcp_stormy_list_count", {})).text)
            assert 1 <= after - before <= 5, f"{after - before} tools/list requests for 300 notifications"


@pytest.mark.parametrize("mode", ["grandchild", "escaped-grandchild", "ignore-sigterm"])
async def test_no_process_survives_the_station(mode: str, tmp_path: Path):
    pidfile = tmp_path / "child.pid"
    spec = chaos("leaky", mode, "--pidfile", str(pidfile))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("healthy"), spec)) as station:
            pids = [s.pid for s in station.status().servers]
            assert all(pids)
            if mode != "ignore-sigterm":
                pids.append(int(pidfile.read_text()))
            assert all(pid_alive(pid) for pid in pids)
    assert [pid for pid in pids if pid_alive(pid)] == []


async def test_stopping_many_servers_runs_concurrently():
    servers = [chaos(f"stubborn{i}", "ignore-sigterm") for i in range(4)]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(*servers)) as station:
            pids = [s.pid for s in station.status().servers]
            started = time.monotonic()
    elapsed = time.monotonic() - started
    assert not any(pid_alive(pid) for pid in pids)
    assert elapsed < 12, f"4 stubborn servers took {elapsed:.1f} s to stop: stops did not overlap"


async def test_unresponsive_server_is_found_by_the_health_check_and_recycled(monkeypatch: pytest.MonkeyPatch):
    # A stopped process heeds neither its stdin closing nor SIGTERM: only the last rung of the stop
    # ladder, SIGKILL, ends it. Shorter rungs reach it sooner; the ladder is the same.
    monkeypatch.setattr(_stdio, "STOP_GRACE_S", 0.3)
    monkeypatch.setattr(_stdio, "TERM_GRACE_S", 0.3)
    settings = {"health_interval_s": 0.3, "health_timeout_s": 0.5, **FAST_RESTARTS}
    with anyio.fail_after(START_TIMEOUT_S):
        # A fresh interpreter, not a fork of the tests' fork server: the process stopped is the server.
        frozen = demo("frozen", protocol="legacy", command=sys.executable)
        async with Station(config(inproc("healthy"), frozen, **settings)) as station:
            pid = station.connection("frozen").pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            try:
                await wait_state(station, "frozen", "BACKING_OFF", "STARTING", timeout_s=15)
                assert "health check failed" in (station.connection("frozen").error or "")
                assert not pid_alive(pid)  # killed while still stopped
                await healthy_neighbour_answers(station)
            finally:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGCONT)
            await wait_state(station, "frozen", "READY", timeout_s=30)
            assert station.connection("frozen").pid != pid


async def test_slow_call_does_not_block_fast_calls_on_the_same_session():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(demo("healthy"))) as station:
            finished: list[str] = []

            async def slow() -> None:
                assert (await station.call_tool("mcp_healthy_slow", {"seconds": 3})).ok
                finished.append("slow")

            async def fast(i: int) -> None:
                result = await station.call_tool("mcp_healthy_add", {"a": i, "b": i})
                assert result.structured == {"result": 2 * i}
                finished.append("fast")

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await anyio.sleep(0.2)
                for i in range(20):
                    tg.start_soon(fast, i)
            assert finished.index("slow") == len(finished) - 1


async def test_ten_thousand_tools_are_catalogued():
    settings = {"max_list_pages": 1000, "server_startup_timeout_s": 60, "startup_timeout_s": 60}
    with anyio.fail_after(START_TIMEOUT_S * 2):
        async with Station(config(paged("huge", "--tools", "10000", "--page-size", "500"), **settings)) as station:
            assert len(station.tools) == 10000
            assert (await station.call_tool("mcp_huge_t9999", {})).ok


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_http_demo(port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [interpreter(), "-m", "mcpstation.testing.demo_server", "--transport", "http", "--port", str(port)],
            stderr=sink,
        )
    deadline = time.monotonic() + 30
    while "listening on" not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline and process.poll() is None, log.read_text(errors="replace")
        time.sleep(0.05)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


async def test_http_session_lost_after_server_restart_is_reinitialized(tmp_path: Path):
    port = _free_port()
    server = _start_http_demo(port, tmp_path / "first.log")
    url = f"http://127.0.0.1:{port}/mcp"
    spec = {"name": "web", "transport": "http", "url": url, "protocol": "legacy"}
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config(spec, **FAST_RESTARTS)) as station:
                assert (await station.call_tool("mcp_web_add", {"a": 1, "b": 1})).ok
                _stop(server)
                server = _start_http_demo(port, tmp_path / "second.log")
                # The new server refuses the old session id: a request that never reached it is sent
                # again on a new session; if the station saw the old server go first, it says so.
                again = await station.call_tool("mcp_web_add", {"a": 2, "b": 2})
                if again.ok:
                    assert again.structured == {"result": 4}
                else:
                    assert again.outcome in (Outcome.CONNECTION_LOST, Outcome.UNAVAILABLE), again
                await wait_state(station, "web", "READY")
                await wait_until_ok(station, "mcp_web_add")
    finally:
        _stop(server)


async def wait_until_ok(station: Station, tool: str) -> None:
    with anyio.fail_after(20):
        for _ in range(200):
            if (await station.call_tool(tool, {"a": 3, "b": 3})).ok:
                return
            await anyio.sleep(0.1)
    raise AssertionError(f"{tool} never answered again")


async def test_reload_restarts_only_what_changed():
    first = config(demo("a"), demo("b"), demo("c"))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(first) as station:
            pids = {s.name: s.pid for s in station.status().servers}
            changed = config(demo("a"), demo("b", "--name", "bee"), demo("d"))
            report = await station.reload(changed)
            assert (report.added, report.removed, report.changed, report.unchanged) == (("d",), ("c",), ("b",), ("a",))
            after = {s.name: s for s in station.status().servers}
            assert after["a"].pid == pids["a"] and after["a"].state == "READY"
            assert after["b"].pid != pids["b"] and after["b"].server_name == "bee"
            assert after["d"].state == "READY"
            names = {t.name for t in station.tools}
            assert "mcp_d_add" in names and not any(n.startswith("mcp_c_") for n in names)
            assert not pid_alive(pids["c"])
            assert station.connection("a").state is ConnectionState.READY


@pytest.mark.parametrize(("protocol", "era"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_a_tool_added_at_run_time_reaches_the_catalog_in_both_eras(protocol: str, era: str):
    spec = demo("grow", "--registering", protocol=protocol)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(spec)) as station:
            assert station.connection("grow").protocol_version == era
            with station.events.subscribe() as events:
                assert (await station.call_tool("mcp_grow_register_tool", {"name": "fresh"})).ok
                async for event in events:
                    if event.kind == "catalog" and "mcp_grow_fresh" in station.catalog.tools:
                        break
            assert (await station.call_tool("mcp_grow_fresh", {})).text == "fresh"
