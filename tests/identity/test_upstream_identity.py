"""Each upstream sees the user, never the caller's token (issue 23 §3): token exchange (RFC 8693).

A real OpenID provider (oidc-provider), a real station served over HTTP, and a real upstream MCP
server in its own process that verifies its own audience and records every request's headers.
alice and bob reach it as themselves with the station as actor; fifty concurrent calls make one
exchange; a 401 makes exactly one more; a failed exchange is a refusal that never reaches the
upstream with anything else; a caller who did not sign in is refused; the callers' own tokens
appear nowhere upstream, in the logs or in the store; an idle user's connection is closed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from identity_helpers import (
    USERS,
    VERSIONS,
    IdentityStation,
    Upstream,
    call_tool,
    running_provider,
    running_upstream,
    serving,
    station_socket,
)
from idp import STATION_CLIENT, stats
from pydantic import SecretStr

from mcpstation.config.models import Role
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller, Face, Principal

from idp import idp_missing  # isort: skip

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
WAIT_S = 30.0


def exchanging(upstream: Upstream, issuer: str, **fields: Any) -> dict[str, Any]:
    """A `jira` entry reached by token exchange at `issuer`, as the fixture provider's station client."""
    return {
        "name": "jira",
        "transport": "streamable_http",
        "url": upstream.url,
        "auth": {
            "upstream": "token-exchange",
            "issuer": issuer,
            "client_id": STATION_CLIENT[0],
            "client_secret": STATION_CLIENT[1],
            "scopes": ["jira:read"],
        },
        **fields,
    }


@asynccontextmanager
async def world_with_upstream(tmp_path: Path, **fields: Any) -> AsyncIterator[tuple[IdentityStation, Upstream]]:
    async with station_socket() as (sock, public_url), running_provider(public_url) as idp:
        async with running_upstream(idp, tmp_path) as upstream:
            spec = exchanging(upstream, idp.issuer, **fields)
            async with serving(tmp_path, sock, public_url, idp, [spec]) as world:
                yield world, upstream


def whoami(world: IdentityStation) -> str:
    names = [tool.name for tool in world.station.tools if tool.server == "jira"]
    assert names, "the shared connection listed no tools"
    return next(name for name in names if name.endswith("whoami"))


def signed_in(world: IdentityStation, sub: str, token: str) -> Caller:
    """The caller the gateway makes of `token` (the provider's, for `sub`), for direct pipeline calls."""
    principal = Principal(world.idp.issuer, sub, client_id="tester", subject_token=SecretStr(token))
    return Caller.signed_in(principal, Role.USER, Face.GATEWAY)


def files_under(folder: Path) -> bytes:
    """Every file under `folder` but the upstream's own record, concatenated."""
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.suffix != ".jsonl")


def upstream_saw_no_caller_token(upstream: Upstream, *tokens: str) -> None:
    for headers in upstream.requests():
        for value in headers.values():
            for token in tokens:
                assert token not in value


