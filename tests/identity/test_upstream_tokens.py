"""`UpstreamTokens` against the real provider: what an exchanged token says, how long it is kept,
what is forgotten, and each way of failing, typed, without the subject token in any message."""

from __future__ import annotations

import time

import anyio
import jwt
import pytest
from identity_helpers import USERS, running_provider, station_socket
from idp import STATION_CLIENT, idp_missing
from pydantic import SecretStr

from mcpstation.host.oauth.exchange import (
    EXPIRY_MARGIN_S,
    TokenClient,
    TokenFailure,
    TokenKey,
    UpstreamTokenError,
    UpstreamTokens,
)

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

UPSTREAM = "http://127.0.0.1:1/mcp"  # a resource the provider accepts; nothing is sent there


async def test_an_exchanged_token_names_the_upstream_the_user_and_the_station_and_is_kept_until_near_expiry():
    async with station_socket() as (_, public_url), running_provider(public_url, {"access_ttl_s": 31}) as idp:
        client = TokenClient(idp.issuer, STATION_CLIENT[0], SecretStr(STATION_CLIENT[1]))
        subject = SecretStr(await idp.user_token("alice", groups=(USERS,), scope="mcp:tools"))
        tokens = UpstreamTokens()
        key = TokenKey((idp.issuer, "alice"), UPSTREAM, ("jira:read",))

        first = await tokens.exchange(client, key, subject)
        claims = jwt.decode(first.get_secret_value(), options={"verify_signature": False})
        assert (claims["aud"], claims["sub"], claims["act"]) == (UPSTREAM, "alice", {"sub": STATION_CLIENT[0]})
        assert claims["scope"] == "jira:read"
        assert (await tokens.exchange(client, key, subject)).get_secret_value() == first.get_secret_value()
        assert tokens.minted == 1

        tokens.forget(key, SecretStr("some other token"))  # not the cached one: nothing forgotten
        assert (await tokens.exchange(client, key, subject)).get_secret_value() == first.get_secret_value()
        tokens.forget(key, first)
        second = await tokens.exchange(client, key, subject)
        assert second.get_secret_value() != first.get_secret_value()
        assert tokens.minted == 2

        await anyio.sleep(31 - EXPIRY_MARGIN_S + 0.2)  # kept until EXPIRY_MARGIN_S before it expires
        await tokens.exchange(client, key, subject)
        assert tokens.minted == 3


async def test_each_failure_is_typed_and_never_shows_the_subject_token():
    async with station_socket() as (_, public_url), running_provider(public_url) as idp:
        subject_text = await idp.user_token("alice", groups=(USERS,), resource=UPSTREAM)  # not for the station
        subject = SecretStr(subject_text)
        key = TokenKey((idp.issuer, "alice"), UPSTREAM)
        tokens = UpstreamTokens()
        cases = [
            (TokenClient(idp.issuer, STATION_CLIENT[0], SecretStr(STATION_CLIENT[1])), TokenFailure.REFUSED),
            (TokenClient(idp.issuer, STATION_CLIENT[0], SecretStr("wrong")), TokenFailure.REFUSED),
            (TokenClient("http://127.0.0.1:9", "station", SecretStr("x")), TokenFailure.UNREACHABLE),
        ]
        for client, failure in cases:
            with pytest.raises(UpstreamTokenError) as caught:
                await tokens.exchange(client, key, subject)
            assert caught.value.failure is failure
            assert subject_text not in str(caught.value)
        assert tokens.minted == 0


async def test_an_exchanged_token_is_not_kept_past_the_subject_tokens_expiry():
    async with station_socket() as (_, public_url), running_provider(public_url) as idp:
        client = TokenClient(idp.issuer, STATION_CLIENT[0], SecretStr(STATION_CLIENT[1]))
        subject = SecretStr(await idp.user_token("alice", groups=(USERS,), scope="mcp:tools"))
        expires_at = jwt.decode(subject.get_secret_value(), options={"verify_signature": False})["exp"]
        assert expires_at - time.time() > EXPIRY_MARGIN_S + 60  # the exchanged token alone would be kept
        tokens = UpstreamTokens()
        key = TokenKey((idp.issuer, "alice"), UPSTREAM)

        await tokens.exchange(client, key, subject, not_after=expires_at)
        await tokens.exchange(client, key, subject, not_after=expires_at)
        assert tokens.minted == 1  # within both lifetimes: kept
        tokens.forget_user((idp.issuer, "alice"))
        soon = time.time() + 1.0  # as if the user's own token expired in a second
        await tokens.exchange(client, key, subject, not_after=soon)
        await tokens.exchange(client, key, subject, not_after=soon)
        assert tokens.minted == 2
        await anyio.sleep(1.2)
        await tokens.exchange(client, key, subject, not_after=soon)  # past it: not used, minted again
        assert tokens.minted == 3
