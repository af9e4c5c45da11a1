"""The host against `@modelcontextprotocol/server-everything` (TypeScript SDK), through the Station.

Its roots, sampling and elicitation tools exist only when the client declared the capability;
they are registered right after initialize and announced with tools/list_changed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import _node
import anyio
import pytest
from host_helpers import (
    START_TIMEOUT_S,
    RecordingLLM,
    ScriptedPerson,
    everything_http,
    everything_stdio,
    wait_for_tool,
    wait_until,
)
from mcp import StdioServerParameters
from mcp.client import Client

from mcpstation import Station, StationConfig
from mcpstation.config.models import RootSpec, StdioServerSpec
from mcpstation.host import ElicitationAnswer, ElicitationModes, FormRequest, Host, SamplingPolicy, UrlRequest

pytestmark = [pytest.mark.anyio, pytest.mark.node]
if _node.everything_stdio_command() is None:
    pytestmark.append(pytest.mark.skip(reason=_node.missing_reason()))

ROOT = RootSpec(uri="file:///srv/project", name="project")


def host(**overrides: Any) -> Host:
    fields: dict[str, Any] = {
        "roots": [ROOT],
        "sampling_handler": RecordingLLM(),
        "sampling": SamplingPolicy(enabled=True),
        "elicitation_handler": ScriptedPerson(),
        "elicitation": ElicitationModes(form=True, url=True),
    }
    fields.update(overrides)
    return Host(**fields)


@asynccontextmanager
async def everything_spec(transport: str) -> AsyncIterator[dict[str, Any]]:
    if transport == "stdio":
        yield everything_stdio()
    else:
        async with everything_http() as url:
            yield {"name": "everything", "transport": "http", "url": url}


TRANSPORTS = [pytest.param("stdio", id="stdio"), pytest.param("http", id="http")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_sampling_elicitation_and_roots_answered_by_the_host(transport: str):
    llm, person = RecordingLLM(reply="forty-two"), ScriptedPerson()
    hooks = host(sampling_handler=llm, elicitation_handler=person)
    with anyio.fail_after(START_TIMEOUT_S):
        async with everything_spec(transport) as spec, Station(StationConfig(servers=[spec]), hooks=hooks) as station:
            await wait_for_tool(station, "mcp_everything_trigger-sampling-request")
            sampled = await station.call_tool("mcp_everything_trigger-sampling-request", {"prompt": "meaning?"})
            assert sampled.ok and '"text": "forty-two"' in sampled.text and '"model": "host-llm"' in sampled.text
            [(server, request)] = llm.calls
            assert server == "everything" and "meaning?" in request.messages[0].text
            assert request.system_prompt == "You are a helpful test server." and request.max_tokens == 100

            await wait_for_tool(station, "mcp_everything_trigger-elicitation-request")
            form = await station.call_tool("mcp_everything_trigger-elicitation-request", {})
            assert form.ok and "- Name: Ada" in form.text
            raw = json.loads(form.text.split("Raw result: ", 1)[1])
            # the person gave only a name: every field with a schema default got it
            assert raw["content"] == {
                "name": "Ada",
                "firstLine": "It was a dark and stormy night.",
                "integer": 42,
                "number": 3.14,
                "untitledSingleSelectEnum": "Monica",
                "untitledMultipleSelectEnum": ["Guitar"],
                "titledSingleSelectEnum": "hero-1",
                "titledMultipleSelectEnum": ["fish-1"],
                "legacyTitledEnum": "pet-1",
            }
            assert isinstance(person.calls[0][1], FormRequest)

            await wait_for_tool(station, "mcp_everything_trigger-url-elicitation")
            url = await station.call_tool("mcp_everything_trigger-url-elicitation", {"url": "https://example.org/a"})
            assert url.ok and "User completed the URL elicitation flow" in url.text
            assert person.calls[1][1] == UrlRequest(
                message="Please open the link to complete this action.",
                url="https://example.org/a",
                elicitation_id=person.calls[1][1].elicitation_id,  # type: ignore[union-attr]
            )

            await wait_for_tool(station, "mcp_everything_get-roots-list")
            roots = await station.call_tool("mcp_everything_get-roots-list", {})
            assert roots.ok and "1. project" in roots.text and "URI: file:///srv/project" in roots.text


async def test_url_elicitation_declined_when_the_person_says_no():
    hooks = host(elicitation_handler=ScriptedPerson(answer=ElicitationAnswer.decline()))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[everything_stdio()]), hooks=hooks) as station:
            await wait_for_tool(station, "mcp_everything_trigger-url-elicitation")
            url = await station.call_tool("mcp_everything_trigger-url-elicitation", {"url": "https://example.org/b"})
            assert url.ok and "User declined to open the URL" in url.text


async def test_capability_gated_tools_follow_per_server_settings():
    servers = [
        everything_stdio("on"),
        everything_stdio("off", sampling=False, elicitation_form=False, elicitation_url=False),
    ]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=servers), hooks=host()) as station:
            await wait_for_tool(station, "mcp_on_trigger-sampling-request")
            await wait_for_tool(station, "mcp_off_get-roots-list")  # off's gated tools have registered too
            names = {tool.name for tool in station.tools}
            assert {"mcp_on_trigger-elicitation-request", "mcp_on_trigger-url-elicitation"} <= names
            assert not {n for n in names if n.startswith("mcp_off_trigger-") and ("sampling" in n or "elicit" in n)}
            refused = await station.call_tool("mcp_off_trigger-sampling-request", {"prompt": "x"})
            assert not refused.ok and "no tool" in refused.text.lower()


async def test_sampling_rate_limit_and_token_cap_refusals_reach_the_tool():
    llm = RecordingLLM()
    policy = SamplingPolicy(enabled=True, max_tokens=50, requests_per_minute=1, over_max_tokens="refuse")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(
            StationConfig(servers=[everything_stdio()]), hooks=host(sampling_handler=llm, sampling=policy)
        ) as station:
            await wait_for_tool(station, "mcp_everything_trigger-sampling-request")
            name = "mcp_everything_trigger-sampling-request"
            too_many = await station.call_tool(name, {"prompt": "x", "maxTokens": 500})
            assert not too_many.ok and "500 tokens, over the host's cap of 50" in too_many.text
            assert (await station.call_tool(name, {"prompt": "x", "maxTokens": 10})).ok
            limited = await station.call_tool(name, {"prompt": "x", "maxTokens": 10})
            assert not limited.ok and "rate limit for server 'everything' reached" in limited.text
            assert len(llm.calls) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_progress_reaches_the_callers_callback(transport: str):
    steps: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total))

    with anyio.fail_after(START_TIMEOUT_S):
        async with everything_spec(transport) as spec, Station(StationConfig(servers=[spec]), hooks=host()) as station:
            result = await station.call_tool(
                "mcp_everything_trigger-long-running-operation", {"duration": 0.6, "steps": 3}, progress=on_progress
            )
            assert result.ok, result.text
    assert steps == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]


async def test_simulated_logging_reaches_the_servers_logger(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG, logger="mcpstation.server")
    spec = everything_stdio(log_level="debug")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[spec]), hooks=host()) as station:
            assert (await station.call_tool("mcp_everything_toggle-simulated-logging", {})).ok
            pattern = re.compile(r"(?i)^\w+[- ]level[- ]message")
            await wait_until(
                lambda: any(
                    r.name == "mcpstation.server.everything" and pattern.match(r.getMessage()) for r in caplog.records
                )
            )
            await station.call_tool("mcp_everything_toggle-simulated-logging", {})  # stop it again
    record = next(r for r in caplog.records if pattern.match(r.getMessage()))
    assert record.mcp_server == "everything"  # type: ignore[attr-defined]
    assert record.mcp_level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


async def test_changed_roots_are_announced_to_attached_handshake_sessions(caplog: pytest.LogCaptureFixture):
    """The notification path with a real Client, attached by hand as the connection will do."""
    caplog.set_level(logging.INFO, logger="mcpstation.server")
    hooks = host()
    spec = StdioServerSpec.model_validate(everything_stdio())
    command, args, env = _node.everything_stdio_command()  # type: ignore[misc]
    params = StdioServerParameters(command=command, args=args, env=env)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Client(params, mode="legacy", **hooks.client_kwargs(spec)) as client:
            await hooks.session_started(spec, client)
            assert hooks.attached == ("everything",)
            # it asks for roots ~350 ms after initialize; wait until it has them
            await wait_until(lambda: any("Roots updated: 1 root" in r.getMessage() for r in caplog.records))
            told = await hooks.set_roots([RootSpec(uri="file:///srv/a", name="a"), RootSpec(uri="file:///srv/b")])
            assert told == ("everything",)
            await wait_until(lambda: any("Roots updated: 2 root" in r.getMessage() for r in caplog.records))
            listed = await client.call_tool("get-roots-list", {})
            text = listed.content[0].text  # type: ignore[union-attr]
            assert "URI: file:///srv/a" in text and "URI: file:///srv/b" in text and "/srv/project" not in text
            hooks.session_ended(spec, client)
            assert hooks.attached == ()
