"""A call whose arguments its tool's schema rejects is refused before it reaches the server, saying what to fix."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from argument_server import build_argument_server
from gateway_helpers import CALL_TIMEOUT_S, http_gateway
from mcp.client import Client
from station_helpers import START_TIMEOUT_S, inproc

from mcpstation import Station, StationConfig
from mcpstation.outcomes import Outcome
from mcpstation.store import Store

pytestmark = pytest.mark.anyio


def config(received: list[tuple[str, dict[str, Any]]]) -> StationConfig:
    return StationConfig(servers=[inproc("s", server=build_argument_server(received))])


async def test_a_call_with_a_misspelt_and_a_mistyped_argument_is_refused_and_audited(tmp_path: Path):
    received: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(START_TIMEOUT_S):
        async with await Store.open(data_dir=tmp_path) as store:
            async with Station(config(received), store=store) as station:
                refused = await station.call_tool("mcp_s_send", {"mesage": "hi", "count": "3"})
                assert refused.outcome is Outcome.REFUSED and received == []
                text = refused.text
                assert "unknown argument 'mesage' (did you mean 'message'?)" in text
                assert "missing required argument 'message' (string)" in text
                assert '\'count\': "3" is not of type "integer"' in text
                assert "Expected arguments: message: string (required); count: integer; tags: array of string" in text
                assert refused.structured is not None
                assert (refused.structured["unknown"], refused.structured["missing"]) == (["mesage"], ["message"])

                nested = await station.call_tool("mcp_s_send", {"message": "hi", "tags": ["a", 2]})
                assert nested.outcome is Outcome.REFUSED and "'tags.1': 2 is not of type \"string\"" in nested.text

                fixed = await station.call_tool("mcp_s_send", {"message": "hi", "count": 3})
                assert fixed.ok and received == [("send", {"message": "hi", "count": 3})]
        async with await Store.open(data_dir=tmp_path) as store:
            outcomes = [call.outcome for call in reversed(await store.list_calls(limit=10))]
    assert outcomes == [Outcome.REFUSED, Outcome.REFUSED, Outcome.OK]


async def test_unknown_keys_are_named_even_where_the_schema_allows_extra_ones():
    received: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(received)) as station:
            typo = await station.call_tool("mcp_s_search", {"qeury": "cats"})
            assert typo.outcome is Outcome.REFUSED and received == []
            assert "unknown argument 'qeury' (did you mean 'query'?)" in typo.text
            extra = await station.call_tool("mcp_s_search", {"query": "cats", "page": 2})
            assert extra.ok and received == [("search", {"query": "cats", "page": 2})]


async def test_a_null_for_an_optional_key_counts_as_left_out_and_reaches_the_server_as_sent():
    received: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(received)) as station:
            optional = await station.call_tool("mcp_s_send", {"message": "hi", "count": None})
            assert optional.ok and received == [("send", {"message": "hi", "count": None})]
            required = await station.call_tool("mcp_s_send", {"message": None})
            assert required.outcome is Outcome.REFUSED and len(received) == 1
            assert "'message'" in required.text and "null" in required.text


async def test_a_schema_the_validator_cannot_use_never_blocks_a_call_and_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
):
    received: list[tuple[str, dict[str, Any]]] = []
    caplog.set_level(logging.WARNING, logger="mcpstation.pipeline.arguments")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config(received)) as station:
            for _ in range(3):
                assert (await station.call_tool("mcp_s_dialect", {"x": "not an integer"})).ok
                assert (await station.call_tool("mcp_s_invalid", {"x": 1})).ok
    assert len(received) == 6
    warnings = [r.getMessage() for r in caplog.records if "cannot be checked" in r.getMessage()]
    assert len(warnings) == 2, warnings
    assert any("'dialect'" in w and "private-dialect" in w for w in warnings)
    assert any("'invalid'" in w for w in warnings)


async def test_the_llm_behind_the_gateway_reads_what_to_fix_in_an_error_result():
    received: list[tuple[str, dict[str, Any]]] = []
    async with http_gateway(config(received)) as (_, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await client.call_tool("mcp_s_send", {"mesage": "hi"})
    assert result.is_error and received == []
    [block] = result.content
    assert isinstance(block, types.TextContent)
    assert "unknown argument 'mesage' (did you mean 'message'?)" in block.text
    assert "missing required argument 'message' (string)" in block.text
