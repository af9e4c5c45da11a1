"""Every limit of a run, tripped: the answer names it, lists the calls made, and the station stays healthy."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from codemode_helpers import MODEL, code_config
from station_helpers import inproc

from mcpstation import Station
from mcpstation.catalog import ToolResult
from mcpstation.codemode import Limit
from mcpstation.outcomes import Outcome

pytestmark = pytest.mark.anyio

RUN_S = 60.0


async def tripped(code: str, **limits: Any) -> tuple[ToolResult, ToolResult]:
    """The run's answer under `limits`, and a direct call made right after on the same station."""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), **limits)) as station:
            result = await station.call_tool("mcp_run_code", {"code": code}, caller=MODEL)
            after = await station.call_tool("mcp_demo_add", {"a": 1, "b": 1}, caller=MODEL)
    return result, after


def assert_limit(result: ToolResult, after: ToolResult, limit: Limit) -> dict[str, Any]:
    assert result.outcome is Outcome.TOOL_ERROR and result.structured is not None, result
    assert result.structured["ok"] is False
    assert result.structured["limit"] == limit, result.structured
    assert result.structured["ending"] == "limit"
    assert result.error == result.structured["error"] and "over its limit" in result.error
    assert after.ok, "the station serves on after a run hit its limit"
    return result.structured


async def test_the_wall_time_counts_tool_time():
    result, after = await tripped("await mcp_demo_slow(seconds=30)\n'done'", timeout_s=1.5)
    structured = assert_limit(result, after, Limit.WALL_TIME)
    [call] = structured["calls"]  # cut off by the run's deadline, or told the run's last seconds as its timeout
    assert call["tool"] == "mcp_demo_slow" and call["outcome"] in ("unfinished", "timeout")


async def test_the_wall_time_ends_a_script_busy_in_the_sandbox():
    result, after = await tripped("while True:\n    pass", timeout_s=1.0, cpu_s=30)
    assert_limit(result, after, Limit.WALL_TIME)


async def test_sandbox_cpu_time_ends_an_endless_loop():
    result, after = await tripped("n = 0\nwhile True:\n    n += 1", cpu_s=0.5, timeout_s=30)
    assert_limit(result, after, Limit.CPU_TIME)


async def test_a_script_cannot_catch_its_cpu_limit_and_run_on():
    code = """
while True:
    try:
        while True:
            pass
    except TimeoutError:
        pass
"""
    result, after = await tripped(code, cpu_s=0.5, timeout_s=20)
    assert result.structured is not None and result.structured["limit"] in (Limit.CPU_TIME, Limit.WALL_TIME)
    assert after.ok


async def test_memory():
    result, after = await tripped(
        "chunks = []\nwhile True:\n    chunks.append('x' * 100_000)", max_memory_bytes=8 << 20
    )
    assert_limit(result, after, Limit.MEMORY)


async def test_a_single_huge_allocation_is_refused_before_it_is_made():
    result, after = await tripped("len('x' * (10 ** 10))", max_memory_bytes=8 << 20)
    assert_limit(result, after, Limit.MEMORY)


async def test_recursion():
    result, after = await tripped("def down(n):\n    return down(n + 1)\ndown(0)", max_recursion_depth=50)
    assert_limit(result, after, Limit.RECURSION)


async def test_the_number_of_tool_calls_is_checked_before_each_is_dispatched():
    code = "for n in range(10):\n    await mcp_demo_add(a=n, b=n)"
    result, after = await tripped(code, max_tool_calls=3)
    structured = assert_limit(result, after, Limit.TOOL_CALLS)
    assert structured["calls"] == [{"tool": "mcp_demo_add", "outcome": "ok"}] * 3


async def test_a_caught_exception_does_not_let_a_script_past_its_call_budget():
    code = """
for n in range(10):
    try:
        await mcp_demo_add(a=n, b=n)
    except Exception:
        pass
"""
    result, after = await tripped(code, max_tool_calls=2)
    structured = assert_limit(result, after, Limit.TOOL_CALLS)
    assert len(structured["calls"]) == 2


async def test_the_bytes_of_results_taken_in():
    code = "for n in range(10):\n    await mcp_demo_echo(message='y' * 600)"
    result, after = await tripped(code, max_result_bytes=1024)
    structured = assert_limit(result, after, Limit.RESULT_BYTES)
    assert len(structured["calls"]) == 2, "the second result crosses 1024 bytes; no third call is made"


async def test_the_bytes_of_output_are_cut_and_the_run_says_so():
    result, after = await tripped("for n in range(1000):\n    print('line', n)", max_output_bytes=256)
    structured = assert_limit(result, after, Limit.OUTPUT_BYTES)
    assert 0 < len(structured["output"].encode()) <= 256 and structured["output"].startswith("line 0\n")


async def test_a_final_value_over_the_output_limit():
    result, after = await tripped("'z' * 5000", max_output_bytes=256)
    structured = assert_limit(result, after, Limit.OUTPUT_BYTES)
    assert structured["value"] is None
