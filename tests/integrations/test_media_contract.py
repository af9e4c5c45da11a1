"""The same result contract in every adapter, for the content the demo server does not make: an embedded PDF,
an embedded PNG, an image type providers cannot read (SVG), an archive, and no content at all."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from integration_helpers import running_station
from media_server import ARCHIVE, MINIMAL_PDF, SVG

from mcpstation.integrations import anthropic as station_anthropic
from mcpstation.integrations import openai as station_openai
from mcpstation.testing._media import red_square_png

pytestmark = pytest.mark.anyio

TOOLS = ("report", "logo", "vector", "archive", "nothing")
PDF_B64 = base64.b64encode(MINIMAL_PDF).decode()
PNG_B64 = base64.b64encode(red_square_png()).decode()
PDF_URL = f"data:application/pdf;base64,{PDF_B64}"
PNG_URL = f"data:image/png;base64,{PNG_B64}"


def _name(tool: str) -> str:
    return f"mcp_media_{tool}"


async def test_chat_completions_describe_everything_and_attach_what_openai_reads():
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": f"call_{t}", "type": "function", "function": {"name": _name(t), "arguments": "{}"}} for t in TOOLS
        ],
    }
    async with running_station() as station:
        *tool_messages, media = await station_openai.run_tool_calls(station, message)

    report, logo, vector, archive, nothing = (m["content"] for m in tool_messages)
    assert report == "The report:\n[resource <media://reports/q3.pdf>: application/pdf, 301 bytes]"
    assert logo == "[resource <media://logo.png>: image/png, 75 bytes]"
    assert vector.startswith("[image: image/svg+xml") and archive.startswith("[resource <media://exports/all.zip>")
    assert nothing == ""
    assert media["content"] == [
        {"type": "text", "text": "Media returned by tool call call_report (mcp_media_report):"},
        {"type": "file", "file": {"file_data": PDF_URL, "filename": "q3.pdf"}},
        {"type": "text", "text": "Media returned by tool call call_logo (mcp_media_logo):"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]


async def test_responses_outputs_carry_pdfs_and_images_and_describe_the_rest():
    items = [
        {"type": "function_call", "call_id": f"call_{t}", "name": _name(t), "arguments": "{}", "id": f"fc_{t}"}
        for t in TOOLS
    ]
    async with running_station() as station:
        outputs = [item["output"] for item in await station_openai.run_tool_calls(station, items)]

    report, logo, vector, archive, nothing = outputs
    assert report == [
        {"type": "input_text", "text": "The report:"},
        {"type": "input_file", "file_data": PDF_URL, "filename": "q3.pdf"},
    ]
    assert logo == [{"type": "input_image", "image_url": PNG_URL}]
    assert vector.startswith("[image: image/svg+xml") and archive.startswith("[resource <media://exports/all.zip>")
    assert nothing == ""


async def test_anthropic_results_carry_documents_and_images_and_describe_the_rest():
    blocks = [{"type": "tool_use", "id": f"toolu_{t}", "name": _name(t), "input": {}} for t in TOOLS]
    async with running_station() as station:
        report, logo, vector, archive, nothing = await station_anthropic.run_tool_uses(station, blocks)

    assert report["content"] == [
        {"type": "text", "text": "The report:"},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
            "title": "q3.pdf",
        },
    ]
    assert logo["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
    ]
    assert [b["type"] for b in vector["content"] + archive["content"]] == ["text", "text"]
    assert vector["content"][0]["text"].startswith("[image: image/svg+xml")
    assert nothing == {"type": "tool_result", "tool_use_id": "toolu_nothing"}  # no empty text block


async def test_langchain_tool_messages_carry_files_and_images_as_standard_blocks():
    pytest.importorskip("langchain_core")
    from mcpstation.integrations.langchain import station_tools

    async with running_station() as station:
        tools = {tool.name: tool for tool in station_tools(station)}
        messages = {
            t: await tools[_name(t)].ainvoke({"name": _name(t), "args": {}, "id": f"c-{t}", "type": "tool_call"})
            for t in TOOLS
        }

    assert messages["report"].content == [
        {"type": "text", "text": "The report:"},
        {"type": "file", "base64": PDF_B64, "mime_type": "application/pdf", "filename": "q3.pdf"},
    ]
    assert messages["logo"].content == [{"type": "image", "base64": PNG_B64, "mime_type": "image/png"}]
    assert messages["vector"].content.startswith("[image: image/svg+xml")
    assert messages["archive"].content.startswith("[resource <media://exports/all.zip>")
    assert messages["nothing"].content == "" and messages["nothing"].status == "success"
    assert base64.b64decode(messages["archive"].artifact["content"][0]["resource"]["blob"]) == ARCHIVE


async def test_openai_agents_outputs_carry_files_and_images():
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, Runner
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

    from mcpstation.integrations.openai_agents import station_tools

    sent: dict[str, Any] = {}

    def record(call: ModelCall) -> Any:
        sent.update({i["call_id"]: i["output"] for i in call.input if i.get("type") == "function_call_output"})
        return [assistant_message("done")]

    model = ScriptedModel([[function_call(_name(t), {}, call_id=f"c-{t}") for t in TOOLS], ModelStep.respond(record)])
    async with running_station() as station:
        agent = Agent(name="assistant", model=model, tools=station_tools(station))
        await Runner.run(agent, "fetch them", run_config=RunConfig(tracing_disabled=True))

    assert sent["c-report"] == [
        {"type": "input_text", "text": "The report:"},
        {"type": "input_file", "file_data": PDF_URL, "filename": "q3.pdf"},
    ]
    assert sent["c-logo"] == [{"type": "input_image", "image_url": PNG_URL}]
    assert sent["c-vector"].startswith("[image: image/svg+xml")
    assert sent["c-archive"].startswith("[resource <media://exports/all.zip>")
    assert sent["c-nothing"] == ""


async def test_pydantic_ai_returns_binary_content_and_describes_what_no_model_reads():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        BinaryContent,
        BinaryImage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import FunctionModel

    from mcpstation.integrations.pydantic_ai import station_toolset

    returned: dict[str, Any] = {}

    def model(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(_name(t), {}, tool_call_id=t) for t in TOOLS])
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        returned.update({part.tool_call_id: part.content for part in parts})
        return ModelResponse(parts=[TextPart("done")])

    async with running_station() as station:
        await Agent(FunctionModel(model), toolsets=[station_toolset(station)]).run("fetch them")

    text, pdf = returned["report"]
    assert text == "The report:" and isinstance(pdf, BinaryContent)
    assert pdf.media_type == "application/pdf" and pdf.data == MINIMAL_PDF
    assert isinstance(returned["logo"], BinaryImage) and returned["logo"].data == red_square_png()
    assert (
        isinstance(returned["vector"], BinaryImage) and returned["vector"].data == SVG
    )  # pydantic-ai judges per model
    assert returned["archive"].startswith("[resource <media://exports/all.zip>")
    assert returned["nothing"] == ""
