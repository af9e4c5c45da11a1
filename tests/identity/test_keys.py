"""Each issuer's signing keys: fetched once for many tokens, again on rotation within seconds, never
in a storm, forgotten after their TTL once removed, kept while the provider is down, fetched
without blocking the event loop, and only through the URL guard."""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import jwt
import pytest
from identity_helpers import USERS
from idp import TestIdp, idp_missing

from mcpstation.config.models import AuthSettings
from mcpstation.identity import AccessTokenVerifier, GuardedFetch, InvalidToken
from mcpstation.policy import UrlGuard

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

STATION = "http://127.0.0.1:1"  # the audience the tokens name; nothing listens there, nothing needs to
LOOPBACK_ALLOWED = UrlGuard(allowed_hosts=("127.0.0.1",))


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingFetch:
    """The station's guarded fetch, counting what it was asked for."""

    def __init__(self, guard: UrlGuard = LOOPBACK_ALLOWED) -> None:
        self.inner = GuardedFetch(guard)
        self.urls: list[str] = []

    async def __call__(self, url: str) -> Any:
        self.urls.append(url)
        return await self.inner(url)

    def count(self, suffix: str) -> int:
        return sum(1 for url in self.urls if url.endswith(suffix))


def verifier_for(idp: TestIdp, fetch: Any) -> AccessTokenVerifier:
    auth = AuthSettings(public_url=STATION, issuers=[{"issuer": idp.issuer, "algorithms": ["ES256"]}])
    return AccessTokenVerifier(auth, fetch)


@asynccontextmanager
async def provider() -> AsyncIterator[TestIdp]:
    idp = TestIdp(STATION)
    await idp.start()
    try:
        yield idp
    finally:
        await idp.stop()


async def test_a_hundred_concurrent_tokens_cold_fetch_the_keys_once():
    async with provider() as idp:
        fetch = CountingFetch()
        verifier = verifier_for(idp, fetch)
        tokens = [await idp.user_token(f"user{i}", groups=(USERS,)) for i in range(5)] * 20
        subjects: list[str] = []

        async def verify(token: str) -> None:
            subjects.append((await verifier.verify(token)).principal.subject)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for token in tokens:
                    group.start_soon(verify, token)
    assert len(subjects) == 100
    assert fetch.count("/jwks") == 1 and fetch.count("/.well-known/oauth-authorization-server") == 1


async def test_a_rotated_key_is_accepted_within_seconds():
    async with provider() as idp:
        verifier = AccessTokenVerifier(
            AuthSettings(
                public_url=STATION,
                issuers=[{"issuer": idp.issuer, "algorithms": ["ES256"]}],
                jwks_refresh_debounce_s=1.0,
            ),
            CountingFetch(),
        )
        await verifier.verify(await idp.user_token("alice"))
        await idp.rotate()
        rotated = await idp.user_token("alice")
        with anyio.fail_after(5):  # the debounce window, plus a fetch
            while True:
                try:
                    verified = await verifier.verify(rotated)
                    break
                except InvalidToken:
                    await anyio.sleep(0.1)
    assert verified.principal.subject == "alice"
    claims = jwt.decode(rotated, options={"verify_signature": False})
    assert verified.principal.expires_at == claims["exp"]  # what an exchanged token may not outlive


async def test_a_thousand_random_key_ids_cause_at_most_one_fetch_per_window():
    async with provider() as idp:
        fetch = CountingFetch()
        clock = Clock()
        verifier = AccessTokenVerifier(
            AuthSettings(
                public_url=STATION,
                issuers=[{"issuer": idp.issuer, "algorithms": ["ES256"]}],
                jwks_refresh_debounce_s=5.0,
            ),
            fetch,
            clock=clock,
        )
        await verifier.verify(await idp.user_token("alice"))
        refused = 0
        for round_ in range(2):
            clock.now += 5.0 * round_  # the first thousand in the window of the first fetch, the next in another
            for _ in range(1000):
                try:
                    await verifier.verify(idp.sign({"sub": "mallory"}, kid=secrets.token_hex(6)))
                except InvalidToken:
                    refused += 1
    assert refused == 2000
    assert fetch.count("/jwks") == 2  # the first fetch (whose window covers the first thousand), one more after


