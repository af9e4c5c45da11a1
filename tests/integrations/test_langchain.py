"""A LangChain fake chat model's tool calls, run by a tool-calling loop, reach real servers through the station."""

from __future__ import annotations

import base64
import json

import pytest

pytest.importorskip("langchain_core")

from integration_helpers import ADMIN, BEEP_WAV, RED_SQUARE_PNG, running_station, with_secret_role
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from mcpstation import Role
from mcpstation.integrations.langchain import station_tools

pytestmark = pytest.mark.anyio

MAX_TURNS = 5  # the loop's bound: a scripted model that never stops calling tools fails the test


def _call(name: str, args: dict[str, object], call_id: str) -> dict[str, object]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


async def _loop(model: GenericFakeChatModel, tools: list[BaseTool], prompt: str) -> list[BaseMessage]:
    """The ordinary tool-calling loop: ask the model, run its tool calls, hand back the ToolMessages."""
    by_name = {tool.name: tool for tool in tools}
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    for _ in range(MAX_TURNS):
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            return messages
        messages.extend([await by_name[call["name"]].ainvoke(call) for call in reply.tool_calls])
    raise AssertionError(f"the model was still calling tools after {MAX_TURNS} turns")


def _tool_messages(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


async def test_fake_model_tool_calls_reach_the_server_and_the_loop_gets_tool_messages_back():
    calls = [
        _call("mcp_demo_add", {"a": 2, "b": 3}, "c-add"),
        _call("mcp_demo_get_image", {}, "c-image"),
        _call("mcp_demo_get_audio", {}, "c-audio"),
        _call("mcp_demo_fail", {"message": "the disk is full"}, "c-fail"),
        _call("mcp_demo_structured", {}, "c-structured"),
        _call("mcp_demo_resource_link", {}, "c-link"),
        _call("mcp_demo_embedded_resource", {}, "c-embedded"),
    ]
    model = GenericFakeChatModel(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")]))
    async with running_station() as station:
        messages = await _loop(model, station_tools(station), "use every tool")

    assert messages[-1].content == "done"
    out = _tool_messages(messages)
    assert out["c-add"].content == "5" and out["c-add"].status == "success"
    assert out["c-add"].artifact["structured"] == {"result": 5} and out["c-add"].artifact["server"] == "demo"
    [image] = out["c-image"].content
    assert image == {"type": "image", "base64": base64.b64encode(RED_SQUARE_PNG).decode(), "mime_type": "image/png"}
    # A ToolMessage takes no audio block: the model reads a description, the program the artifact's data.
    assert out["c-audio"].content.startswith("[audio: audio/wav")
    [audio] = out["c-audio"].artifact["content"]
    assert audio["type"] == "audio" and base64.b64decode(audio["data"]) == BEEP_WAV
    assert out["c-fail"].status == "error" and "the disk is full" in out["c-fail"].content
    assert json.loads(out["c-structured"].content) == {"sensor": "demo-1", "celsius": 21.5, "ok": True}
    assert out["c-structured"].artifact["structured"] == {"sensor": "demo-1", "celsius": 21.5, "ok": True}
    assert "demo://readme" in out["c-link"].content
    assert "first note" in out["c-embedded"].content


async def test_tools_bind_as_function_schemas_and_refuse_sync_use():
    async with running_station() as station:
        tools = {tool.name: tool for tool in station_tools(station)}

    schema = convert_to_openai_tool(tools["mcp_demo_add"])
    assert schema["function"]["name"] == "mcp_demo_add"
    assert schema["function"]["parameters"]["properties"].keys() == {"a", "b"}
    with pytest.raises(NotImplementedError, match="ainvoke"):
        tools["mcp_demo_add"].invoke({"a": 1, "b": 2})


async def test_a_user_caller_cannot_call_an_admin_only_server_even_with_a_tool_it_held_before():
    async with running_station(secret_role=Role.USER) as station:
        held = station_tools(station)  # the default caller: the model, role user; `secret` still open to users
        assert "mcp_secret_add" in {tool.name for tool in held}
        await station.reload(with_secret_role(station, Role.ADMIN))

        assert not any(tool.name.startswith("mcp_secret_") for tool in station_tools(station))
        assert "mcp_secret_add" in {tool.name for tool in station_tools(station, caller=ADMIN)}
        calls = [_call("mcp_secret_add", {"a": 1, "b": 2}, "c-secret")]
        model = GenericFakeChatModel(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="ok")]))
        messages = await _loop(model, held, "add")

    refused = _tool_messages(messages)["c-secret"]
    assert refused.status == "error" and refused.content == "no tool 'mcp_secret_add'."
