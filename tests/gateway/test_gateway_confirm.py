"""The gateway asks its client to confirm a confirm-tier call through elicitation, for a direct call
and for a code-mode script's call alike; a client that cannot be asked is refused."""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from gateway_helpers import CALL_TIMEOUT_S, http_gateway
from mcp.client import Client, ClientRequestContext
from outcome_server import build_outcome_server
from station_helpers import inproc

from mcpstation import StationConfig

pytestmark = pytest.mark.anyio

PAGE = "https://example.com/"


def config(opened: list[str]) -> StationConfig:
    spec = inproc("o", server=build_outcome_server(opened=opened))
    return StationConfig(servers=(spec,), station={"code_mode": "on"}, policy={"confirm_tools": ["o/open_page"]})


class Person:
    """A client's person: answers every elicitation with `action`, keeping the messages."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.messages: list[str] = []

    async def __call__(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.messages.append(params.message)
        return types.ElicitResult(action=self.action)  # type: ignore[arg-type]


async def test_an_accepted_elicitation_runs_the_call_directly_and_from_a_script():
    opened: list[str] = []
    person = Person("accept")
    code = f'(await mcp_o_open_page(url="{PAGE}"))'
    async with (
        http_gateway(config(opened)) as (_, url),
        Client(url, mode="legacy", elicitation_callback=person) as client,
    ):
        with anyio.fail_after(CALL_TIMEOUT_S):
            direct = await client.call_tool("mcp_o_open_page", {"url": PAGE})
            scripted = await client.call_tool("mcp_run_code", {"code": code})
    assert not direct.is_error and not scripted.is_error, scripted.content
    assert scripted.structured_content is not None and scripted.structured_content["value"] == f"opened {PAGE}"
    assert len(person.messages) == 2
    assert person.messages[0].startswith("Run 'mcp_o_open_page' (server 'o') for gateway:local with")
    assert "from code-mode run" in person.messages[1]
    assert opened == [PAGE, PAGE]


async def test_a_declined_elicitation_refuses_the_call():
    opened: list[str] = []
    async with (
        http_gateway(config(opened)) as (_, url),
        Client(url, mode="legacy", elicitation_callback=Person("decline")) as client,
    ):
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await client.call_tool("mcp_o_open_page", {"url": PAGE})
    assert result.is_error and isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "'mcp_o_open_page' needs a person's confirmation, and the call was declined"
    assert opened == []


async def test_a_client_without_elicitation_is_refused_as_unaskable():
    opened: list[str] = []
    async with http_gateway(config(opened)) as (_, url), Client(url) as client:
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await client.call_tool("mcp_o_open_page", {"url": PAGE})
    assert result.is_error and isinstance(result.content[0], types.TextContent)
    assert "this caller cannot be asked" in result.content[0].text
    assert opened == []
