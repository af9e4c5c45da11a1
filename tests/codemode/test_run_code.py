"""`mcp_run_code` end to end: a script over real servers, every call through the front door as the caller's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from codemode_helpers import MODEL, code_config
from outcome_server import build_outcome_server
from station_helpers import inproc

from mcpstation import Caller, Role, Station
from mcpstation.catalog import ToolResult
from mcpstation.codemode import EXCEPTIONS
from mcpstation.outcomes import Outcome
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

RUN_S = 60.0  # a station start plus a few sandbox runs on a loaded 2-core machine


async def run(station: Station, code: str, caller: Caller = MODEL) -> ToolResult:
    """The script as a model would send it: a call of the `mcp_run_code` tool."""
    return await station.call_tool("mcp_run_code", {"code": code}, caller=caller)


def called(result: ToolResult) -> list[tuple[str, str]]:
    assert result.structured is not None
    return [(call["tool"], call["outcome"]) for call in result.structured["calls"]]


async def test_a_script_chains_three_servers_one_of_them_remote_and_only_its_answer_comes_back(http_demo: str):
    servers = (inproc("alpha"), inproc("beta"), {"name": "remote", "transport": "http", "url": http_demo})
    code = """
import asyncio
total = (await mcp_alpha_add(a=2, b=3))["result"]
squares = await asyncio.gather(*[mcp_beta_multiply(a=n, b=n) for n in range(1, 4)])
said = await mcp_remote_echo(message=f"total {total}")
print("squares", [s["result"] for s in squares])
{"total": total, "squares": sum(s["result"] for s in squares), "said": said["result"]}
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(*servers)) as station:
            result = await run(station, code)
    assert result.ok, result.structured
    assert result.structured is not None
    assert result.structured["value"] == {"total": 5, "squares": 14.0, "said": "total 5"}
    assert result.structured["output"] == "squares [1.0, 4.0, 9.0]\n"
    assert called(result) == [
        ("mcp_alpha_add", "ok"),
        *[("mcp_beta_multiply", "ok")] * 3,
        ("mcp_remote_echo", "ok"),
    ]


async def test_the_model_is_handed_one_tool_whose_stubs_follow_the_schemas():
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"))) as station:
            [tool] = station.tools_for(MODEL)
            again = station.tools_for(MODEL)[0]
    assert tool.name == "mcp_run_code" and tool.server == "mcpstation"
    assert tool.description == again.description, "the same tools give the same description (prompt cache)"
    assert "async def mcp_demo_add(*, a: int, b: int) -> McpDemoAddResult:" in tool.description
    assert "async def mcp_demo_random_number(*, min: int = ..., max: int = ...)" in tool.description
    assert "class McpDemoAddResult(TypedDict):\n    result: int" in tool.description
    assert '"""mcp_demo_add (server demo): Add two integers."""' in tool.description


async def test_a_refused_call_raises_a_typed_error_the_script_catches_and_the_server_never_sees_it():
    opened: list[str] = []
    code = """
try:
    await mcp_o_open_page(url="http://127.0.0.1:9/admin")
    seen = "opened"
except PermissionError as error:
    seen = str(error)
seen
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("o", server=build_outcome_server(opened=opened), url_guard=True))) as st:
            result = await run(st, code)
    assert result.ok and result.structured is not None
    assert result.structured["value"].startswith("refused: ")
    assert called(result) == [("mcp_o_open_page", "refused")]
    assert opened == []


async def test_an_uncaught_refusal_fails_the_run_and_lists_the_calls_made():
    code = """
first = await mcp_o_ok()
await mcp_o_open_page(url="http://10.0.0.1/")
"never here"
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("o", server=build_outcome_server(), url_guard=True))) as station:
            result = await run(station, code)
    assert result.outcome is Outcome.TOOL_ERROR and result.structured is not None
    assert result.structured["ending"] == "raised"
    assert "PermissionError: refused:" in result.structured["error"]
    assert called(result) == [("mcp_o_ok", "ok"), ("mcp_o_open_page", "refused")]


async def test_a_hidden_tool_is_as_absent_to_a_script_as_a_name_nobody_has():
    servers = (inproc("open"), inproc("secret", min_role=Role.ADMIN))
    code = """
answers = []
for name in ["mcp_secret_add", "mcp_nobody_add"]:
    try:
        await call_tool(name, {"a": 1, "b": 2})
    except LookupError as error:
        answers.append(str(error))
answers
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(*servers)) as station:
            description = station.tools_for(MODEL)[0].description
            result = await run(station, code)
            admin = await run(station, 'await call_tool("mcp_secret_add", {"a": 1, "b": 2})', Caller.library())
    assert "mcp_secret_" not in description
    assert result.structured is not None
    hidden, absent = result.structured["value"]
    assert hidden == "not_found: no tool 'mcp_secret_add'." and absent.startswith("not_found: no tool 'mcp_nobody_add'")
    assert admin.ok and admin.structured is not None and admin.structured["value"] == {"result": 3}


async def test_the_type_check_refuses_a_bad_argument_or_key_with_zero_calls():
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"))) as station:
            wrong_type = await run(station, 'await mcp_demo_add(a="2", b=3)')
            wrong_key = await run(station, "await mcp_demo_add(a=2, c=3)")
            misspelt = await run(station, '(await mcp_demo_add(a=2, b=3))["reslt"]')
    for result in (wrong_type, wrong_key, misspelt):
        assert result.outcome is Outcome.TOOL_ERROR and result.structured is not None
        assert result.structured["ending"] == "rejected" and result.structured["calls"] == []
        assert "the type check refused the script" in result.structured["error"]
    assert "invalid-argument-type" in wrong_type.structured["error"]  # type: ignore[index]


async def test_results_reach_the_script_unwrapped_and_images_stay_objects():
    code = """
