"""Code mode through the faces: the gateway's MCP clients see and call `mcp_run_code` as their own caller."""

from __future__ import annotations

import json

import anyio
import pytest
from codemode_helpers import code_config
from gateway_helpers import CALL_TIMEOUT_S, http_gateway
from mcp.client import Client
from station_helpers import inproc

from mcpstation import Caller, Face, Role, Station
from mcpstation.integrations import openai as openai_face

pytestmark = pytest.mark.anyio

BOT = Caller.token("ci-bot", Role.USER, Face.GATEWAY)


async def test_a_gateway_client_lists_one_tool_and_runs_a_script_as_its_own_caller():
    servers = (inproc("demo"), inproc("secret", min_role=Role.ADMIN))
    code = """
total = 0
for n in range(1, 5):
    total += (await mcp_demo_add(a=total, b=n))["result"]
try:
    await call_tool("mcp_secret_add", {"a": 1, "b": 1})
    hidden = "reached"
except LookupError:
    hidden = "hidden"
[total, hidden]
"""
    async with http_gateway(code_config(*servers), caller=BOT) as (_, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            [tool] = (await client.list_tools()).tools
            assert tool.name == "mcp_run_code" and "async def mcp_demo_add" in (tool.description or "")
            assert "mcp_secret" not in (tool.description or "")
            result = await client.call_tool("mcp_run_code", {"code": code})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    assert result.structured_content["value"] == [26, "hidden"]
    assert [call["outcome"] for call in result.structured_content["calls"]] == ["ok"] * 4 + ["not_found"]


async def test_the_openai_export_hands_mcp_run_code_and_runs_the_models_call():
    code = "(await mcp_demo_multiply(a=6, b=7))['result']"
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "mcp_run_code", "arguments": json.dumps({"code": code})},
            }
        ],
    }
    with anyio.fail_after(CALL_TIMEOUT_S):
        async with Station(code_config(inproc("demo"))) as station:
            exported = openai_face.tools(station, caller=BOT)
            [answer] = await openai_face.run_tool_calls(station, message, caller=BOT)
    assert [tool["function"]["name"] for tool in exported] == ["mcp_run_code"]
    assert "async def mcp_demo_multiply" in exported[0]["function"]["description"]
    assert answer["tool_call_id"] == "c1" and json.loads(answer["content"])["value"] == 42.0
