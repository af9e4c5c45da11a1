"""Each user authorizes the upstream once (issue 23 §3, `user-oauth`).

A real OpenID provider (oidc-provider), a real station served over HTTP, and a real upstream MCP
server in its own process that verifies its own audience, says where its authorization server is
(RFC 9728) and records every request's headers. The browser is played by following the
authorization URL through the provider as a named test user back to the station's callback.

alice and bob each authorize once, then reach the upstream as themselves; a user who has not is
refused with the URL; the tokens are sealed in the store; the callers' own tokens appear nowhere
upstream; a user lists and revokes only their own authorizations; a revoked grant asks only that
user again; concurrent refreshes on two replicas of one store send one refresh request, and the
rotated refresh token is what is kept.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import mcp_types as types
import pytest
from identity_helpers import (
    USERS,
    VERSIONS,
    IdentityStation,
    StoreAt,
    call_tool,
    running_upstream,
    serving,
    station_socket,
    user_oauth,
    user_oauth_world,
    whoami,
)
from idp import STATION_CLIENT, consent_as, revoke_grants, stats
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from pydantic import SecretStr
from replica_helpers import within
from store_helpers import require_postgres, run_admin

from mcpstation.config.models import Role, StreamableHttpServerSpec
from mcpstation.host.oauth.sealing import Sealer
from mcpstation.host.oauth.user_grants import UserGrants
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller, Face, Principal
from mcpstation.store import Store

from idp import idp_missing  # isort: skip

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

WAIT_S = 60.0
FOLLOW_WITHIN_S = (
    20.0  # another replica followed a change (it reads the log every 0.25 s on SQLite), on a loaded machine
)
REFRESH = "refresh_token"


def signed_in(served: IdentityStation, sub: str, token: str) -> Caller:
    principal = Principal(served.idp.issuer, sub, client_id="tester", subject_token=SecretStr(token))
    return Caller.signed_in(principal, Role.USER, Face.GATEWAY)


def authorization_url_in(text: str) -> str:
    start = text.index("http")
    return text[start:].split()[0]


async def authorize(served: IdentityStation, sub: str, token: str, name: str) -> None:
    """`sub` calls, is refused with the URL, and authorizes in the browser."""
    result = await served.station.call_tool(name, {}, caller=signed_in(served, sub, token))
    assert result.outcome is Outcome.REFUSED, result
    page = await consent_as(authorization_url_in(result.error or ""), sub)
    assert page.status_code == 200, page.text
    assert "authorized the station" in page.text


def database(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.rglob("mcpstation.db*") if p.is_file())


async def test_alice_and_bob_each_authorize_once_and_reach_the_upstream_as_themselves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with user_oauth_world(tmp_path) as (served, upstream):
        name = whoami(served)
        tokens = {sub: await served.token(sub, USERS) for sub in ("alice", "bob")}
        for sub, token in tokens.items():
            is_error, text = await call_tool(served.gateway, token, VERSIONS[-1], name, {})
            assert is_error
            assert "has not authorized it" in text
            url = authorization_url_in(text)
            assert "code_challenge_method=S256" in url
            assert "resource=" + upstream.url.replace(":", "%3A").replace("/", "%2F") in url
            page = await consent_as(url, sub)
            assert page.status_code == 200, page.text
        for version in VERSIONS:
            for sub, token in tokens.items():
                is_error, text = await call_tool(served.gateway, token, version, name, {})
                assert not is_error, text
                seen = json.loads(text)
                assert seen["sub"] == sub and seen["aud"] == upstream.url and seen["act"] is None
        for headers in upstream.requests():
            assert not any(token in value for value in headers.values() for token in tokens.values())
        assert {c["sub"] for c in upstream.bearer_claims()} == {"alice", "bob", STATION_CLIENT[0]}

        # sealed at rest: neither an upstream token nor a refresh token is in the database in clear
        sent = {h["authorization"].removeprefix("Bearer ") for h in upstream.requests() if "authorization" in h}
        stored = database(tmp_path)
        assert sent and not any(token.encode() in stored for token in sent)
        rows = sqlite3.connect(tmp_path / "mcpstation.db").execute("SELECT user_subject, sealed FROM user_oauth")
        sealed = dict(rows.fetchall())
        assert set(sealed) == {"alice", "bob"} and all(value.startswith("v1.") for value in sealed.values())
        assert not any(b"refresh_token" in value.encode() for value in sealed.values())
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not any(token in logged for token in [*tokens.values(), *sent])


async def test_a_user_lists_and_revokes_only_their_own_authorizations(tmp_path: Path) -> None:
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        bob = await served.token("bob", USERS)
        await authorize(served, "alice", alice, name)
        await authorize(served, "bob", bob, name)
        async with served.http(alice) as http:
            listed = (await http.get("/api/me/authorizations")).json()["authorizations"]
            assert [(a["server"], a["connected"]) for a in listed] == [("jira", True)]
            revoked = await http.delete("/api/me/authorizations/jira")
            assert revoked.status_code == 200 and revoked.json()["revoked"] is True
            assert (await http.get("/api/me/authorizations")).json()["authorizations"] == []
            started = await http.post("/api/me/authorizations/jira")
            assert started.status_code == 200 and "code_challenge" in started.json()["authorization_url"]
        result = await served.station.call_tool(name, {}, caller=signed_in(served, "alice", alice))
        assert result.outcome is Outcome.REFUSED and "Open this URL" in (result.error or "")
        result = await served.station.call_tool(name, {}, caller=signed_in(served, "bob", bob))
        assert result.outcome is Outcome.OK, result.error
        async with served.http(served.station_tokens["admin"]) as http:  # a station token has no user
            assert (await http.get("/api/me/authorizations")).status_code == 403
        async with served.http() as browser:  # the callback needs no token, and completes only a sign-in it made
            forged = await browser.get("/oauth/callback", params={"state": "forged", "code": "stolen"})
            assert forged.status_code == 400 and "unknown or expired sign-in" in forged.text
        other_bob = ("https://other-issuer.example", "bob")  # the same subject at another issuer is someone else
        assert await served.station.user_grants.connections(other_bob) == []
        # a server gone from the config: its user can still forget their record of it
        await served.station.reload(served.station.config.model_copy(update={"servers": ()}))
        async with served.http(bob) as http:
            assert (await http.delete("/api/me/authorizations/jira")).json()["revoked"] is True
            assert (await http.get("/api/me/authorizations")).json()["authorizations"] == []


async def test_a_refusal_gives_the_url_to_the_caller_and_keeps_it_out_of_the_audit_record(tmp_path: Path) -> None:
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        async with served.http(alice) as http:  # the API answers the caller: message and structured URL
            answer = (await http.post(f"/api/mcp/tools/{name}/call", json={})).json()
        assert answer["outcome"] == "refused"
        given = answer["structured"]["authorization_url"]
        assert given in answer["error"] and "code_challenge_method=S256" in given
        is_error, text = await call_tool(served.gateway, alice, VERSIONS[-1], name, {})  # and the gateway's
        assert is_error and "Open this URL" in text
        urls = {given, authorization_url_in(text)}
        states = {parse_qs(urlsplit(url).query)["state"][0] for url in urls}
        async with served.http(served.station_tokens["admin"]) as http:
            calls = (await http.get("/api/mcp/audit", params={"server": "jira", "kind": "calls"})).json()["calls"]
        refused = [c for c in calls if c["outcome"] == "refused" and c["subject"] == "alice"]
        assert len(refused) == 2  # both answers left the process after their records were committed
        for record in refused:
            assert "'jira'" in record["error"] and "has not authorized it" in record["error"]
            assert not any(secret in record["error"] for secret in [*urls, *states, "http"])
        stored = database(tmp_path)
        assert not any(state.encode() in stored for state in states)
        # the sign-in the URL names is still alice's to complete
        page = await consent_as(given, "alice")
        assert page.status_code == 200, page.text


async def test_a_revoked_grant_asks_only_that_user_again(tmp_path: Path) -> None:
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        bob = await served.token("bob", USERS)
        await authorize(served, "alice", alice, name)
        await authorize(served, "bob", bob, name)
        await revoke_grants(served.idp, "alice")  # the provider forgets alice's grant: her refresh fails
        grants = served.station.user_grants
        for sub in ("alice", "bob"):  # both access tokens refused upstream: each must refresh
            key = ((served.idp.issuer, sub), "jira")
            grants.forget(key, await grants.access_token(key[0], served.station.roster.spec("jira")))  # type: ignore[arg-type]
        served.station.user_connections.close_user((served.idp.issuer, "alice"), "jira")
        served.station.user_connections.close_user((served.idp.issuer, "bob"), "jira")
        result = await served.station.call_tool(name, {}, caller=signed_in(served, "alice", alice))
        assert result.outcome is Outcome.REFUSED
        assert "Open this URL" in (result.error or "")
        result = await served.station.call_tool(name, {}, caller=signed_in(served, "bob", bob))
        assert result.outcome is Outcome.OK, result.error
        assert json.loads(result.content[0].text)["sub"] == "bob"  # type: ignore[union-attr]


@pytest.fixture(params=["sqlite", "postgresql"])
async def shared_store(request: pytest.FixtureRequest) -> AsyncIterator[tuple[StoreAt | None, dict[str, Any] | None]]:
    """Where two replicas share their store (SQLite in the test's folder, or a PostgreSQL schema),
    and the `[auth]` settings that takes (PostgreSQL replicas share `token_key`)."""
    if request.param == "sqlite":
        yield None, None
        return
    url = await require_postgres()
    schema = f"mcps_test_{uuid.uuid4().hex[:12]}"
    try:
        yield (url, schema), {"token_key": "one key for every replica"}
    finally:
        await run_admin(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_revoke_closes_the_users_connection_on_another_replica_and_only_theirs(
    tmp_path: Path, shared_store: tuple[StoreAt | None, dict[str, Any] | None]
) -> None:
    store_at, auth = shared_store
    async with user_oauth_world(tmp_path, store_at=store_at, auth=auth) as (served, upstream):
        name = whoami(served)
        tokens = {sub: await served.token(sub, USERS) for sub in ("alice", "bob")}
        for sub, token in tokens.items():
            await authorize(served, sub, token, name)
        entry = user_oauth(upstream, served.idp.issuer)
        # a second replica on the same store, behind the same public URL (the tokens' audience)
        async with (
            station_socket() as (sock, _),
            serving(tmp_path, sock, served.url, served.idp, [entry], store_at=store_at, auth=auth) as other,
        ):
            assert other.station.follower is not None
            for sub, token in tokens.items():  # each opens their own connection there
                result = await other.station.call_tool(name, {}, caller=signed_in(other, sub, token))
                assert result.outcome is Outcome.OK, result.error
            alice, bob = ((served.idp.issuer, sub) for sub in ("alice", "bob"))
            assert other.station.user_connections.open_for(alice) and other.station.user_connections.open_for(bob)

            async with served.http(tokens["alice"]) as http:  # alice revokes on the first replica
                assert (await http.delete("/api/me/authorizations/jira")).json()["revoked"] is True

            async def closed_there() -> bool:
                return not other.station.user_connections.open_for(alice)

            await within(FOLLOW_WITHIN_S, "alice's connection on the other replica closed", closed_there)
            result = await other.station.call_tool(name, {}, caller=signed_in(other, "alice", tokens["alice"]))
            assert result.outcome is Outcome.REFUSED and "has not authorized it" in (result.error or ""), result
            assert other.station.user_connections.open_for(bob)
            result = await other.station.call_tool(name, {}, caller=signed_in(other, "bob", tokens["bob"]))
            assert result.outcome is Outcome.OK and json.loads(result.content[0].text)["sub"] == "bob"  # type: ignore[union-attr]


async def race_refreshes(
    served: IdentityStation,
    replicas: list[UserGrants],
    user: tuple[str, str],
    spec: StreamableHttpServerSpec,
    held: SecretStr,
) -> list[str]:
    """The upstream refused `held` on every replica; ten token requests on each at once send one
    refresh to the provider, and all get the same new token, returned once per request."""
    for grants in replicas:
        grants.forget((user, "jira"), held)
    before = (await stats(served.idp)).get(REFRESH, 0)
    got: list[str] = []

    async def use(grants: UserGrants) -> None:
        got.append((await grants.access_token(user, spec)).get_secret_value())

    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                for grants in replicas:
                    tg.start_soon(use, grants)
    assert (await stats(served.idp)).get(REFRESH, 0) == before + 1
    assert sum(grants.refreshes for grants in replicas) == 1
    assert len(set(got)) == 1 and got[0] != held.get_secret_value()
    return got


async def test_concurrent_refreshes_on_two_replicas_send_one_request_and_keep_the_rotated_token(
    tmp_path: Path,
) -> None:
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        await authorize(served, "alice", alice, name)
        spec = served.station.roster.spec("jira")
        assert isinstance(spec, StreamableHttpServerSpec)
        user = (served.idp.issuer, "alice")
        sealer = served.station._sealer()  # the same key file: a second replica on the same store
        async with await Store.open(data_dir=tmp_path) as other:
            replicas = [served.station.user_grants, UserGrants(other, lambda: sealer, lambda: served.url)]
            held = await replicas[0].access_token(user, spec)
            before_record = await replicas[0].storage(user, spec).record()
            got = await race_refreshes(served, replicas, user, spec, held)
            after_record = await replicas[1].storage(user, spec).record()
            assert after_record["tokens"]["refresh_token"] != before_record["tokens"]["refresh_token"]

            # the rotated refresh token is the one kept: the next refresh works (the provider would
            # treat a reused, rotated-away one as theft and revoke the grant)
            replicas[1].forget((user, "jira"), SecretStr(got[0]))
            again = await replicas[1].access_token(user, spec)
            assert again.get_secret_value() != got[0]
        result = await served.station.call_tool(name, {}, caller=signed_in(served, "alice", alice))
        assert result.outcome is Outcome.OK, result.error


async def test_concurrent_refreshes_on_two_replicas_of_one_postgresql_store_send_one_request(tmp_path: Path) -> None:
    url = await require_postgres()
    schema = f"mcps_test_{uuid.uuid4().hex[:12]}"
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        await authorize(served, "alice", alice, name)
        spec = served.station.roster.spec("jira")
        assert isinstance(spec, StreamableHttpServerSpec)
        user = (served.idp.issuer, "alice")
        record = await served.station.user_grants.storage(user, spec).record()  # alice's grant, moved to PostgreSQL
        sealer = Sealer.from_settings(SecretStr("one key for every replica"), None, in_memory=False)
        try:
            async with await Store.open(url, schema=schema) as first, await Store.open(url, schema=schema) as second:
                replicas = [UserGrants(store, lambda: sealer, lambda: served.url) for store in (first, second)]
                await replicas[0].storage(user, spec).remember(**record)
                held = SecretStr(record["tokens"]["access_token"])
                await race_refreshes(served, replicas, user, spec, held)
                kept = await replicas[1].storage(user, spec).record()
                assert kept["tokens"]["refresh_token"] != record["tokens"]["refresh_token"]
        finally:
            await run_admin(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_an_entry_whose_url_changed_never_gets_the_old_servers_token(tmp_path: Path) -> None:
    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        await authorize(served, "alice", alice, name)
        caller = signed_in(served, "alice", alice)
        assert (await served.station.call_tool(name, {}, caller=caller)).outcome is Outcome.OK
        async with running_upstream(served.idp, tmp_path) as moved:
            config = served.station.config
            changed = config.servers[0].model_copy(update={"url": moved.url})
            await served.station.reload(config.model_copy(update={"servers": (changed,)}))
            result = await served.station.call_tool(name, {}, caller=caller)
            assert result.outcome is Outcome.REFUSED, result
            assert "Open this URL" in (result.error or "")
            assert {c["sub"] for c in moved.bearer_claims()} <= {STATION_CLIENT[0]}  # listed as the station only
            # Back to the first server before the moved one stops: on SIGTERM uvicorn waits for every open
            # connection, and the station would hold its stream to the moved server until the world ends.
            await served.station.reload(config)


async def test_a_client_that_takes_url_elicitation_is_asked_to_open_the_authorization_url(tmp_path: Path) -> None:
    async def never_asked(ctx: Any, params: Any) -> Any:  # registering it declares form and URL elicitation
        raise AssertionError("the gateway answers with URLElicitationRequired, it does not push a request")

    async with user_oauth_world(tmp_path) as (served, _):
        name = whoami(served)
        alice = await served.token("alice", USERS)
        for version in ("2025-11-25", "2026-07-28"):
            mode = "legacy" if version == "2025-11-25" else version
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {alice}"}, timeout=30) as http:
                transport = streamable_http_client(served.gateway, http_client=http)
                async with Client(transport, mode=mode, elicitation_callback=never_asked) as client:
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool(name, {})
            assert refused.value.error.code == types.URL_ELICITATION_REQUIRED
            [elicitation] = UrlElicitationRequiredError.from_error(refused.value.error).elicitations
            assert elicitation.mode == "url" and "code_challenge_method=S256" in elicitation.url
        page = await consent_as(elicitation.url, "alice")
        assert page.status_code == 200, page.text
        is_error, text = await call_tool(served.gateway, alice, VERSIONS[-1], name, {})
        assert not is_error and json.loads(text)["sub"] == "alice"
