"""The confirm tier on a direct call: the caller is asked, and only a yes reaches the server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from outcome_server import build_outcome_server
from station_helpers import inproc

from mcpstation import Caller, Face, Role, Station, StationConfig
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Question

pytestmark = pytest.mark.anyio

RUN_S = 30.0  # a station start and a few calls on a loaded 2-core machine
MODEL = Caller("model", Role.USER, Face.LLM)
PAGE = "https://example.com/"


def config(*, timeout_s: float = 120.0, **server: Any) -> tuple[StationConfig, list[str]]:
    """One outcome server 'o' whose `open_page` needs confirmation; the URLs it was really asked to open."""
    opened: list[str] = []
    spec = inproc("o", server=build_outcome_server(opened=opened), **server)
    policy = {"confirm_tools": ["o/open_*", "elsewhere/*"], "confirm_timeout_s": timeout_s}
    return StationConfig(servers=(spec,), policy=policy), opened


class Person:
    """Answers each question with `answer`, keeping what it was asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[Question] = []

    async def __call__(self, question: Question) -> bool:
        self.asked.append(question)
        return self.answer


async def test_a_yes_runs_the_call_and_the_question_names_the_call_and_its_caller():
    cfg, opened = config()
    person = Person(True)
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_o_open_page", {"url": PAGE}, caller=MODEL, ask=person)
            plain = await station.call_tool("mcp_o_ok", {}, caller=MODEL, ask=person)
    assert result.ok and result.text == f"opened {PAGE}"
    assert plain.ok
    [question] = person.asked  # `ok` is not on the list: nobody was asked about it
    assert (question.name, question.server, question.tool, question.caller) == (
        "mcp_o_open_page",
        "o",
        "open_page",
        MODEL,
    )
    assert question.text() == f"Run 'mcp_o_open_page' (server 'o') for llm:model with {{\"url\": \"{PAGE}\"}}?"
    assert opened == [PAGE]


async def test_a_no_refuses_the_call_and_the_server_never_sees_it():
    cfg, opened = config()
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_o_open_page", {"url": PAGE}, caller=MODEL, ask=Person(False))
    assert result.outcome is Outcome.REFUSED and result.structured is not None
    assert result.structured["confirmation"] == "denied"
    assert "declined" in (result.error or "")
    assert opened == []


async def test_a_caller_that_cannot_be_asked_is_refused_with_what_to_do():
    cfg, opened = config()
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_o_open_page", {"url": PAGE}, caller=MODEL)
    assert result.outcome is Outcome.REFUSED and result.structured is not None
    assert result.structured["confirmation"] == "unaskable"
    assert "Fix:" in (result.error or "")
    assert opened == []


async def test_no_answer_in_time_refuses_the_call():
    cfg, opened = config(timeout_s=0.2)

    async def never(question: Question) -> bool:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool("mcp_o_open_page", {"url": PAGE}, caller=MODEL, ask=never)
    assert result.outcome is Outcome.REFUSED and result.structured is not None
    assert result.structured["confirmation"] == "unanswered"
    assert opened == []


async def test_nobody_is_asked_about_a_call_the_url_guard_refuses_anyway():
    cfg, opened = config(url_guard=True)
    person = Person(True)
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            result = await station.call_tool(
                "mcp_o_open_page", {"url": "http://127.0.0.1:9/"}, caller=MODEL, ask=person
            )
    assert result.outcome is Outcome.REFUSED
    assert result.structured is not None and "confirmation" not in result.structured
    assert person.asked == [] and opened == []


async def test_a_call_through_the_search_meta_tool_is_asked_about_as_its_target():
    cfg, opened = config()
    cfg = cfg.model_copy(update={"station": cfg.station.model_copy(update={"tool_search": "on"})})
    person = Person(False)
    with anyio.fail_after(RUN_S):
        async with Station(cfg) as station:
            arguments = {"name": "mcp_o_open_page", "arguments": {"url": PAGE}}
            result = await station.call_tool("mcp_call_tool", arguments, caller=MODEL, ask=person)
    assert result.outcome is Outcome.REFUSED
    assert [q.name for q in person.asked] == ["mcp_o_open_page"]
    assert opened == []
