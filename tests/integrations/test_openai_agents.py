"""The Agents SDK's runner with a scripted `Model` calls the station's tools in real servers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from integration_helpers import ADMIN, RED_SQUARE_PNG, running_station, with_secret_role

from mcpstation import Role
from mcpstation.integrations.openai_agents import station_tools

pytestmark = pytest.mark.anyio

OFFLINE = RunConfig(tracing_disabled=True)  # the SDK's tracing would export to OpenAI


def _outputs(call: ModelCall) -> dict[str, Any]:
    """The function-call outputs the model was sent, by call id."""
    return {item["call_id"]: item["output"] for item in call.input if item.get("type") == "function_call_output"}


class Recorder:
    """A scripted turn that keeps what the model was sent, then answers with text."""

    def __init__(self) -> None:
        self.outputs: dict[str, Any] = {}

    def __call__(self, call: ModelCall) -> Any:
        self.outputs = _outputs(call)
        return [assistant_message("done")]


async def test_scripted_model_calls_reach_the_server_and_the_runner_sends_back_their_content():
    recorder = Recorder()
    model = ScriptedModel(
        [
            [
                function_call("mcp_demo_add", {"a": 2, "b": 3}, call_id="c-add"),
                function_call("mcp_demo_get_image", {}, call_id="c-image"),
                function_call("mcp_demo_get_audio", {}, call_id="c-audio"),
                function_call("mcp_demo_fail", {"message": "the disk is full"}, call_id="c-fail"),
                function_call("mcp_demo_structured", {}, call_id="c-structured"),
                function_call("mcp_demo_resource_link", {}, call_id="c-link"),
                function_call("mcp_demo_embedded_resource", {}, call_id="c-embedded"),
                function_call("mcp_demo_add", "{not json", call_id="c-bad"),
            ],
            ModelStep.respond(recorder),
        ]
    )
    async with running_station() as station:
        agent = Agent(name="assistant", model=model, tools=station_tools(station))
        result = await Runner.run(agent, "use every tool", run_config=OFFLINE)

    assert result.final_output == "done"
    model.assert_complete()
    out = recorder.outputs
    assert out["c-add"] == "5"
    [image] = out["c-image"]
    assert image["type"] == "input_image"
    assert image["image_url"] == "data:image/png;base64," + base64.b64encode(RED_SQUARE_PNG).decode()
    assert out["c-audio"].startswith("[audio: audio/wav")  # function outputs carry no audio: described
    assert out["c-fail"].startswith("Error: ") and "the disk is full" in out["c-fail"]
    assert json.loads(out["c-structured"]) == {"sensor": "demo-1", "celsius": 21.5, "ok": True}
    assert "demo://readme" in out["c-link"]
    assert "first note" in out["c-embedded"]
    assert out["c-bad"].startswith("Error: ") and "not valid JSON" in out["c-bad"]


async def test_tools_carry_the_station_schemas_unstrict():
    async with running_station() as station:
        tools = {tool.name: tool for tool in station_tools(station)}

    add = tools["mcp_demo_add"]
    assert isinstance(add, FunctionTool) and add.strict_json_schema is False
    assert add.params_json_schema["properties"].keys() == {"a", "b"} and add.description == "Add two integers."


async def test_a_user_caller_cannot_call_an_admin_only_server_even_with_a_tool_it_held_before():
    recorder = Recorder()
    async with running_station(secret_role=Role.USER) as station:
        held = station_tools(station)  # the default caller: the model, role user; `secret` still open to users
        assert "mcp_secret_add" in {tool.name for tool in held}
        await station.reload(with_secret_role(station, Role.ADMIN))

        assert not any(tool.name.startswith("mcp_secret_") for tool in station_tools(station))
        assert "mcp_secret_add" in {tool.name for tool in station_tools(station, caller=ADMIN)}
        model = ScriptedModel(
            [[function_call("mcp_secret_add", {"a": 1, "b": 2}, call_id="c-secret")], ModelStep.respond(recorder)]
        )
        await Runner.run(Agent(name="assistant", model=model, tools=held), "add", run_config=OFFLINE)

    assert recorder.outputs["c-secret"] == "Error: no tool 'mcp_secret_add'."
