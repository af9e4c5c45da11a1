"""A resource URI that no listing holds goes to its owner when a rule makes the owner clear
(template, an earlier answer or update notification, the scheme, the only server that can take
it), and is refused naming the candidates when none does. Real in-process servers that read any
URI they are asked for, answering with their own name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from station_helpers import START_TIMEOUT_S, inproc
from uri_server import UriServer

from mcpstation import Station, StationConfig
from mcpstation.outcomes import Outcome

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def station_of(*servers: UriServer) -> AsyncIterator[Station]:
    # Handshake era: a 2026-07-28 session listens to every update rather than subscribing.
    config = StationConfig(servers=[inproc(s.name, server=s.server, protocol="legacy") for s in servers])
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            yield station


async def read_by(station: Station, uri: str) -> str | None:
    """Which server answered a read of `uri` (None: refused, and the test looks at why)."""
    result = await station.read_resource(uri)
    return result.server if result.ok else None


async def test_a_template_names_the_owner_of_a_uri_no_listing_holds() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), template="notes://{id}")
    beta = UriServer("beta", listed=("shared://b",))
    async with station_of(alpha, beta) as station:
        assert await read_by(station, "notes://42") == "alpha"
    assert alpha.reads == ["notes://42"] and beta.reads == []


async def test_the_scheme_names_the_owner_when_only_one_server_uses_it() -> None:
    alpha = UriServer("alpha", listed=("alpha://list",))
    beta = UriServer("beta", listed=("beta://list",))
    async with station_of(alpha, beta) as station:
        assert await read_by(station, "beta://made-at-run-time") == "beta"
        assert await read_by(station, "ALPHA://Other") == "alpha"  # schemes are case-insensitive


async def test_the_only_server_that_can_subscribe_takes_a_subscription_and_then_owns_the_uri() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), subscribe=True)
    beta = UriServer("beta", listed=("shared://b",))
    async with station_of(alpha, beta) as station:
        subscribed = await station.subscribe_resource("mystery://q")
        assert subscribed.ok and subscribed.server == "alpha", subscribed
        assert alpha.subscriptions == ["mystery://q"]
        assert await read_by(station, "mystery://q") == "alpha"  # it answered for it: it owns it
        unsubscribed = await station.unsubscribe_resource("mystery://q")
        assert unsubscribed.ok and unsubscribed.server == "alpha" and alpha.subscriptions == []


async def test_an_unclear_owner_is_refused_naming_the_candidates() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), subscribe=True)
    beta = UriServer("beta", listed=("shared://b",), subscribe=True)
    async with station_of(alpha, beta) as station:
        result = await station.read_resource("shared://c")
        assert result.outcome is Outcome.NOT_FOUND
        assert "its owner is not clear" in (result.error or "") and "'alpha', 'beta'" in (result.error or "")
        subscribed = await station.subscribe_resource("elsewhere://x")
        assert subscribed.outcome is Outcome.NOT_FOUND and "can subscribe" in (subscribed.error or "")
    assert alpha.reads == beta.reads == [] and alpha.subscriptions == beta.subscriptions == []


async def test_an_update_notification_makes_its_sender_the_owner() -> None:
    alpha = UriServer("alpha", listed=("shared://a",), subscribe=True)
    beta = UriServer("beta", listed=("shared://b",), subscribe=True)
    async with station_of(alpha, beta) as station:
        assert (await station.subscribe_resource("shared://b")).server == "beta"  # listed: beta's
        with station.events.subscribe() as events:
            await beta.updated("shared://new")
            with anyio.fail_after(START_TIMEOUT_S):
                async for event in events:
                    if event.kind == "resource" and event.data.get("uri") == "shared://new":
                        break
        assert await read_by(station, "shared://new") == "beta"
    assert beta.reads == ["shared://new"] and alpha.reads == []


async def test_templates_of_two_servers_matching_leave_the_choice_to_an_earlier_answer() -> None:
    alpha = UriServer("alpha", template="files://{id}")
    beta = UriServer("beta", template="files://{id}.txt", subscribe=True)
    async with station_of(alpha, beta) as station:
        assert await read_by(station, "files://photo") == "alpha"  # only alpha's template matches
        both = await station.read_resource("files://a.txt")
        assert both.outcome is Outcome.NOT_FOUND and "'alpha', 'beta'" in (both.error or ""), both
        assert (await station.subscribe_resource("files://b.txt")).server == "beta"  # beta alone can subscribe
        with station.events.subscribe() as events:
            await beta.updated("files://a.txt")
            with anyio.fail_after(START_TIMEOUT_S):
                async for event in events:
                    if event.kind == "resource" and event.data.get("uri") == "files://a.txt":
                        break
        assert await read_by(station, "files://a.txt") == "beta"
