"""The gateway as a downstream MCP client sees it: a real SDK `Client` over streamable HTTP and stdio."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from gateway_helpers import (
    CALL_TIMEOUT_S,
    START_TIMEOUT_S,
    http_gateway,
    push,
    station_config,
    stdio_gateway,
    toml_config,
)
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from station_helpers import demo

from mcpstation import StationConfig

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


@asynccontextmanager
async def downstream(
    transport: str, tmp_path: Path, mode: str, *servers: dict[str, Any], **kwargs: Any
) -> AsyncIterator[Client]:
    """A downstream `Client` connected to a gateway fronting `servers` (default: demo a and b)."""
    servers = servers or (demo("a"), demo("b"))
    if transport == "http":
        async with http_gateway(station_config(*servers)) as (_, url), Client(url, mode=mode, **kwargs) as client:
            yield client
    else:
        params = stdio_gateway(toml_config(tmp_path / "mcpstation.toml", *servers))
        with anyio.fail_after(START_TIMEOUT_S + CALL_TIMEOUT_S):
            async with Client(params, mode=mode, **kwargs) as client:
                yield client


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("mode", MODES)
async def test_catalog_calls_progress_prompts_resources_and_completion_pass_through(
    transport: str, mode: str, tmp_path: Path
):
    async with downstream(transport, tmp_path, mode) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            assert client.server_info is None or client.server_info.name == "mcpstation"
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"mcp_a_add", "mcp_b_add", "mcp_a_slow", "mcp_b_fail"} <= names

            added = await client.call_tool("mcp_b_add", {"a": 2, "b": 40})
            assert not added.is_error and added.structured_content == {"result": 42}

            steps: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                steps.append(progress)

            slow = await client.call_tool("mcp_a_slow", {"seconds": 0.2}, progress_callback=on_progress)
            assert slow.content[0].text == "slept 0.2 s"
            assert steps == [1.0, 2.0, 3.0, 4.0]

            failed = await client.call_tool("mcp_a_fail", {"message": "disk on fire"})
            assert failed.is_error and "disk on fire" in failed.content[0].text
            with pytest.raises(MCPError) as unknown:  # a tool no server has: a protocol error
                await client.call_tool("mcp_c_add", {})
            assert unknown.value.error.code == types.INVALID_PARAMS

            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert {"mcp_a_greet", "mcp_b_greet"} <= prompts
            prompt = await client.get_prompt("mcp_b_greet", {"name": "Ada", "style": "formal"})
            assert "formal greeting for Ada" in prompt.messages[0].content.text

            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert "demo://readme" in resources
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert templates == {"demo://notes/{note_id}"}
            assert (await client.read_resource("demo://readme")).contents[0].text.startswith("mcpstation demo")
            assert (await client.read_resource("demo://notes/2")).contents[0].text == "second note"

            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="mcp_a_greet"), {"name": "style", "value": "f"}
            )
            assert completion.completion.values == ["formal", "friendly", "funny"]
            template_completion = await client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="demo://notes/{note_id}"),
                {"name": "note_id", "value": ""},
            )
            assert template_completion.completion.values == ["1", "2"]


@pytest.mark.parametrize("mode", MODES)
async def test_input_schemas_output_schemas_and_annotations_are_kept_exactly(mode: str):
    async with http_gateway(station_config()) as (station, url), Client(url, mode=mode) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            listed = {t.name: t for t in (await client.list_tools()).tools}
        for entry in station.tools:
            mine = entry.definition.model_dump(mode="json", by_alias=True, exclude_none=True)
            theirs = listed[entry.name].model_dump(mode="json", by_alias=True, exclude_none=True)
            # Same JSON on both eras; byte order too on 2026-07-28. (On the handshake era the SDK's
            # server re-serialises results through that version's model, which reorders keys.)
            assert theirs["inputSchema"] == mine["inputSchema"]
            if mode == "auto":
                assert json.dumps(theirs["inputSchema"]) == json.dumps(mine["inputSchema"])
            assert theirs.get("outputSchema") == mine.get("outputSchema")
            assert theirs.get("annotations") == mine.get("annotations")
        assert "outputSchema" in listed["mcp_a_structured"].model_dump(by_alias=True, exclude_none=True)


async def test_a_server_added_by_reload_is_announced_to_legacy_and_modern_clients():
    config = station_config(demo("a"))
    pushed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            pushed.set()

    async with http_gateway(config) as (station, url):
        async with Client(url, mode="legacy", message_handler=on_message) as legacy, Client(url) as modern:
            with anyio.fail_after(CALL_TIMEOUT_S):
                assert "mcp_b_add" not in {t.name for t in (await legacy.list_tools()).tools}
                async with modern.listen(tools_list_changed=True) as events:
                    report = await station.reload(StationConfig(servers=(demo("a"), demo("b")), station=config.station))
                    assert report.added == ("b",)
                    assert await events.__anext__() == ToolsListChanged()
                await pushed.wait()
                assert "mcp_b_add" in {t.name for t in (await legacy.list_tools()).tools}
                assert "mcp_b_add" in {t.name for t in (await modern.list_tools()).tools}


async def _on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert params.message == "What is your name?"
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _on_sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    question = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant", model="downstream-llm", content=types.TextContent(type="text", text=f"re: {question}")
    )


async def _on_roots(ctx: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///downstream/project", name="project")])


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_upstream_elicitation_sampling_roots_and_logs_reach_the_downstream_client(transport: str, tmp_path: Path):
    logs: list[tuple[str, Any]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async with downstream(
        transport,
        tmp_path,
        "legacy",
        push("p"),
        elicitation_callback=_on_elicit,
        sampling_callback=_on_sample,
        list_roots_callback=_on_roots,
        logging_callback=on_log,
    ) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            asked = await client.call_tool("mcp_p_ask_name", {})
            assert asked.content[0].text == "accept:Ada"
            sampled = await client.call_tool("mcp_p_ask_llm", {"question": "why?"})
            assert sampled.content[0].text == "downstream-llm:re: why?"
            rooted = await client.call_tool("mcp_p_my_roots", {})
            assert rooted.content[0].text == "file:///downstream/project"
            chatted = await client.call_tool("mcp_p_chatty", {})
            assert chatted.content[0].text == "chatted"
    assert [data for _, data in logs] == ["debug-line", "info-line", "warning-line"]


async def test_a_downstream_client_without_the_capability_gets_a_refusal_not_a_hang():
    async with http_gateway(station_config(push("p"))) as (_, url), Client(url, mode="legacy") as client:
        with anyio.fail_after(CALL_TIMEOUT_S), pytest.raises(MCPError) as refused:
            await client.call_tool("mcp_p_ask_name", {})
    # The upstream answers its tool call with a protocol error, which stays one (SEP-2322).
    assert "elicitation" in refused.value.error.message.lower(), refused.value.error


async def test_downstream_cancellation_cancels_the_upstream_call(tmp_path: Path):
    marker = tmp_path / "cancelled"
    async with http_gateway(station_config(push("p", str(marker)))) as (_, url), Client(url, mode="legacy") as client:
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("mcp_p_wait_for_cancel", {})
        assert scope.cancelled_caught
        with anyio.fail_after(CALL_TIMEOUT_S):
            while not marker.exists():  # noqa: ASYNC110 - written by the upstream process
                await anyio.sleep(0.05)
            # the gateway and the upstream session both survive the cancellation
            assert (await client.call_tool("mcp_p_chatty", {})).content[0].text == "chatted"
    assert marker.read_text() == "cancelled"


async def test_dns_rebinding_protection_refuses_a_foreign_host_header():
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with http_gateway(station_config(demo("a"))) as (_, url), httpx2.AsyncClient(timeout=10) as http:
        evil = await http.post(url, json=body, headers={**headers, "Host": "evil.example.com"})
        good = await http.post(url, json=body, headers=headers)
    assert 400 <= evil.status_code < 500
    assert good.status_code == 200


async def test_stateless_json_gateway_serves_both_eras():
    async with http_gateway(station_config(demo("a")), json_response=True, stateless=True) as (_, url):
        for mode in MODES:
            async with Client(url, mode=mode) as client:
                with anyio.fail_after(CALL_TIMEOUT_S):
                    added = await client.call_tool("mcp_a_add", {"a": 1, "b": 2})
            assert added.structured_content == {"result": 3}
