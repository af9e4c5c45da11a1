"""OAuth credentials kept in the store: round trip, refresh, and never shown.

Runs on SQLite and, when one answers, on PostgreSQL (`$MCPSTATION_TEST_PG_URL`, see
`tests/store/store_helpers.py`); otherwise the PostgreSQL cases are skipped with the reason.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_helpers import serve_http
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from oauth_world import RESOURCE, AuthWorld, concurrent_gets, consenting_browser, spec
from protected_server import ProtectedServer
from protected_server import consenting_browser as loopback_browser
from pydantic import AnyUrl
from store_helpers import PG_URL_ENV_VAR, postgres_url, run_admin

from mcpstation import Station
from mcpstation.config.models import OAuthSettings, StationConfig, StreamableHttpServerSpec
from mcpstation.host import Host
from mcpstation.host.oauth import OAuthProviders, StoreTokenStorage
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

FLOW_TIMEOUT_S = 30.0
SENTINEL = "sentinel-oauth-5d1e-do-not-print"


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        async with await Store.open(data_dir=tmp_path / "data") as opened:
            yield opened
        return
    url, reason = await postgres_url()
    if url is None:
        pytest.skip(f"PostgreSQL not reachable (set {PG_URL_ENV_VAR}): {reason}")
    schema = f"mcps_test_{uuid.uuid4().hex[:12]}"
    try:
        async with await Store.open(url, schema=schema) as opened:
            yield opened
    finally:
        await run_admin(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _stale_tokens(storage: StoreTokenStorage) -> None:
    await storage.set_tokens(OAuthToken(access_token="stale", refresh_token="r0", expires_in=1))
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    )


async def test_tokens_round_trip_through_the_store(store: Store) -> None:
    storage = StoreTokenStorage(store, "remote", RESOURCE)
    await storage.set_tokens(OAuthToken(access_token="a", refresh_token="r", expires_in=60))
    await storage.set_client_info(OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://x/cb")]))

    again = StoreTokenStorage(store, "remote", RESOURCE)
    tokens = await again.get_tokens()
    assert tokens is not None and (tokens.access_token, tokens.refresh_token) == ("a", "r")
    client_info = await again.get_client_info()
    assert client_info is not None and client_info.client_id == "c"
    expiry = await again.get_token_expiry()
    assert expiry is not None and time.time() < expiry <= time.time() + 60
    assert await StoreTokenStorage(store, "other", RESOURCE).get_tokens() is None

    # The server moved: what was issued for the old URL is not sent to the new one, then replaced.
    moved = StoreTokenStorage(store, "remote", "https://elsewhere.example/mcp")
    assert await moved.get_tokens() is None and await moved.get_client_info() is None
    await moved.set_tokens(OAuthToken(access_token="b"))
    assert await again.get_tokens() is None
    assert await moved.get_client_info() is None and await moved.get_token_expiry() is None

    await moved.clear()
    assert await store.get_oauth("remote") is None


async def test_an_expired_stored_token_is_refreshed_not_reauthorized(store: Store, tmp_path: Path) -> None:
    world = AuthWorld()
    await _stale_tokens(StoreTokenStorage(store, "remote", RESOURCE))

    async def nobody(url: str) -> None:
        raise AssertionError("asked to authorize although a refresh token was stored")

    auth = OAuthProviders(tmp_path, store=store, redirect_handler=nobody)(spec())
    assert auth is not None
    with anyio.fail_after(FLOW_TIMEOUT_S):
        async with world.client(auth) as http:
            assert (await http.get(RESOURCE)).status_code == 200
    assert world.counts.get("refresh_token") == 1 and "resource" in world.counts
    kept = await store.get_oauth("remote")
    assert kept is not None and kept.tokens is not None and kept.tokens["refresh_token"] == "r1"
    assert not (tmp_path / "remote.json").exists()  # no token file beside the store


async def test_concurrent_requests_of_two_sessions_refresh_once(store: Store, tmp_path: Path) -> None:
    world = AuthWorld()
    await _stale_tokens(StoreTokenStorage(store, "remote", RESOURCE))
    providers = OAuthProviders(tmp_path, store=store, redirect_handler=consenting_browser)
    auths = [providers(spec()), providers(spec())]
    assert None not in auths

    with anyio.fail_after(FLOW_TIMEOUT_S):
        statuses = await concurrent_gets(world, auths, 4)

    assert statuses == [200] * 8
    assert world.counts.get("refresh_token") == 1 and "authorization_code" not in world.counts


async def test_a_stored_client_keeps_its_registered_redirect_port(store: Store, tmp_path: Path) -> None:
    world = AuthWorld()
    storage = StoreTokenStorage(store, "remote", RESOURCE)
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="dyn-client", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    )
    shown: list[str] = []

    async def refuse(url: str) -> None:
        shown.append(url)
        raise RuntimeError("nobody is there")

    auth = OAuthProviders(tmp_path, store=store, redirect_handler=refuse)(spec(OAuthSettings()))
    assert auth is not None
    with anyio.fail_after(FLOW_TIMEOUT_S), pytest.raises(Exception, match=r"cannot listen|nobody is there") as raised:
        async with world.client(auth) as http:
            await http.get(RESOURCE)
    assert "register" not in world.counts
    # Either port 1 could not be opened (not root), or the URL shown redirects to it.
    registered = "http://127.0.0.1:1/callback"
    assert registered in str(raised.value) or "redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback" in shown[0]


async def test_secrets_are_not_readable_from_status(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpstation")
    async with serve_http(ProtectedServer(None, access_token=SENTINEL)) as url:
        server = StreamableHttpServerSpec(name="remote", url=url, oauth=OAuthSettings())
        config = StationConfig(servers=(server,))
        providers = OAuthProviders(tmp_path, store=store, redirect_handler=loopback_browser)
        host = Host.from_config(config, auth_provider_factory=providers)
        with anyio.fail_after(FLOW_TIMEOUT_S):
            async with Station(config, hooks=host, store=store) as station:
                status = station.status()
                assert [s.state for s in status.servers] == ["READY"]
                outputs = [json.dumps(status.to_dict()), repr(status), repr(station)]

    kept = await store.get_oauth("remote")
    assert kept is not None and kept.tokens is not None and kept.tokens["access_token"] == SENTINEL
    outputs += [repr(kept), str(kept), repr(providers.storage_for(server))]
    outputs += [repr(action) for action in await store.list_actions()]
    outputs.append(caplog.text)
    assert not [output for output in outputs if SENTINEL in output]
