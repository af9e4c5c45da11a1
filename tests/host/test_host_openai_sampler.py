"""`OpenAICompatibleSampler` against a small chat-completions stand-in served by uvicorn on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import uvicorn
from host_helpers import START_TIMEOUT_S, ask, wait_until
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpstation import Station, StationConfig
from mcpstation.host import (
    Host,
    OpenAICompatibleSampler,
    SamplingFailed,
    SamplingRequest,
    SamplingText,
    SamplingTool,
    SamplingToolResult,
    SamplingToolUse,
    SamplingTurn,
)

pytestmark = pytest.mark.anyio


class StandIn:
    """Answers /v1/chat/completions like an OpenAI-compatible server; records each request."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], str | None]] = []
        self.status = 200

    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append((body, request.headers.get("authorization")))
        if self.status != 200:
            return JSONResponse({"error": {"message": "nope"}}, status_code=self.status)
        last = body["messages"][-1]
        if body.get("tools"):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
                ],
            }
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"echo: {last['content']}"}
            finish = "length" if body["max_tokens"] < 5 else "stop"
        return JSONResponse(
            {"id": "c1", "model": "stand-in-1", "choices": [{"message": message, "finish_reason": finish}]}
        )


@asynccontextmanager
async def stand_in() -> AsyncIterator[tuple[StandIn, str]]:
    app_state = StandIn()
    app = Starlette(routes=[Route("/v1/chat/completions", app_state.completions, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        await wait_until(lambda: server.started)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield app_state, f"http://127.0.0.1:{port}/v1"
        finally:
            server.should_exit = True


def request(text: str = "hello", **fields: Any) -> SamplingRequest:
    return SamplingRequest(messages=(SamplingTurn("user", (SamplingText(text),)),), max_tokens=50, **fields)


async def test_a_request_becomes_a_chat_completion_and_back(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("STANDIN_KEY", "sk-test")
    async with stand_in() as (app, url):
        sampler = OpenAICompatibleSampler(url, "gpt-test", api_key_env="STANDIN_KEY")
        answer = await sampler("srv", request(system_prompt="be brief", temperature=0.1, stop_sequences=("END",)))
    assert (answer.text, answer.model, answer.stop_reason) == ("echo: hello", "stand-in-1", "endTurn")
    [(body, auth)] = app.requests
    assert auth == "Bearer sk-test"
    assert body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}],
        "max_tokens": 50,
        "temperature": 0.1,
        "stop": ["END"],
    }


async def test_tools_and_tool_turns_use_the_function_calling_shape(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    turns = (
        SamplingTurn("user", (SamplingText("find x"),)),
        SamplingTurn("assistant", (SamplingToolUse(id="call_0", name="lookup", input={"q": "y"}),)),
        SamplingTurn("user", (SamplingToolResult(tool_use_id="call_0", text="nothing"),)),
    )
    tool = SamplingTool(name="lookup", description="Look up", input_schema={"type": "object"})
    async with stand_in() as (app, url):
        sampler = OpenAICompatibleSampler(url, "gpt-test")
        answer = await sampler("srv", SamplingRequest(messages=turns, max_tokens=50, tools=(tool,), tool_choice="auto"))
    assert answer.stop_reason == "toolUse" and answer.tool_uses == (SamplingToolUse("call_1", "lookup", {"q": "x"}),)
    [(body, auth)] = app.requests
    assert auth is None  # no key in the environment: none sent
    assert body["messages"][1]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": json.dumps({"q": "y"})}
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_0", "content": "nothing"}
    assert body["tools"][0]["function"]["name"] == "lookup" and body["tool_choice"] == "auto"


async def test_http_errors_and_unreachable_endpoints_raise_sampling_failed():
    async with stand_in() as (app, url):
        app.status = 401
        with pytest.raises(SamplingFailed, match=r"HTTP 401.*is OPENAI_API_KEY set\?"):
            await OpenAICompatibleSampler(url, "m")("srv", request())
    with pytest.raises(SamplingFailed, match="could not reach"):
        await OpenAICompatibleSampler("http://127.0.0.1:9/v1", "m", timeout_s=2)("srv", request())


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_server_samples_the_stand_in_through_the_station(protocol: str):
    async with stand_in() as (app, url):
        config = StationConfig.model_validate(
            {
                "servers": [ask(protocol=protocol)],
                "host": {"sampling": {"enabled": True, "base_url": url, "model": "gpt-test", "max_tokens": 30}},
            }
        )
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config, hooks=Host.from_config(config)) as station:
                result = await station.call_tool("mcp_ask_sample_resolve", {})
        assert result.ok and result.text == "stand-in-1:echo: from resolve"
        assert app.requests[0][0]["max_tokens"] == 30  # the server asked 40, the host's cap is 30
