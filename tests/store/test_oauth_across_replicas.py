"""An expired OAuth token is refreshed once across replicas, and a person asked to sign in once.

Each replica is a station's own `Store` on one database (its own pool, so its own PostgreSQL
sessions and its own SQLite file descriptors) with its own `OAuthProviders`, or, without a store,
its own providers on one token directory. The authorization server rotates refresh tokens (each
works once) and answers slowly, so replicas that refreshed each for itself would spend the
refresh token twice and the loser would fall back to an interactive sign-in; replicas with no
tokens at all would each show the person an authorization URL.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from oauth_world import RESOURCE, AuthWorld, concurrent_gets, consenting_browser, spec
from pydantic import AnyUrl
from store_helpers import StoreTarget

from mcpstation.host.oauth import FileTokenStorage, OAuthProviders, StoreTokenStorage, token_file
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

FLOW_TIMEOUT_S = 30.0
REPLICAS = 3
REQUESTS_PER_REPLICA = 3
TOKEN_ENDPOINT_DELAY_S = 0.3  # long enough that every replica finds the token expired before one is back


class SlowTokenEndpoint(AuthWorld):
    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if str(request.url).endswith("/token"):
            await anyio.sleep(TOKEN_ENDPOINT_DELAY_S)
        return await super().handle(request)


async def never_asked(url: str) -> None:
    raise AssertionError("asked a person to sign in although a refresh token was stored")


async def stale(storage: StoreTokenStorage | FileTokenStorage) -> None:
    await storage.set_tokens(OAuthToken(access_token="stale", refresh_token="r0", expires_in=1))
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    )


class Person:
    """Signs in whenever asked, and counts how often that was."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, authorization_url: str) -> None:
        self.asked += 1
        await consenting_browser(authorization_url)


async def requests_through(world: AuthWorld, providers: list[OAuthProviders]) -> list[int]:
    """Every replica's requests at once; their statuses."""
    auths = [each(spec()) for each in providers]
    assert None not in auths
    with anyio.fail_after(FLOW_TIMEOUT_S):
        return await concurrent_gets(world, auths, REQUESTS_PER_REPLICA)


async def test_replicas_on_one_store_refresh_once(store_target: StoreTarget, tmp_path: Path) -> None:
    stores: list[Store] = []
    try:
        for _ in range(REPLICAS):
            stores.append(await store_target.open())
        await stale(StoreTokenStorage(stores[0], "remote", RESOURCE))
        world = SlowTokenEndpoint()
        providers = [
            OAuthProviders(tmp_path / f"unused-{n}", store=store, redirect_handler=never_asked)
            for n, store in enumerate(stores)
        ]

        statuses = await requests_through(world, providers)

        assert statuses == [200] * (REPLICAS * REQUESTS_PER_REPLICA)
        assert world.counts.get("refresh_token") == 1
        assert "authorization_code" not in world.counts and "register" not in world.counts
        kept = await stores[-1].get_oauth("remote")
        assert kept is not None and kept.tokens is not None and kept.tokens["refresh_token"] == "r1"
    finally:
        for store in stores:
            await store.aclose()


async def test_stations_on_one_token_directory_refresh_once(tmp_path: Path) -> None:
    directory = tmp_path / "oauth"
    await stale(FileTokenStorage(token_file(directory, "remote"), server_url=RESOURCE))
    world = SlowTokenEndpoint()
    providers = [OAuthProviders(directory, redirect_handler=never_asked) for _ in range(REPLICAS)]

    statuses = await requests_through(world, providers)

    assert statuses == [200] * (REPLICAS * REQUESTS_PER_REPLICA)
    assert world.counts.get("refresh_token") == 1 and "authorization_code" not in world.counts
    tokens = await FileTokenStorage(token_file(directory, "remote"), server_url=RESOURCE).get_tokens()
    assert tokens is not None and tokens.refresh_token == "r1"


async def test_replicas_without_tokens_ask_for_one_sign_in(store_target: StoreTarget, tmp_path: Path) -> None:
    stores: list[Store] = []
    try:
        for _ in range(REPLICAS):
            stores.append(await store_target.open())
        world = SlowTokenEndpoint()
        person = Person()
        providers = [OAuthProviders(tmp_path / f"unused-{n}", store=store, redirect_handler=person) for n, store in
                     enumerate(stores)]  # fmt: skip

        statuses = await requests_through(world, providers)

        assert statuses == [200] * (REPLICAS * REQUESTS_PER_REPLICA)
        assert person.asked == 1
        assert world.counts.get("authorization_code") == 1 and world.counts.get("register") == 1
    finally:
        for store in stores:
            await store.aclose()


async def test_stations_on_one_token_directory_ask_for_one_sign_in(tmp_path: Path) -> None:
    world = SlowTokenEndpoint()
    person = Person()
    providers = [OAuthProviders(tmp_path / "oauth", redirect_handler=person) for _ in range(REPLICAS)]

    statuses = await requests_through(world, providers)

    assert statuses == [200] * (REPLICAS * REQUESTS_PER_REPLICA)
    assert person.asked == 1 and world.counts.get("authorization_code") == 1
