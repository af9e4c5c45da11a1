"""Every way a request can end is a typed outcome, and the audit trail records that outcome."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from outcome_server import build_outcome_server
from station_helpers import START_TIMEOUT_S, chaos, inproc

from mcpstation import Station, StationConfig
from mcpstation.outcomes import Outcome
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


def config(*servers: object, **station: object) -> StationConfig:
    return StationConfig(
        servers=servers, station={"hard_max_result_bytes": 1024, "server_startup_timeout_s": 60, **station}
    )


async def test_every_failure_kind_is_its_own_outcome_and_is_audited_so(tmp_path: Path):
    servers = (
        inproc("o", server=build_outcome_server(), url_guard=True),
        {"name": "gone", "command": "no-such-mcp-server-binary"},
    )
    expected: list[tuple[str, Outcome]] = []
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(config(*servers), store=store) as station:

                async def check(tool: str, outcome: Outcome, **options: object) -> None:
                    result = await station.call_tool(f"mcp_o_{tool}", {}, **options)  # type: ignore[arg-type]
                    assert result.outcome is outcome, (tool, result)
                    assert result.ok is (outcome is Outcome.OK)
                    expected.append((tool, outcome))

                await check("ok", Outcome.OK)
                await check("says_no", Outcome.OK)  # its own `success: false` is data, not a refusal
                await check("tool_error", Outcome.TOOL_ERROR)
                await check("rpc_error", Outcome.REMOTE_ERROR)
                await check("invalid", Outcome.INVALID_RESULT)
                await check("big", Outcome.TOO_LARGE)
                await check("slow", Outcome.TIMEOUT, timeout_s=0.5)
                refused = await station.call_tool("mcp_o_open_page", {"url": "http://127.0.0.1:9/"})
                assert refused.outcome is Outcome.REFUSED and refused.structured == {
                    "success": False,
                    "error": refused.error,
                }
                expected.append(("open_page", Outcome.REFUSED))
                with anyio.move_on_after(0.5):
                    await station.call_tool("mcp_o_slow", {})
                expected.append(("slow", Outcome.CANCELLED))
                unknown = await station.call_tool("mcp_o_nope", {})
                assert unknown.outcome is Outcome.NOT_FOUND
                down = await station.call_tool("mcp_gone_anything", {})
                assert down.outcome is Outcome.UNAVAILABLE and "'gone'" in (down.error or "")
                assert "mcp_o_" not in (down.error or ""), "a down server's tool is never another server's"
        async with await Store.open(data_dir=tmp_path) as store:
            audited = [(c.tool, c.outcome) for c in reversed(await store.list_calls(limit=100))]
    assert audited == expected


async def test_a_server_that_dies_mid_call_is_connection_lost_and_audited_so(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(config(chaos("c", "crash-on-call")), store=store) as station:
                result = await station.call_tool("mcp_c_boom", {})
                assert result.outcome is Outcome.CONNECTION_LOST
        async with await Store.open(data_dir=tmp_path) as store:
            [call] = await store.list_calls()
            assert (call.tool, call.outcome, call.kind) == ("boom", Outcome.CONNECTION_LOST, "tools/call")


async def test_prompts_resources_and_completions_carry_outcomes_too(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(config(inproc("d")), store=store) as station:
                assert (await station.get_prompt("mcp_d_greet", {"name": "Ada"})).outcome is Outcome.OK
                assert (await station.get_prompt("mcp_nope")).outcome is Outcome.NOT_FOUND  # no server's prefix
                missing = await station.get_prompt("mcp_d_greet", {})
                assert missing.outcome is Outcome.REMOTE_ERROR and missing.upstream_error is not None
                assert (await station.read_resource("demo://readme")).outcome is Outcome.OK
                assert (await station.read_resource("demo://notes/1")).outcome is Outcome.OK
        async with await Store.open(data_dir=tmp_path) as store:
            kinds = [(c.kind, c.outcome) for c in reversed(await store.list_calls())]
    assert kinds == [
        ("prompts/get", Outcome.OK),
        ("prompts/get", Outcome.REMOTE_ERROR),
        ("resources/read", Outcome.OK),
        ("resources/read", Outcome.OK),
    ]


def test_outcome_tables_of_every_face_cover_every_outcome():
    from mcpstation.api.errors import OUTCOME_STATUS, OUTCOME_TYPE
    from mcpstation.cli._exits import OUTCOME_EXIT
    from mcpstation.gateway.server import OUTCOME_CODES

    for table in (OUTCOME_STATUS, OUTCOME_TYPE, OUTCOME_EXIT, OUTCOME_CODES):
        assert set(table) == set(Outcome)
    assert OUTCOME_EXIT[Outcome.OK] == 0
    assert all(code != 0 for outcome, code in OUTCOME_EXIT.items() if outcome is not Outcome.OK)
