"""A script's call of a confirm-tier tool: the run pauses at it, the caller is asked as for a direct call,
and the script resumes with the answer: the result on a yes, a `PermissionError` it may catch on a no."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from codemode_helpers import MODEL, code_config
from outcome_server import build_outcome_server
from station_helpers import inproc

from mcpstation import Station, StationConfig
from mcpstation.catalog import ToolResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Question, Via
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

RUN_S = 60.0  # a station start plus a sandbox run on a loaded 2-core machine
A, B = "https://example.com/a", "https://example.com/b"


def confirming(**limits: Any) -> tuple[StationConfig, list[str]]:
    """Code mode over outcome server 'o', whose `open_page` needs confirmation; the URLs really opened."""
    opened: list[str] = []
    cfg = code_config(inproc("o", server=build_outcome_server(opened=opened)), **limits)
    return cfg.model_copy(update={"policy": cfg.policy.model_copy(update={"confirm_tools": ("o/open_page",)})}), opened


def calls(result: ToolResult) -> list[tuple[str, str]]:
    assert result.structured is not None
    return [(call["tool"], call["outcome"]) for call in result.structured["calls"]]


async def test_the_run_pauses_at_each_call_until_a_yes_and_resumes_with_its_result():
    cfg, opened = confirming(timeout_s=3.0)
    asked: list[tuple[Question, list[str]]] = []

    async def person(question: Question) -> bool:
        asked.append((question, list(opened)))
        await anyio.sleep(2.0)  # two answers take longer than the run's whole wall time: its clock stands still
        return True

    code = f"""
import asyncio
pages = await asyncio.gather(mcp_o_open_page(url="{A}"), call_tool("mcp_o_open_page", {{"url": "{B}"}}))
pages
"""
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_run_code", {"code": code}, caller=MODEL, ask=person)
    assert result.ok, result.structured
    assert result.structured is not None and result.structured["value"] == [f"opened {A}", f"opened {B}"]
    # Paused at the first call: the second was not even made until the first was answered and done.
    assert [(q.arguments["url"], seen) for q, seen in asked] == [(A, []), (B, [A])]
    first = asked[0][0]
    assert (first.via, first.run_id, first.caller) == (Via.CODE, result.structured["run"], MODEL)
    assert f"from code-mode run {first.run_id}" in first.text()
    assert opened == [A, B]


async def test_a_no_raises_a_permission_error_the_script_catches():
    cfg, opened = confirming()

    async def person(question: Question) -> bool:
        return False

    code = f"""
try:
    await mcp_o_open_page(url="{A}")
    said = "opened"
except PermissionError as error:
    said = str(error)
after = await mcp_o_ok()
[said, after]
"""
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.run_code(code, caller=MODEL, ask=person)
    assert result.ok and result.structured is not None
    said, after = result.structured["value"]
    assert said.startswith("refused: ") and "declined" in said
    assert after == "fine"
    assert calls(result) == [("mcp_o_open_page", "refused"), ("mcp_o_ok", "ok")]
    assert opened == []


async def test_with_no_way_to_ask_the_call_is_refused_not_dropped():
    cfg, opened = confirming()
    code = f'await mcp_o_open_page(url="{A}")\n"never here"'
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_run_code", {"code": code}, caller=MODEL)
    assert result.outcome is Outcome.TOOL_ERROR and result.structured is not None
    assert result.structured["ending"] == "raised"
    assert "PermissionError: refused:" in result.structured["error"]
    assert "cannot be asked" in result.structured["error"]
    assert calls(result) == [("mcp_o_open_page", "refused")]
    assert opened == []


async def test_a_confirmed_call_is_audited_like_the_direct_one_but_for_via(tmp_path: Path):
    cfg, opened = confirming()

    async def person(question: Question) -> bool:
        return True

    with anyio.fail_after(RUN_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(cfg, store=store) as station:
                assert (await station.run_code(f'await mcp_o_open_page(url="{A}")', caller=MODEL, ask=person)).ok
                assert (await station.call_tool("mcp_o_open_page", {"url": A}, caller=MODEL, ask=person)).ok
        async with await Store.open(data_dir=tmp_path) as store:
            records = list(reversed(await store.list_calls(limit=10)))

    def shape(call: Any) -> tuple[Any, ...]:
        return (call.kind, call.server, call.tool, call.caller, call.outcome, call.issuer, call.upstream)

    inner, whole, direct = records
    assert (inner.via, whole.via, direct.via) == ("code", None, None)
    assert inner.run_id == whole.run_id is not None and direct.run_id is None
    assert shape(inner) == shape(direct) == ("tools/call", "o", "open_page", "model", Outcome.OK, None, inner.upstream)
    assert opened == [A, A]


async def test_runs_waiting_for_a_person_hold_no_sandbox_worker():
    """Two workers, three runs paused for an answer at once, and a fourth runs meanwhile: a paused
    run's state is dumped and its worker given back; each resumes on whichever worker is free."""
    c = "https://example.com/c"
    cfg, opened = confirming(workers=2)
    asked: list[Question] = []
    all_paused, answer = anyio.Event(), anyio.Event()

    async def person(question: Question) -> bool:
        asked.append(question)
        if len(asked) == 3:
            all_paused.set()
        await answer.wait()
        return question.arguments["url"] != c

    def script(url: str) -> str:
        return f"""
squares = [i * i for i in range(4)]
try:
    page = await mcp_o_open_page(url="{url}")
except PermissionError as error:
    page = str(error)
[squares, page]
"""

    results: dict[str, ToolResult] = {}
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:

            async def run(url: str) -> None:
                results[url] = await station.run_code(script(url), caller=MODEL, ask=person)

            async with anyio.create_task_group() as runs:
                for url in (A, B, c):
                    runs.start_soon(run, url)
                await all_paused.wait()  # a run holding its worker while paused would leave the third unstarted
                free = await station.run_code("sum(range(10))", caller=MODEL)
                assert free.ok and free.structured is not None and free.structured["value"] == 45
                assert opened == [] and not results
                answer.set()
    assert sorted(q.arguments["url"] for q in asked) == [A, B, c]
    for url in (A, B):
        assert results[url].ok and results[url].structured is not None
        assert results[url].structured["value"] == [[0, 1, 4, 9], f"opened {url}"]
    refused = results[c].structured
    assert results[c].ok and refused is not None
    squares, said = refused["value"]
    assert squares == [0, 1, 4, 9] and said.startswith("refused: ") and "declined" in said
    assert sorted(opened) == [A, B]


async def test_the_cpu_limit_holds_across_a_pause():
    """The sandbox's CPU clock travels with the dumped state: 1.2 s before the pause and 1.2 s after
    it trip a 2 s limit, though neither half would alone."""
    cfg, opened = confirming(cpu_s=2.0)

    async def person(question: Question) -> bool:
        return True

    code = f"""
import time
def spin(seconds):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        pass
spin(1.2)
await mcp_o_open_page(url="{A}")
spin(1.2)
"never here"
"""
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.run_code(code, caller=MODEL, ask=person)
    assert result.structured is not None and not result.ok
    assert (result.structured["ending"], result.structured["limit"]) == ("limit", "cpu_time")
    assert calls(result) == [("mcp_o_open_page", "ok")]
    assert opened == [A]
