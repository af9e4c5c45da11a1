"""The kinds table: every request kind has one row, and each part of the pipeline reads it."""

from __future__ import annotations

from dataclasses import replace

import mcp_types as types
import pytest

from mcpstation.catalog import Result, ToolResult
from mcpstation.config.models import Role, StationSettings, StdioServerSpec
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import (
    KINDS,
    Bounds,
    Caller,
    Face,
    Handler,
    Request,
    RequestKind,
    Router,
    Visibility,
    assemble,
)
from mcpstation.pipeline import kinds as kinds_module

pytestmark = pytest.mark.anyio

SPEC = StdioServerSpec(name="s", command="true", min_role=Role.ADMIN)
ADMIN = Caller("ops", Role.ADMIN, Face.HTTP_API)
USER = Caller("bot", Role.USER, Face.HTTP_API)


def request(kind: RequestKind, caller: Caller = ADMIN) -> Request:
    return Request(kind, "mcp_s_x", "s", "x", caller, {"q": "v"})


@pytest.mark.parametrize("kind", list(RequestKind))
def test_every_kind_has_a_row_whose_failures_are_its_result_type(kind: RequestKind):
    row = KINDS[kind]
    assert row.kind is kind
    failed = request(kind).fail(Outcome.UNAVAILABLE, "server 's' is not running")
    assert isinstance(failed, row.result) and not failed.ok
    assert failed.to_dict()["error"] == "server 's' is not running"
    assert row.not_found("x").startswith(f"no {row.noun} 'x'.")


def test_web_uris_are_url_candidates_only_for_kinds_whose_target_is_a_uri():
    for kind in RequestKind:
        web = replace(request(kind), target="https://example.org/page")
        assert ("https://example.org/page" in web.url_candidates()) is KINDS[kind].uri_target, kind


def _handler_answering(result: Result) -> Handler:
    async def answer(request: Request) -> Result:
        return result

    return answer


async def test_a_kind_the_station_answers_itself_passes_every_layer(monkeypatch: pytest.MonkeyPatch):
    """The path code mode takes: a row without `upstream`, its handler given to the `Router`."""
    local = replace(KINDS[RequestKind.CALL_TOOL], upstream=None)
    monkeypatch.setitem(kinds_module.KINDS, RequestKind.CALL_TOOL, local)  # type: ignore[index]
    settings = StationSettings(max_result_bytes=1024, hard_max_result_bytes=2048)
    huge = ToolResult(Outcome.OK, "mcp_s_x", "s", "x", (types.TextContent(type="text", text="y" * 5000),))
    small = ToolResult(Outcome.OK, "mcp_s_x", "s", "x", (types.TextContent(type="text", text="ran"),))

    def path(answer: Result | None) -> Handler:
        answers = {RequestKind.CALL_TOOL: _handler_answering(answer)} if answer is not None else {}
        return assemble(
            route=Router(lambda name: None, lambda name: None, answers=answers),
            visibility=Visibility({"s": SPEC}.get),
            bounds=Bounds(lambda: settings, lambda server: None),
        )

    assert (await path(small)(request(RequestKind.CALL_TOOL))) is small
    hidden = await path(small)(request(RequestKind.CALL_TOOL, USER))
    assert hidden.outcome is Outcome.NOT_FOUND and hidden.error == "no tool 'mcp_s_x'."
    too_large = await path(huge)(request(RequestKind.CALL_TOOL))
    assert too_large.outcome is Outcome.TOO_LARGE and isinstance(too_large, ToolResult)
    unanswered = await path(None)(request(RequestKind.CALL_TOOL))
    assert unanswered.outcome is Outcome.UNAVAILABLE
