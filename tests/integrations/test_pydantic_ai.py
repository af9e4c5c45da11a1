"""pydantic-ai's own test models drive real tool calls through the station's pipeline into real servers."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pydantic_ai")

from integration_helpers import ADMIN, BEEP_WAV, RED_SQUARE_PNG, USER, running_station
from pydantic_ai import Agent, RunContext, ToolFailed
from pydantic_ai.messages import (
    BinaryContent,
    BinaryImage,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from mcpstation.integrations.pydantic_ai import StationToolset, station_toolset

pytestmark = pytest.mark.anyio

CALLS = {
    "c-add": ("mcp_demo_add", {"a": 2, "b": 3}),
    "c-image": ("mcp_demo_get_image", {}),
    "c-audio": ("mcp_demo_get_audio", {}),
    "c-fail": ("mcp_demo_fail", {"message": "the disk is full"}),
    "c-structured": ("mcp_demo_structured", {}),
    "c-link": ("mcp_demo_resource_link", {}),
    "c-embedded": ("mcp_demo_embedded_resource", {}),
}


def _returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {
        part.tool_call_id: part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


async def test_function_model_calls_reach_the_server_and_every_kind_of_content_comes_back():
    seen: list[dict[str, ToolReturnPart]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # one response with every call in it: pydantic-ai runs them in parallel
            return ModelResponse(
                parts=[ToolCallPart(name, args, tool_call_id=cid) for cid, (name, args) in CALLS.items()]
            )
        seen.append(_returns(messages))
        return ModelResponse(parts=[TextPart("done")])

    async with running_station() as station:
        agent = Agent(FunctionModel(model), toolsets=[station_toolset(station)])
        result = await agent.run("use every tool")

    assert result.output == "done"
    returns = seen[0]
    assert set(returns) == set(CALLS)
    assert returns["c-add"].content == {"result": 5}
    assert returns["c-add"].metadata["server"] == "demo" and returns["c-add"].metadata["outcome"] == "ok"
    image = returns["c-image"].content
    assert isinstance(image, BinaryImage) and image.media_type == "image/png" and image.data == RED_SQUARE_PNG
    audio = returns["c-audio"].content
    assert isinstance(audio, BinaryContent) and audio.media_type == "audio/wav" and audio.data == BEEP_WAV
    failed = returns["c-fail"]
    assert failed.outcome == "failed" and "the disk is full" in str(failed.content)
    assert returns["c-structured"].content == {"sensor": "demo-1", "celsius": 21.5, "ok": True}
    assert "demo://readme" in str(returns["c-link"].content)
    assert "demo://notes/1" in str(returns["c-embedded"].content) and "first note" in str(returns["c-embedded"].content)


async def test_test_model_calls_the_tools_it_is_given_and_gets_their_results():
    async with running_station() as station:
        model = TestModel(call_tools=["mcp_demo_add", "mcp_demo_echo", "mcp_demo_fail"])
        result = await Agent(model, toolsets=[station_toolset(station)]).run("go")

    # TestModel answers with what each tool returned, after calling each with arguments it made up.
    output = json.loads(result.output)
    assert output["mcp_demo_add"] == {"result": 0}  # TestModel's integers are 0
    assert output["mcp_demo_echo"] == {"result": "a"}  # and its strings "a"
    assert "Error executing tool fail: a" in output["mcp_demo_fail"]
    calls = [p.tool_name for m in result.all_messages() if isinstance(m, ModelResponse) for p in m.parts
             if isinstance(p, ToolCallPart)]  # fmt: skip
    assert sorted(calls) == ["mcp_demo_add", "mcp_demo_echo", "mcp_demo_fail"]


async def test_a_user_caller_neither_sees_nor_calls_an_admin_only_server():
    async with running_station() as station:
        context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        user_toolset = station_toolset(station)  # the default caller: the model, role user
        admin_toolset = station_toolset(station, caller=ADMIN)
        user_tools = await user_toolset.get_tools(context)
        admin_tools = await admin_toolset.get_tools(context)

        assert user_toolset.caller.role is USER.role
        assert "mcp_demo_add" in user_tools and not any(name.startswith("mcp_secret_") for name in user_tools)
        assert "mcp_secret_add" in admin_tools
        # Named anyway (a stale list, a hallucinated name): the station answers "no such tool".
        with pytest.raises(ToolFailed, match="no tool 'mcp_secret_add'"):
            await user_toolset.call_tool("mcp_secret_add", {"a": 1, "b": 2}, context, admin_tools["mcp_secret_add"])
        admitted = await admin_toolset.call_tool(
            "mcp_secret_add", {"a": 1, "b": 2}, context, admin_tools["mcp_secret_add"]
        )
        assert admitted.return_value == {"result": 3} and admitted.metadata["server"] == "secret"


async def test_the_toolset_lists_what_the_station_has_at_each_step():
    async with running_station() as station:
        toolset = StationToolset(station, caller=ADMIN)
        context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        before = await toolset.get_tools(context)
        await station.reload(station.config.model_copy(update={"servers": station.config.servers[:1]}))
        after = await toolset.get_tools(context)

    assert "mcp_secret_add" in before and "mcp_secret_add" not in after and "mcp_demo_add" in after