async def test_a_removed_key_stops_validating_after_the_ttl_while_the_key_set_is_kept_fresh():
    async with provider() as idp:
        clock = Clock()
        verifier = AccessTokenVerifier(
            AuthSettings(
                public_url=STATION,
                issuers=[{"issuer": idp.issuer, "algorithms": ["ES256"]}],
                jwks_ttl_s=60.0,
                jwks_refresh_debounce_s=5.0,
            ),
            CountingFetch(),
            clock=clock,
        )
        old = await idp.user_token("alice")
        await verifier.verify(old)
        await idp.rotate()
        clock.now += 30.0
        assert (await verifier.verify(old)).principal.subject == "alice"  # within the TTL: still known
        clock.now += 31.0
        with pytest.raises(InvalidToken, match="not one of the issuer's signing keys"):
            await verifier.verify(old)


async def test_an_outage_keeps_the_last_good_keys_and_is_logged_once(caplog: pytest.LogCaptureFixture):
    async with provider() as idp:
        clock = Clock()
        fetch = CountingFetch()
        verifier = AccessTokenVerifier(
            AuthSettings(
                public_url=STATION,
                issuers=[{"issuer": idp.issuer, "algorithms": ["ES256"]}],
                jwks_ttl_s=60.0,
                jwks_refresh_debounce_s=5.0,
            ),
            fetch,
            clock=clock,
        )
        token = await idp.user_token("alice")
        await verifier.verify(token)
        await idp.stop()
        caplog.set_level(logging.WARNING, "mcpstation.identity")
        for _ in range(3):
            clock.now += 61.0  # past the TTL each time: a fetch is tried, and fails
            assert (await verifier.verify(token)).principal.subject == "alice"
    assert fetch.count("/jwks") == 4
    outage = [r for r in caplog.records if "could not be fetched" in r.getMessage()]
    assert len(outage) == 1 and "keeping its 1 last good keys" in outage[0].getMessage()


async def test_fetching_keys_never_blocks_the_event_loop():
    delay_s = 1.0
    async with await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0) as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        issuer = f"http://127.0.0.1:{port}"

        async def slow_keys(stream: anyio.abc.ByteStream) -> None:
            async with stream:
                await stream.receive()
                await anyio.sleep(delay_s)  # the slow identity provider under test, not a wait for an outcome
                body = b'{"keys": []}'
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                await stream.send(head.encode() + body)

        verifier = AccessTokenVerifier(
            AuthSettings(
                public_url=STATION, issuers=[{"issuer": issuer, "algorithms": ["ES256"], "jwks_uri": f"{issuer}/jwks"}]
            ),
            GuardedFetch(LOOPBACK_ALLOWED),
        )
        ticks = 0
        done = anyio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, slow_keys)
            group.start_soon(tick)
            with anyio.fail_after(10), pytest.raises(InvalidToken):
                await verifier.verify(_es256_labelled(issuer))
            done.set()
            group.cancel_scope.cancel()
    assert ticks >= 20  # the loop kept running while the fetch waited on the provider


def _es256_labelled(issuer: str) -> str:
    """A token of `issuer` labelled ES256: verifying it looks its key up, which fetches the key set."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    claims = {"iss": issuer, "sub": "x", "aud": STATION, "exp": 4102444800}
    return f"{part({'alg': 'ES256', 'typ': 'at+jwt', 'kid': 'k'})}.{part(claims)}.{part({})}"


async def test_keys_are_fetched_only_through_the_url_guard(caplog: pytest.LogCaptureFixture):
    async with provider() as idp:
        fetch = CountingFetch(UrlGuard())  # the default guard: internal addresses refused
        verifier = verifier_for(idp, fetch)
        caplog.set_level(logging.WARNING, "mcpstation.identity")
        with pytest.raises(InvalidToken):
            await verifier.verify(await idp.user_token("alice"))
    assert any("URL guard refused" in r.getMessage() for r in caplog.records)
