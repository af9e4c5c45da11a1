"""Seams of the gateway. A URI that no listing holds reaches its owner: a downstream client
subscribes to it (or a 2026-07-28 client listens for it), hears its updates, and unsubscribes (or
ends its stream, which ends the upstream subscription); an unclear owner is refused with the
candidates in the error. So do a prompt name and a completion reference that no listing holds.
An upstream's protocol error stays a protocol error. Real in-process servers behind a gateway
served over HTTP."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_helpers import http_gateway
from mcp.client import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from outcome_server import build_outcome_server
from prompt_server import PromptServer
from station_helpers import inproc
from uri_server import UriServer

from mcpstation import StationConfig

pytestmark = pytest.mark.anyio

CALL_TIMEOUT_S = 60.0


def config(*servers: UriServer) -> StationConfig:
    return StationConfig(servers=[inproc(s.name, server=s.server, protocol="legacy") for s in servers])


async def test_a_client_subscribes_through_the_gateway_to_a_uri_no_listing_holds() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), subscribe=True)
    beta = UriServer("beta", listed=("shared://b",))
    heard: list[str] = []
    updated = {"watched://x": anyio.Event(), "watched://y": anyio.Event()}

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))
            updated[str(message.params.uri)].set()

    async with http_gateway(config(alpha, beta)) as (_station, url):
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            with anyio.fail_after(CALL_TIMEOUT_S), warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                await client.subscribe_resource("watched://x")  # alpha alone can subscribe
                await client.subscribe_resource("watched://y")
                assert alpha.subscriptions == ["watched://x", "watched://y"]
                await alpha.updated("watched://x")
                await updated["watched://x"].wait()
                await client.unsubscribe_resource("watched://x")
                assert alpha.subscriptions == ["watched://y"]
                await alpha.updated("watched://x")  # no subscriber any more: not passed on
                await alpha.updated("watched://y")
                await updated["watched://y"].wait()
                assert heard == ["watched://x", "watched://y"]
                with pytest.raises(MCPError) as refused:
                    await client.read_resource("shared://c")  # both offer resources: not clear
    assert refused.value.error.message == "Resource not found"
    data = refused.value.error.data
    assert isinstance(data, dict) and "'alpha', 'beta'" in data["reason"], data
    assert beta.subscriptions == [] and alpha.reads == beta.reads == []


async def test_an_upstream_protocol_error_stays_one_through_the_gateway() -> None:
    """SEP-2322: a JSON-RPC error from the upstream reaches the client as that error (code, message),
    not as a tool result; a tool's own error result stays a result; a tool the caller does not have
    is a protocol error; a call the station refuses is a result the model can read."""
    config = StationConfig(servers=[inproc("o", server=build_outcome_server())])
    async with http_gateway(config) as (_station, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            with pytest.raises(MCPError) as refused:
                await client.call_tool("mcp_o_rpc_error", {})
            assert refused.value.error.code == types.INVALID_PARAMS
            assert refused.value.error.message == "no such widget"
            failed = await client.call_tool("mcp_o_tool_error", {})
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("mcp_o_tool_eror", {})
            guarded = await client.call_tool("mcp_o_open_page", {})  # no `url`: the argument check refuses
    assert failed.is_error and failed.content[0].text == "the tool could not do it"
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert unknown.value.error.message.startswith("no tool 'mcp_o_tool_eror'. Did you mean 'mcp_o_tool_error'")
    assert guarded.is_error and "url" in guarded.content[0].text


async def test_prompts_and_completions_no_listing_holds_reach_their_owner_through_the_gateway() -> None:
    alpha = PromptServer("alpha", prompts=("greet",), template="notes://{id}", completions=True)
    beta = PromptServer("beta", prompts=("greet",), template="files://{id}", completions=True)
    servers = [inproc(s.name, server=s.server) for s in (alpha, beta)]
    ask = {"name": "q", "value": ""}
    async with http_gateway(StationConfig(servers=servers)) as (_station, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            got = await client.get_prompt("mcp_beta_secret")  # the naming prefix says whose it is
            assert got.messages[0].content.text == "beta has secret"
            by_prefix = await client.complete(types.PromptReference(type="ref/prompt", name="mcp_alpha_secret"), ask)
            by_template = await client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="notes://7"), ask
            )
            assert by_prefix.completion.values == by_template.completion.values == ["alpha"]
            with pytest.raises(MCPError) as unclear:
                await client.complete(types.ResourceTemplateReference(type="ref/resource", uri="other://{x}"), ask)
    assert unclear.value.error.code == types.INVALID_PARAMS
    assert "its owner is not clear" in unclear.value.error.message and "'alpha', 'beta'" in unclear.value.error.message
    assert beta.gets == ["secret"] and alpha.completed == ["secret", "notes://7"]
    assert beta.completed == []


async def test_an_unclear_prompt_owner_is_a_protocol_error_naming_the_candidates_through_the_gateway() -> None:
    alpha = PromptServer("alpha", prompts=())
    beta = PromptServer("beta", prompts=())
    servers = [inproc(s.name, server=s.server) for s in (alpha, beta)]
    config = StationConfig(servers=servers, station={"naming": "bare"})
    async with http_gateway(config) as (_station, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S), pytest.raises(MCPError) as unclear:
            await client.get_prompt("secret")
    assert unclear.value.error.code == types.INVALID_PARAMS
    assert "'alpha', 'beta' (they offer prompts)" in unclear.value.error.message
    assert alpha.gets == beta.gets == []


async def test_a_modern_listen_stream_subscribes_upstream_while_it_lasts() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), subscribe=True)
    beta = UriServer("beta", listed=("shared://b",))
    async with http_gateway(config(alpha, beta)) as (_station, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with client.listen(resource_subscriptions=["watched://x", "shared://b"]) as stream:
                # alpha alone can subscribe, so it owns watched://x; beta cannot subscribe to its own
                # shared://b, which the stream therefore does not honor.
                assert list(stream.honored.resource_subscriptions or ()) == ["watched://x"]
                assert alpha.subscriptions == ["watched://x"] and beta.subscriptions == []
                await alpha.updated("watched://x")
                assert await stream.__anext__() == ResourceUpdated(uri="watched://x")
                unsubscribed = alpha.unsubscribed
            await unsubscribed.wait()  # the stream ended: its upstream subscription goes with it
            assert alpha.subscriptions == []
