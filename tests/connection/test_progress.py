"""A request's progress reports reach its caller in order, all before its answer."""

from __future__ import annotations

import anyio
import pytest

from mcpstation import Station, StationConfig
from mcpstation.config.models import InProcessServerSpec
from mcpstation.testing.demo_server import PROGRESS_STEPS, build_demo_server

pytestmark = pytest.mark.anyio


async def test_a_slow_progress_callback_still_sees_every_report_in_order_before_the_answer() -> None:
    handled: list[float] = []

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        # The first report takes longest to pass on: unordered, later ones would overtake it,
        # and the answer would come back while it is still being handled.
        await anyio.sleep(0.02 * (PROGRESS_STEPS - progress))
        handled.append(progress)

    config = StationConfig(servers=[InProcessServerSpec(name="demo", server=build_demo_server())])
    with anyio.fail_after(30):
        async with Station(config) as station:
            result = await station.call_tool("mcp_demo_slow", {"seconds": 0.04}, progress=relay)
            assert result.ok
            assert handled == [float(step) for step in range(1, PROGRESS_STEPS + 1)]
