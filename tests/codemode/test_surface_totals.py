"""The station's status and its start-up line count code mode: `mcp_run_code`, stubs and all, is what
the model is handed, so its tokens are the surface's."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from api_helpers import running_api
from codemode_helpers import code_config
from station_helpers import inproc

from mcpstation import Caller, Station
from mcpstation.catalog import estimate_tool_tokens, format_tokens
from mcpstation.cli._render import surface_line

pytestmark = pytest.mark.anyio

START_S = 30.0  # a station start on a loaded 2-core machine
LIBRARY = Caller.library()


async def test_code_mode_on_counts_mcp_run_code_with_its_stubs():
    with anyio.fail_after(START_S):
        async with Station(code_config(inproc("demo"))) as station:
            visible = station.requests.visible_tools(LIBRARY)
            [run_code] = station.tools_for(LIBRARY)
            totals = station.status().surface
    assert totals is not None and totals.code
    catalog_tokens = sum(estimate_tool_tokens(tool) for tool in visible)
    tokens = estimate_tool_tokens(run_code)
    assert (totals.tools, totals.tokens) == (1, tokens)
    assert totals.line() == (
        f"catalog: {len(visible)} tools (~{format_tokens(catalog_tokens)} tokens); "
        f"LLM surface with code mode: 1 tool (~{format_tokens(tokens)} tokens)"
    )
    shown = json.loads(json.dumps(totals.to_dict()))  # as `status --json` and the API carry it
    assert shown["code_mode"] == "on" and shown["code"] is True
    assert shown["with_code"] == {"tools": 1, "tokens": tokens}
    assert surface_line(shown) == totals.line()  # what `mcpstation status` prints from the JSON


async def test_with_tool_search_the_surface_is_the_meta_tools_and_mcp_run_code():
    with anyio.fail_after(START_S):
        async with Station(code_config(inproc("demo"), code_mode="auto", tool_search="on")) as station:
            handed = station.tools_for(LIBRARY)
            totals = station.status().surface
    assert [tool.name for tool in handed] == ["mcp_search_tools", "mcp_call_tool", "mcp_run_code"]
    assert totals is not None and totals.search and totals.code
    assert (totals.tools, totals.tokens) == (3, sum(estimate_tool_tokens(tool) for tool in handed))
    assert "; LLM surface with tool search and code mode: 3 tools (~" in totals.line()


async def test_code_mode_off_for_this_surface_leaves_the_line_as_it_was():
    with anyio.fail_after(START_S):
        async with Station(code_config(inproc("demo"), code_mode="auto", tool_search="off")) as station:
            visible = station.requests.visible_tools(LIBRARY)
            totals = station.status().surface
    assert totals is not None and not totals.code
    assert totals.to_dict()["with_code"] is None
    assert (totals.tools, totals.tokens) == (len(visible), totals.all_tokens)
    assert f"; LLM surface: {len(visible)} tools (~" in totals.line()


async def test_the_health_endpoint_reports_the_code_mode_surface(tmp_path: Path):
    with anyio.fail_after(START_S):
        async with running_api(tmp_path, [inproc("demo")], station_settings={"code_mode": "on"}) as api:
            [run_code] = api.station.tools_for(LIBRARY)
            async with api.client("admin") as client:
                reply = (await client.get("/api/health")).json()
    surface = reply["surface"]
    assert (surface["code"], surface["tools"], surface["tokens"]) == (True, 1, estimate_tool_tokens(run_code))
    assert surface["with_code"] == {"tools": 1, "tokens": estimate_tool_tokens(run_code)}
