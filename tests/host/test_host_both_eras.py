"""The host's answers through the Station, against our ask server in both protocol eras.

Push-style tools only work on handshake-era sessions; resolve-style tools return input-required
results on 2026-07-28 sessions. Both reach the same host callbacks.
"""

from __future__ import annotations

import json
import logging
import sys

import anyio
import pytest
from host_helpers import ASK_SERVER, START_TIMEOUT_S, RecordingLLM, ScriptedPerson, ask, wait_until
from mcp import StdioServerParameters
from mcp.client import Client

from mcpstation import Station, StationConfig
from mcpstation.config.models import RootSpec, StdioServerSpec
from mcpstation.host import ElicitationAnswer, ElicitationModes, Host, SamplingPolicy

pytestmark = pytest.mark.anyio

ERAS = [pytest.param("legacy", id="legacy"), pytest.param("auto", id="modern")]
ROOT = RootSpec(uri="file:///srv/project", name="project")


def host(**overrides: object) -> Host:
    fields: dict[str, object] = {
        "roots": [ROOT],
        "sampling_handler": RecordingLLM(),
        "sampling": SamplingPolicy(enabled=True),
        "elicitation_handler": ScriptedPerson(),
        "elicitation": ElicitationModes(form=True, url=True),
    }
    fields.update(overrides)
    return Host(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ERAS)
async def test_resolve_style_requests_reach_the_host_in_both_eras(protocol: str):
    llm, person = RecordingLLM(), ScriptedPerson()
    hooks = host(sampling_handler=llm, elicitation_handler=person)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[ask(protocol=protocol)]), hooks=hooks) as station:
            [status] = station.status().servers
            assert status.protocol_version == ("2025-11-25" if protocol == "legacy" else "2026-07-28")

            profile = await station.call_tool("mcp_ask_ask_resolve", {})
            assert profile.ok, profile.text
            # the person gave only the name: the schema's defaults fill the rest (SEP-1034)
            assert json.loads(profile.text) == {"name": "Ada", "color": "blue", "count": 3}
            assert person.calls[0][0] == "ask"

            sampled = await station.call_tool("mcp_ask_sample_resolve", {})
            assert sampled.ok and sampled.text == "host-llm:the host says hi"
            [(server, request)] = llm.calls
            assert server == "ask" and request.max_tokens == 40 and request.messages[0].text == "from resolve"

            roots = await station.call_tool("mcp_ask_roots_resolve", {})
            assert roots.ok and roots.text == "file:///srv/project"


async def test_push_style_requests_reach_the_host_on_handshake_sessions():
    hooks = host()
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[ask(protocol="legacy")]), hooks=hooks) as station:
            pushed = await station.call_tool("mcp_ask_ask_push", {})
            assert pushed.ok and pushed.text == 'accept:{"color": "blue", "count": 3, "name": "Ada"}'
            assert (await station.call_tool("mcp_ask_sample_push", {})).text == "host-llm:the host says hi"
            assert (await station.call_tool("mcp_ask_roots_push", {})).text == "file:///srv/project"
            assert (await station.call_tool("mcp_ask_url_push", {})).text == "url:accept"


async def test_runtime_roots_are_what_modern_servers_see_next_time():
    hooks = host()
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[ask()]), hooks=hooks) as station:
            assert (await station.call_tool("mcp_ask_roots_resolve", {})).text == "file:///srv/project"
            told = await hooks.set_roots([RootSpec(uri="file:///srv/other"), RootSpec(uri="file:///x", enabled=False)])
            assert told == ()  # nothing attached yet (the lead wires attach), and modern sessions ask anyway
            assert (await station.call_tool("mcp_ask_roots_resolve", {})).text == "file:///srv/other"


async def test_a_server_with_sampling_off_gets_an_error_not_the_llm():
    llm = RecordingLLM()
    servers = [ask("on", protocol="legacy"), ask("off", protocol="legacy", sampling=False)]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=servers), hooks=host(sampling_handler=llm)) as station:
            refused = await station.call_tool("mcp_off_sample_push", {})
            assert not refused.ok and "not supported" in refused.text.lower()
            assert (await station.call_tool("mcp_on_sample_push", {})).ok
            assert [server for server, _ in llm.calls] == ["on"]


