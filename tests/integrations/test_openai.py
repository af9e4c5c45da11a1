"""Recorded OpenAI payloads (Chat Completions and Responses, parallel calls) run against real servers, no network."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from integration_helpers import ADMIN, BEEP_WAV, RED_SQUARE_PNG, USER, payload, running_station

from mcpstation.catalog import openai_tools
from mcpstation.errors import UsageError
from mcpstation.integrations import llm_caller
from mcpstation.integrations import openai as station_openai

pytestmark = pytest.mark.anyio

CHAT = "chat_completion_tool_calls.json"
RESPONSES = "responses_function_calls.json"
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(RED_SQUARE_PNG).decode()


def _chat_calls(completion: dict[str, Any]) -> list[dict[str, Any]]:
    return completion["choices"][0]["message"]["tool_calls"]


def _with_call(completion: dict[str, Any], name: str, arguments: str) -> dict[str, Any]:
    """The recorded completion with its first tool call changed to `name(arguments)`."""
    changed = copy.deepcopy(completion)
    _chat_calls(changed)[0]["function"] = {"name": name, "arguments": arguments}
    return changed


async def test_tools_come_in_both_api_shapes_for_what_the_caller_may_see():
    async with running_station() as station:
        chat = station_openai.tools(station)
        responses = station_openai.tools(station, api="responses")
        visible = station.tools_for(llm_caller("openai"))
        admin = station_openai.tools(station, caller=ADMIN)
        with pytest.raises(UsageError, match="'chat' or 'responses'"):
            station_openai.tools(station, api="assistants")  # type: ignore[arg-type]

    assert chat == openai_tools(visible)
    assert [t["function"]["name"] for t in chat] == [t["name"] for t in responses]
    add = next(t for t in responses if t["name"] == "mcp_demo_add")
    assert add == {
        "type": "function",
        "name": "mcp_demo_add",
        "description": "Add two integers.",
        "parameters": next(t for t in chat if t["function"]["name"] == "mcp_demo_add")["function"]["parameters"],
        "strict": False,
    }
    assert not any(t["function"]["name"].startswith("mcp_secret_") for t in chat)
    assert any(t["function"]["name"] == "mcp_secret_add" for t in admin)


async def test_chat_completion_tool_calls_become_tool_messages_with_media_after_them():
    completion = payload(CHAT)
    async with running_station() as station:
        messages = await station_openai.run_tool_calls(station, completion)

    ids = [call["id"] for call in _chat_calls(completion)]
    tool_messages, [media] = messages[: len(ids)], messages[len(ids) :]
    assert [m["role"] for m in tool_messages] == ["tool"] * len(ids)
    assert [m["tool_call_id"] for m in tool_messages] == ids  # the calls' order, though they ran concurrently
    add, image, fail, audio, structured = (m["content"] for m in tool_messages)
    assert add == "5"
    assert image.startswith("[image: image/png")  # a tool message is text only: described here, sent below
    assert fail.startswith("Error: ") and "the disk is full" in fail
    assert audio.startswith("[audio: audio/wav")
    assert json.loads(structured) == {"sensor": "demo-1", "celsius": 21.5, "ok": True}
    assert media["role"] == "user"
    parts = media["content"]
    assert parts[0] == {"type": "text", "text": f"Media returned by tool call {ids[1]} (mcp_demo_get_image):"}
    assert parts[1] == {"type": "image_url", "image_url": {"url": PNG_DATA_URL}}
    assert parts[2]["text"] == f"Media returned by tool call {ids[3]} (mcp_demo_get_audio):"
    assert parts[3]["type"] == "input_audio" and parts[3]["input_audio"]["format"] == "wav"
    assert base64.b64decode(parts[3]["input_audio"]["data"]) == BEEP_WAV


async def test_chat_accepts_the_message_alone_the_sdk_objects_and_no_media_message():
    openai_types = pytest.importorskip("openai.types.chat")
    completion = payload(CHAT)
    sdk_completion = openai_types.ChatCompletion.model_validate(completion)
    async with running_station() as station:
        from_dict = await station_openai.run_tool_calls(station, completion)
        from_message = await station_openai.run_tool_calls(station, completion["choices"][0]["message"])
        from_sdk = await station_openai.run_tool_calls(station, sdk_completion)
        from_sdk_message = await station_openai.run_tool_calls(station, sdk_completion.choices[0].message)
        text_only = await station_openai.run_tool_calls(station, completion, attach_media=False)

    assert from_dict == from_message == from_sdk == from_sdk_message
    assert text_only == from_dict[:-1] and all(m["role"] == "tool" for m in text_only)


async def test_responses_function_calls_become_function_call_outputs_with_images_inside():
    response = payload(RESPONSES)
    async with running_station() as station:
        items = await station_openai.run_tool_calls(station, response)

    calls = [item for item in response["output"] if item["type"] == "function_call"]
    assert [item["type"] for item in items] == ["function_call_output"] * len(calls)
    assert [item["call_id"] for item in items] == [call["call_id"] for call in calls]  # the slow one first
    slow, add, image, fail, embedded = (item["output"] for item in items)
    assert slow == "slept 0.2 s"
    assert add == "5"
    assert image == [{"type": "input_image", "image_url": PNG_DATA_URL}]
    assert fail.startswith("Error: ") and "the disk is full" in fail
    assert "demo://notes/1" in embedded and "first note" in embedded


async def test_responses_accepts_the_output_items_and_the_sdk_objects():
    responses_types = pytest.importorskip("openai.types.responses")
    response = payload(RESPONSES)
    sdk_response = responses_types.Response.model_validate(response)
    async with running_station() as station:
        from_dict = await station_openai.run_tool_calls(station, response)
        from_items = await station_openai.run_tool_calls(station, response["output"])
        from_sdk = await station_openai.run_tool_calls(station, sdk_response)
        from_sdk_items = await station_openai.run_tool_calls(station, sdk_response.output)

    assert from_dict == from_items == from_sdk == from_sdk_items


async def test_a_user_caller_cannot_call_an_admin_only_server():
    completion = _with_call(payload(CHAT), "mcp_secret_add", '{"a": 1, "b": 2}')
    async with running_station() as station:
        as_model = await station_openai.run_tool_calls(station, completion)  # the default caller, role user
        as_user = await station_openai.run_tool_calls(station, completion, caller=USER)
        as_admin = await station_openai.run_tool_calls(station, completion, caller=ADMIN)

    assert as_model[0]["content"] == as_user[0]["content"] == "Error: no tool 'mcp_secret_add'."
    assert as_admin[0]["content"] == "3"


async def test_arguments_that_are_not_a_json_object_are_answered_not_raised():
    async with running_station() as station:
        broken = await station_openai.run_tool_calls(station, _with_call(payload(CHAT), "mcp_demo_add", '{"a": 2,'))
        listed = await station_openai.run_tool_calls(station, _with_call(payload(CHAT), "mcp_demo_add", "[2, 3]"))

    assert broken[0]["content"].startswith("Error: the arguments for tool 'mcp_demo_add' are not valid JSON")
    assert listed[0]["content"] == (
        "Error: the arguments for tool 'mcp_demo_add' are a JSON list, not an object; send a JSON object"
    )


async def test_a_payload_with_no_calls_needs_no_answers_and_a_foreign_one_is_a_clear_error():
    async with running_station() as station:
        no_calls = {"role": "assistant", "content": "Hello!"}
        assert await station_openai.run_tool_calls(station, no_calls) == []
        assert await station_openai.run_tool_calls(station, {"output": [{"type": "message", "content": []}]}) == []
        with pytest.raises(UsageError, match="takes a chat completion"):
            await station_openai.run_tool_calls(station, {"type": "message", "content": "hi"})
        with pytest.raises(UsageError, match="needs a string 'id'"):
            await station_openai.run_tool_calls(station, {"tool_calls": [{"type": "function", "function": {}}]})


async def test_strict_tools_are_compiled_for_structured_outputs():
    async with running_station() as station:
        chat = station_openai.tools(station, strict=True)
        responses = station_openai.tools(station, api="responses", strict=True)

    add = next(t["function"] for t in chat if t["function"]["name"] == "mcp_demo_add")
    assert add["strict"] is True
    assert add["parameters"]["additionalProperties"] is False
    assert add["parameters"]["required"] == ["a", "b"]
    randoms = next(t["function"] for t in chat if t["function"]["name"] == "mcp_demo_random_number")
    assert randoms["parameters"]["required"] == ["min", "max"]  # optional ones too, made nullable
    assert randoms["parameters"]["properties"]["min"]["type"] == ["integer", "null"]
    assert next(t for t in responses if t["name"] == "mcp_demo_add")["strict"] is True


async def test_nulls_strict_mode_made_the_model_send_never_reach_the_server():
    # `min` is optional (default 0): strict mode makes the model send null for it. Were it sent on,
    # the server would refuse null for an integer.
    completion = _with_call(payload(CHAT), "mcp_demo_random_number", '{"min": null, "max": 0}')
    response = payload(RESPONSES)
    first = next(item for item in response["output"] if item["type"] == "function_call")
    first.update(name="mcp_demo_random_number", arguments='{"min": null, "max": 0}')
    async with running_station() as station:
        chat_answer = (await station_openai.run_tool_calls(station, completion))[0]
        responses_answer = (await station_openai.run_tool_calls(station, response))[0]

    assert chat_answer["content"] == "0"
    assert responses_answer["output"] == "0"