structured = await mcp_demo_structured()
image = await mcp_demo_get_image()
text = await mcp_o_ok()
{"structured": structured, "image": [image["type"], image["mimeType"]], "text": text}
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), inproc("o", server=build_outcome_server()))) as station:
            result = await run(station, code)
            direct = await station.call_tool("mcp_demo_structured", {}, caller=MODEL)
    assert result.ok and result.structured is not None
    assert result.structured["value"] == {
        "structured": direct.structured,
        "image": ["image", "image/png"],
        "text": "fine",
    }


async def test_every_failed_outcome_has_a_script_exception():
    failed = [outcome for outcome in Outcome if not outcome.ok]
    assert sorted(EXCEPTIONS) == sorted(failed)


async def test_a_script_cannot_call_the_meta_tools_or_itself():
    code = """
seen = []
for name in ["mcp_run_code", "mcp_search_tools", "mcp_call_tool"]:
    try:
        await call_tool(name, {"code": "1"})
    except LookupError as error:
        seen.append(name)
seen
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), tool_search="on")) as station:
            result = await run(station, code)
    assert result.structured is not None
    assert result.structured["value"] == ["mcp_run_code", "mcp_search_tools", "mcp_call_tool"]
    assert result.structured["calls"] == []


async def test_inner_calls_are_audited_as_the_callers_own_tool_calls(tmp_path: Path):
    code = "await mcp_demo_add(a=1, b=2)"
    with anyio.fail_after(RUN_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(code_config(inproc("demo")), store=store) as station:
                assert (await run(station, code)).ok
                assert (await station.call_tool("mcp_demo_add", {"a": 1, "b": 2}, caller=MODEL)).ok
        async with await Store.open(data_dir=tmp_path) as store:
            calls = list(reversed(await store.list_calls(limit=10)))

    def shape(call: Any) -> tuple[Any, ...]:
        return (call.kind, call.server, call.tool, call.caller, call.outcome, call.issuer, call.upstream)

    inner, whole, direct = calls  # the inner call ends first, then the run it belongs to
    assert (inner.via, direct.via, whole.via) == ("code", None, None)
    assert inner.run_id == whole.run_id is not None and direct.run_id is None
    assert shape(inner) == shape(direct) == ("tools/call", "demo", "add", "model", Outcome.OK, None, inner.upstream)
    assert shape(whole) == ("mcpstation/run_code", "mcpstation", "mcp_run_code", "model", Outcome.OK, None, None)


async def test_code_mode_off_leaves_the_tool_unanswered_but_the_library_may_still_run_code():
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), code_mode="off")) as station:
            assert "mcp_run_code" not in [tool.name for tool in station.tools_for(MODEL)]
            unknown = await run(station, "1")
            direct = await station.run_code("await mcp_demo_add(a=1, b=1)")
    assert unknown.outcome is Outcome.NOT_FOUND
    assert direct.ok and direct.structured is not None and direct.structured["value"] == {"result": 2}


async def test_auto_goes_with_tool_search_and_found_tools_are_callable_by_name():
    code = """
found = await search_tools("add two integers")
names = [hit["name"] for hit in found]
answer = await call_tool(names[0], {"a": 20, "b": 22})
[names[0], answer["result"]]
"""
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), code_mode="auto", tool_search="on")) as station:
            surface = [tool.name for tool in station.tools_for(MODEL)]
            description = station.tools_for(MODEL)[-1].description
            result = await run(station, code)
        async with Station(code_config(inproc("demo"), code_mode="auto", tool_search="off")) as station:
            plain = [tool.name for tool in station.tools_for(MODEL)]
    assert surface == ["mcp_search_tools", "mcp_call_tool", "mcp_run_code"]
    assert "async def search_tools(" in description and "async def mcp_demo_add" not in description
    assert "mcp_run_code" not in plain
    assert result.ok and result.structured is not None
    assert result.structured["value"] == ["mcp_demo_add", 42]


async def test_gathered_calls_run_at_once():
    """Four 1.5 s calls in a run allowed 4.5 s: done only if they overlap (one after another needs 6 s)."""
    code = "import asyncio\nlen(await asyncio.gather(*[mcp_demo_slow(seconds=1.5) for _ in range(4)]))"
    with anyio.fail_after(RUN_S):
        async with Station(code_config(inproc("demo"), timeout_s=4.5)) as station:
            result = await run(station, code)
    assert result.ok, result.structured
    assert result.structured is not None and result.structured["value"] == 4
