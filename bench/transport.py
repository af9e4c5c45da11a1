"""Row 7: our stdio transport against the SDK's `stdio_client`, both under a raw SDK `ClientSession`.

Only the transport differs between the two sides, so these rows isolate it: same session code,
same tiny stdlib server (`servers/tiny_server.py`), interleaved rounds. Also: a healthy server's
latency beside a flooding one in the same event loop (each transport against itself), and the peak
memory of receiving one 50 MiB line and a schema-bomb listing (`transport_probe.py`, one fresh
interpreter per side and case).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import anyio
import mcp_types as types
from harness import BENCH_DIR, CallTimes, calls_per_second, median, percentile, settle, time_sequential, tiny_params
from mcp import StdioServerParameters
from mcp.client import ClientSession
from mcp.client.stdio import stdio_client

from mcpstation.connection._stdio import stdio_transport
from mcpstation.testing import rogue_server_params

WARMUP_CALLS = 200
IN_FLIGHT = 64
NEIGHBOUR_CALLS = 200  # timed calls on the healthy server per block, idle and during the flood
FLOOD = 100_000_000  # notifications per flood: more than a block outlasts (it is stopped after each)
BIG_LINE_MB = 20  # the size transport_probe.py uses (over our 16 MiB cap; the SDK's reader is quadratic in it)

Opener = Callable[[StdioServerParameters], AbstractAsyncContextManager[Any]]
SIDES: dict[str, Opener] = {
    "sdk": lambda params: stdio_client(params),
    "ours": lambda params: stdio_transport(params, server="tiny"),
}


async def _session(stack: AsyncExitStack, opener: Opener, params: StdioServerParameters) -> ClientSession:
    """A raw SDK session over `opener`'s transport, initialized and listed, closed with `stack`."""
    read, write = await stack.enter_async_context(opener(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()
    return session


def _echo(session: ClientSession) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await session.call_tool("echo", {"message": "hi"})
        block = result.content[0]
        if result.is_error or not isinstance(block, types.TextContent) or block.text != "hi":
            raise RuntimeError(f"wrong result: {result!r}")  # zero wrong results, or no numbers

    return call


def _rotated(names: list[str], round_no: int) -> list[str]:
    shift = round_no % len(names)
    return [*names[shift:], *names[:shift]]


async def transport(plan: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        calls: dict[str, Callable[[], Awaitable[None]]] = {}
        for name, opener in SIDES.items():
            session = await _session(stack, opener, tiny_params())
            calls[name] = _echo(session)
        for call in calls.values():
            for _ in range(WARMUP_CALLS):
                await call()
        block = plan.latency_calls // plan.latency_rounds
        times = {name: CallTimes([]) for name in calls}
        rates: dict[str, list[float]] = {name: [] for name in calls}
        cpu: dict[str, list[float]] = {name: [] for name in calls}
        for round_no in range(max(plan.latency_rounds, plan.throughput_rounds)):
            for name in _rotated(list(calls), round_no):
                if round_no < plan.latency_rounds:
                    settle()
                    times[name].extend(await time_sequential(calls[name], block))
                if round_no < plan.throughput_rounds:
                    settle()
                    started = time.process_time()
                    rates[name].append(await calls_per_second(calls[name], plan.throughput_calls, IN_FLIGHT))
                    cpu[name].append((time.process_time() - started) / plan.throughput_calls)
    for name in SIDES:
        wall = times[name].wall_s
        results[name] = {
            "p50_s": percentile(wall, 50),
            "p99_s": percentile(wall, 99),
            "cpu_per_call_s": times[name].cpu_s / len(wall),
            "cpu_per_call_rounds": len(wall),
            "median_calls_per_s": median(rates[name]),
            "calls_per_s_rounds": rates[name],
            "median_cpu_per_call_in_flight_s": median(cpu[name]),
        }
    results["neighbour"] = {name: await _neighbour(opener, plan.throughput_rounds) for name, opener in SIDES.items()}
    results["memory"] = {
        case: {side: await _probe(side, case) for side in SIDES} for case in ("big_line", "schema_bombs")
    }
    return results


async def _neighbour(opener: Opener, rounds: int) -> dict[str, Any]:
    """p95 of a healthy server's calls idle and while a server beside it floods, in alternating rounds.

    One transport for both servers. Each round times one idle block and one block during a flood
    (started before and stopped after it), so drift on the machine lands on both; the row is the
    median over rounds of p95 during the flood / p95 idle.
    """
    ratios: list[float] = []
    idle_p95: list[float] = []
    flood_p95: list[float] = []
    async with AsyncExitStack() as stack:
        healthy = _echo(await _session(stack, opener, tiny_params()))
        flood_params = rogue_server_params("notification-flood", "--count", str(FLOOD))
        flooder = await _session(stack, opener, flood_params)
        for _ in range(WARMUP_CALLS):
            await healthy()
        for _ in range(rounds):
            settle()
            idle = percentile((await time_sequential(healthy, NEIGHBOUR_CALLS)).wall_s, 95)
            await flooder.call_tool("flood", {})
            during = percentile((await time_sequential(healthy, NEIGHBOUR_CALLS)).wall_s, 95)
            done = await flooder.call_tool("flood_done", {})
            if not (isinstance(done.content[0], types.TextContent) and done.content[0].text == "False"):
                raise RuntimeError("the flood ended before the timed calls did; raise FLOOD")
            await flooder.call_tool("stop_flood", {})
            idle_p95.append(idle)
            flood_p95.append(during)
            ratios.append(during / idle)
    return {"ratio": median(ratios), "ratios": ratios, "p95_idle_s": idle_p95, "p95_flood_s": flood_p95}


async def _probe(side: str, case: str) -> dict[str, Any]:
    command = [sys.executable, str(BENCH_DIR / "transport_probe.py"), side, case]
    done = await anyio.run_process(command, check=True)
    return dict(json.loads(done.stdout.decode().strip().splitlines()[-1]))
