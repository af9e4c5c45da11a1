"""A recorded Anthropic message with parallel tool_use blocks runs against real servers, no network."""

from __future__ import annotations

import base64
import copy

import pytest
from integration_helpers import ADMIN, RED_SQUARE_PNG, payload, running_station

from mcpstation.catalog import anthropic_tools
from mcpstation.errors import UsageError
from mcpstation.integrations import anthropic as station_anthropic
from mcpstation.integrations import llm_caller

pytestmark = pytest.mark.anyio

MESSAGE = "anthropic_tool_use.json"


async def test_tools_are_the_messages_api_shape_for_what_the_caller_may_see():
    async with running_station() as station:
        tools = station_anthropic.tools(station)
        expected = anthropic_tools(station.tools_for(llm_caller("anthropic")))
        admin = station_anthropic.tools(station, caller=ADMIN)

    assert tools == expected
    add = next(t for t in tools if t["name"] == "mcp_demo_add")
    assert add["description"] == "Add two integers." and add["input_schema"]["required"] == ["a", "b"]
    assert not any(t["name"].startswith("mcp_secret_") for t in tools)
    assert any(t["name"] == "mcp_secret_add" for t in admin)


async def test_tool_use_blocks_become_tool_results_with_images_as_image_blocks_and_errors_flagged():
    message = payload(MESSAGE)
    async with running_station() as station:
        results = await station_anthropic.run_tool_uses(station, message)

    uses = [block for block in message["content"] if block["type"] == "tool_use"]
    assert [r["type"] for r in results] == ["tool_result"] * len(uses)
    assert [r["tool_use_id"] for r in results] == [use["id"] for use in uses]
    add, image, fail, audio, link = results
    assert add == {"type": "tool_result", "tool_use_id": uses[0]["id"], "content": [{"type": "text", "text": "5"}]}
    assert image["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(RED_SQUARE_PNG).decode()},
        }
    ]
    assert "is_error" not in image
    assert fail["is_error"] is True
    assert fail["content"] == [{"type": "text", "text": "Error executing tool fail: the disk is full"}]
    [described] = audio["content"]
    assert described["type"] == "text" and described["text"].startswith("[audio: audio/wav")
    [linked] = link["content"]
    assert linked["type"] == "text" and "demo://readme" in linked["text"]


async def test_the_content_list_and_the_sdk_message_give_the_same_results():
    anthropic_types = pytest.importorskip("anthropic.types")
    message = payload(MESSAGE)
    sdk_message = anthropic_types.Message.model_validate(message)
    async with running_station() as station:
        from_dict = await station_anthropic.run_tool_uses(station, message)
        from_blocks = await station_anthropic.run_tool_uses(station, message["content"])
        from_sdk = await station_anthropic.run_tool_uses(station, sdk_message)
        from_sdk_blocks = await station_anthropic.run_tool_uses(station, sdk_message.content)

    assert from_dict == from_blocks == from_sdk == from_sdk_blocks


async def test_a_user_caller_cannot_call_an_admin_only_server():
    message = copy.deepcopy(payload(MESSAGE))
    message["content"][1].update(name="mcp_secret_add", input={"a": 1, "b": 2})
    async with running_station() as station:
        as_model = await station_anthropic.run_tool_uses(station, message)  # the default caller, role user
        as_admin = await station_anthropic.run_tool_uses(station, message, caller=ADMIN)

    assert as_model[0]["is_error"] is True
    assert as_model[0]["content"] == [{"type": "text", "text": "no tool 'mcp_secret_add'."}]
    assert as_admin[0]["content"] == [{"type": "text", "text": "3"}] and "is_error" not in as_admin[0]


async def test_input_that_is_not_an_object_is_answered_and_a_foreign_payload_is_a_clear_error():
    message = copy.deepcopy(payload(MESSAGE))
    message["content"][1]["input"] = [2, 3]
    async with running_station() as station:
        results = await station_anthropic.run_tool_uses(station, message)
        assert await station_anthropic.run_tool_uses(station, [{"type": "text", "text": "Hello!"}]) == []
        with pytest.raises(UsageError, match="content blocks must be a list"):
            await station_anthropic.run_tool_uses(station, "tool_use")
        with pytest.raises(UsageError, match="needs a string 'id' and 'name'"):
            await station_anthropic.run_tool_uses(station, [{"type": "tool_use", "input": {}}])

    assert results[0]["is_error"] is True and "are a JSON list, not an object" in results[0]["content"][0]["text"]


async def test_strict_tools_carry_strict_and_closed_schemas_within_the_budget():
    async with running_station() as station:
        tools = station_anthropic.tools(station, strict=True)

    add = next(t for t in tools if t["name"] == "mcp_demo_add")
    assert add["strict"] is True
    assert add["input_schema"]["additionalProperties"] is False
    assert add["input_schema"]["required"] == ["a", "b"]  # optional properties stay optional
    randoms = next(t for t in tools if t["name"] == "mcp_demo_random_number")
    assert randoms["input_schema"].get("required", []) == []
    assert sum(1 for t in tools if t.get("strict")) <= 20