@pytest.mark.parametrize("version", VERSIONS)
async def test_alice_and_bob_each_reach_the_upstream_as_themselves_with_the_station_as_actor(
    tmp_path: Path, version: str, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    async with world_with_upstream(tmp_path) as (world, upstream):
        name = whoami(world)
        alice = await world.token("alice", USERS)
        bob = await world.token("bob", USERS)
        for sub, token in (("alice", alice), ("bob", bob)):
            is_error, text = await call_tool(world.gateway, token, version, name, {})
            assert not is_error, text
            seen = json.loads(text)
            assert seen["sub"] == sub
            assert seen["act"] == {"sub": STATION_CLIENT[0]}
            assert seen["aud"] == upstream.url
        assert {c["sub"] for c in upstream.bearer_claims()} == {"alice", "bob", STATION_CLIENT[0]}
        assert all(c["aud"] == upstream.url for c in upstream.bearer_claims())
        upstream_saw_no_caller_token(upstream, alice, bob)
        stored = files_under(tmp_path)  # the store's database and everything beside it
        assert alice.encode() not in stored and bob.encode() not in stored
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert alice not in logged and bob not in logged


async def test_fifty_concurrent_calls_make_one_exchange_and_a_401_makes_exactly_one_more(tmp_path: Path):
    async with world_with_upstream(tmp_path) as (world, upstream):
        name = whoami(world)
        alice = signed_in(world, "alice", await world.token("alice", USERS))
        before = (await stats(world.idp)).get(EXCHANGE, 0)
        results = []

        async def call() -> None:
            results.append(await world.station.call_tool(name, {}, caller=alice))

        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as tg:
                for _ in range(50):
                    tg.start_soon(call)
        assert [r.outcome for r in results] == [Outcome.OK] * 50
        assert (await stats(world.idp)).get(EXCHANGE, 0) == before + 1
        assert len(world.station.user_connections.open_for((world.idp.issuer, "alice"))) == 1

        await upstream.refuse_next("alice")
        result = await world.station.call_tool(name, {}, caller=alice)
        assert result.outcome is Outcome.OK, result.error
        assert (await stats(world.idp)).get(EXCHANGE, 0) == before + 2


async def test_a_failed_exchange_is_a_typed_refusal_and_nothing_else_reaches_the_upstream(tmp_path: Path):
    async with world_with_upstream(tmp_path) as (world, upstream):
        name = whoami(world)
        # a real token of the provider, but for another audience: the provider refuses to exchange it
        stray = await world.idp.user_token("alice", groups=(USERS,), resource=upstream.url, scope="mcp:tools")
        seen_before = len(upstream.requests())
        result = await world.station.call_tool(name, {}, caller=signed_in(world, "alice", stray))
        assert result.outcome is Outcome.REFUSED
        assert "no token for 'alice'" in (result.error or "")
        assert "invalid_grant" in (result.error or "")
        assert len(upstream.requests()) == seen_before  # no fallback to the station's own token
        upstream_saw_no_caller_token(upstream, stray)


async def test_a_caller_who_did_not_sign_in_is_refused_with_the_reason(tmp_path: Path):
    async with world_with_upstream(tmp_path) as (world, upstream):
        name = whoami(world)
        seen_before = len(upstream.requests())
        for caller in (Caller.library(), Caller.token("ci-bot", Role.ADMIN, Face.HTTP_API)):
            result = await world.station.call_tool(name, {}, caller=caller)
            assert result.outcome is Outcome.REFUSED
            assert "sign in with the organisation's identity provider" in (result.error or "")
        assert len(upstream.requests()) == seen_before
        async with world.http(world.station_tokens["admin"]) as http:
            answer = await http.post(f"/api/mcp/tools/{name}/call", json={"arguments": {}})
        assert "sign in" in answer.text


async def test_an_idle_users_connection_is_closed_and_the_next_call_opens_another(tmp_path: Path):
    async with world_with_upstream(tmp_path, idle_stop_s=0.5) as (world, _):
        name = whoami(world)
        alice = signed_in(world, "alice", await world.token("alice", USERS))
        assert (await world.station.call_tool(name, {}, caller=alice)).outcome is Outcome.OK
        user = (world.idp.issuer, "alice")
        [opened] = world.station.user_connections.open_for(user)
        with anyio.fail_after(WAIT_S):
            await opened.wait_stopped()
        assert world.station.user_connections.open_for(user) == []
        shared = world.station.connection("jira")
        assert shared.is_ready  # the shared connection is supervised as before, untouched
        assert (await world.station.call_tool(name, {}, caller=alice)).outcome is Outcome.OK


async def test_a_reload_that_changes_the_entry_closes_its_users_connections(tmp_path: Path):
    async with world_with_upstream(tmp_path) as (world, _):
        name = whoami(world)
        alice = signed_in(world, "alice", await world.token("alice", USERS))
        assert (await world.station.call_tool(name, {}, caller=alice)).outcome is Outcome.OK
        user = (world.idp.issuer, "alice")
        [opened] = world.station.user_connections.open_for(user)
        config = world.station.config
        changed = config.servers[0].model_copy(update={"call_timeout_s": 30.0})
        await world.station.reload(config.model_copy(update={"servers": (changed,)}))
        with anyio.fail_after(WAIT_S):
            await opened.wait_stopped()
        assert (await world.station.call_tool(name, {}, caller=alice)).outcome is Outcome.OK
        [reopened] = world.station.user_connections.open_for(user)
        assert reopened is not opened and reopened.spec.call_timeout_s == 30.0