async def test_sampling_refusals_name_the_limit():
    llm = RecordingLLM()
    policy = SamplingPolicy(enabled=True, max_tokens=100, requests_per_minute=2, over_max_tokens="refuse")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(
            StationConfig(servers=[ask(protocol="legacy")]), hooks=host(sampling_handler=llm, sampling=policy)
        ) as station:
            too_many = await station.call_tool("mcp_ask_sample_push", {"max_tokens": 5000})
            assert not too_many.ok and "5000 tokens, over the host's cap of 100" in too_many.text
            # tool use was not declared, so this server refuses on its own side; the host's own check is
            # in test_host_policy for servers that send tools anyway
            tools = await station.call_tool("mcp_ask_sample_push", {"with_tools": True})
            assert not tools.ok and "sampling tools" in tools.text
            assert (await station.call_tool("mcp_ask_sample_push", {})).ok
            assert (await station.call_tool("mcp_ask_sample_push", {})).ok
            limited = await station.call_tool("mcp_ask_sample_push", {})
            assert not limited.ok and "rate limit" in limited.text and "2 requests a minute" in limited.text
            assert len(llm.calls) == 2


async def test_max_tokens_over_the_cap_is_clipped_by_default():
    llm = RecordingLLM()
    policy = SamplingPolicy(enabled=True, max_tokens=64)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(
            StationConfig(servers=[ask(protocol="legacy")]), hooks=host(sampling_handler=llm, sampling=policy)
        ) as station:
            assert (await station.call_tool("mcp_ask_sample_push", {"max_tokens": 5000})).ok
            assert llm.calls[0][1].max_tokens == 64


async def test_url_elicitation_is_refused_where_only_forms_are_allowed():
    person = ScriptedPerson(answer=ElicitationAnswer.accept())
    hooks = host(elicitation_handler=person, elicitation=ElicitationModes(form=True, url=False))
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[ask(protocol="legacy")]), hooks=hooks) as station:
            refused = await station.call_tool("mcp_ask_url_push", {})
            assert not refused.ok and "url elicitation is not allowed for server 'ask'" in refused.text
            assert person.calls == []


@pytest.mark.parametrize("protocol", ERAS)
async def test_elicitation_without_a_handler_is_declined(protocol: str):
    hooks = host(elicitation_handler=None)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[ask(protocol=protocol)]), hooks=hooks) as station:
            if protocol == "legacy":
                assert (await station.call_tool("mcp_ask_ask_push", {})).text == "decline:null"
            declined = await station.call_tool("mcp_ask_ask_resolve", {})
            assert not declined.ok  # a resolver that is declined fails the tool; the server says so


@pytest.mark.parametrize("protocol", ERAS)
async def test_server_logs_reach_the_per_server_logger_at_its_level(protocol: str, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG, logger="mcpstation.server")
    spec = ask(protocol=protocol, log_level="warning")
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[spec]), hooks=host()) as station:
            assert (await station.call_tool("mcp_ask_log_some", {})).ok
            await wait_until(lambda: any(r.name == "mcpstation.server.ask" for r in caplog.records))
    records = [r for r in caplog.records if r.name == "mcpstation.server.ask"]
    assert [(r.levelno, r.getMessage()) for r in records] == [(logging.WARNING, "warning-message")]


@pytest.mark.parametrize("protocol", ERAS)
async def test_apply_log_level_leaves_servers_without_set_level_alone(protocol: str):

    spec = StdioServerSpec.model_validate(ask(protocol=protocol, log_level="error"))
    hooks = host()
    params = StdioServerParameters(command=sys.executable, args=[str(ASK_SERVER)])
    with anyio.fail_after(START_TIMEOUT_S):
        async with Client(params, mode=spec.sdk_mode, **hooks.client_kwargs(spec)) as client:  # type: ignore[arg-type]
            # MCPServer declares no logging capability (legacy) and modern sessions carry the level per request
            assert await hooks.apply_log_level(client, spec) is False
            await hooks.session_started(spec, client)
            assert (await client.call_tool("log_some", {})).content[0].text == "logged"  # type: ignore[union-attr]
