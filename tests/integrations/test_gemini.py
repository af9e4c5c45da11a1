"""A recorded Gemini response with parallel function calls runs against real servers, no network or key.

The declarations and the answers are checked with google-genai's own types (extra `gemini`),
which refuse any field the API does not define.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from integration_helpers import ADMIN, payload, running_station

from mcpstation.errors import UsageError
from mcpstation.integrations import gemini as station_gemini

genai_types = pytest.importorskip("google.genai.types")

pytestmark = pytest.mark.anyio

RESPONSE = "gemini_function_calls.json"


async def test_tools_are_function_declarations_google_genai_accepts():
    async with running_station() as station:
        openapi = station_gemini.tools(station)
        json_schema = station_gemini.tools(station, json_schema=True)
        admin = station_gemini.tools(station, caller=ADMIN)

    tool = genai_types.Tool.model_validate(openapi[0])
    add = next(d for d in tool.function_declarations if d.name == "mcp_demo_add")
    assert add.description == "Add two integers."
    assert add.parameters.required == ["a", "b"]
    assert add.parameters.properties["a"].type == genai_types.Type.INTEGER
    declarations = genai_types.Tool.model_validate(json_schema[0]).function_declarations
    assert all(d.parameters is None and d.parameters_json_schema is not None for d in declarations)
    names = [d["name"] for d in openapi[0]["functionDeclarations"]]
    assert not any(name.startswith("mcp_secret_") for name in names)
    assert any(d["name"] == "mcp_secret_add" for d in admin[0]["functionDeclarations"])


async def test_function_calls_become_function_responses_in_the_calls_order():
    response = payload(RESPONSE)
    async with running_station() as station:
        parts = await station_gemini.run_function_calls(station, response)

    validated = [genai_types.Part.model_validate(part) for part in parts]
    assert [p.function_response.id for p in validated] == [
        "call-add-1",
        "call-structured-2",
        "call-random-3",
        "call-fail-4",
    ]
    assert [p.function_response.name for p in validated] == [
        "mcp_demo_add",
        "mcp_demo_structured",
        "mcp_demo_random_number",
        "mcp_demo_fail",
    ]
    add, structured, random, fail = (p.function_response.response for p in validated)
    assert add == {"output": {"result": 5}}
    assert structured == {"output": {"sensor": "demo-1", "celsius": 21.5, "ok": True}}
    assert random == {"output": {"result": 7}}
    assert "the disk is full" in fail["error"]


async def test_the_sdk_response_its_content_and_its_parts_give_the_same_answers():
    response = payload(RESPONSE)
    sdk_response = genai_types.GenerateContentResponse.model_validate(response)
    async with running_station() as station:
        from_dict = await station_gemini.run_function_calls(station, response)
        from_sdk = await station_gemini.run_function_calls(station, sdk_response)
        from_content = await station_gemini.run_function_calls(station, sdk_response.candidates[0].content)
        from_parts = await station_gemini.run_function_calls(station, response["candidates"][0]["content"]["parts"])
        one = await station_gemini.run_function_calls(station, sdk_response.candidates[0].content.parts[1])

    assert from_dict == from_sdk == from_content == from_parts
    assert one == from_dict[:1]
    content = genai_types.Content(role="user", parts=[genai_types.Part.model_validate(p) for p in from_sdk])
    assert len(content.parts) == 4


async def test_bad_arguments_are_answered_and_a_foreign_payload_is_a_clear_error():
    call = {"functionCall": {"id": "x", "name": "mcp_demo_add", "args": "not an object"}}
    async with running_station() as station:
        [answer] = await station_gemini.run_function_calls(station, [call])
        with pytest.raises(UsageError, match="a response, a Content"):
            await station_gemini.run_function_calls(station, {"choices": []})

    assert "send a JSON object" in answer["functionResponse"]["response"]["error"]


def test_the_adapter_imports_no_google_sdk():
    code = "import sys, mcpstation.integrations.gemini\nprint('google' in {m.split('.')[0] for m in sys.modules})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
