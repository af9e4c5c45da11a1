"""Each trusted issuer's signing keys (its JWKS), fetched without blocking and cached with care.

* Cached for `[auth] jwks_ttl_s`: after that the next token fetches them again, so a key the
  issuer removed stops validating within one TTL.
* A token naming a key id the cache does not hold fetches the keys again, at most once per
  `jwks_refresh_debounce_s`: a rotated key is accepted within seconds, and a flood of random key
  ids causes no more fetches than one per window.
* One fetch at a time per issuer; tokens arriving meanwhile whose key is known are answered from
  the keys at hand rather than waiting.
* A failed fetch keeps the last good keys (logged once per outage): an issuer that is down does
  not lock its users out while their keys are still valid.
* Every fetch (metadata and keys) is asynchronous, bounded by `FETCH_TIMEOUT_S`, and goes
  through the station's URL guard first.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKSetError

from mcpstation.config.models import TrustedIssuer
from mcpstation.policy import UrlGuard

logger = logging.getLogger(__name__)

FETCH_TIMEOUT_S = 5.0  # one request for an issuer's metadata or keys
MAX_DOCUMENT_BYTES = 512 * 1024  # a metadata document or key set larger than this is refused

Fetch = Callable[[str], Awaitable[Any]]
"""GETs a URL and returns its JSON body; raises `KeyFetchError` when it cannot."""


class KeyFetchError(Exception):
    """An issuer's metadata or keys could not be fetched (refused by the guard, unreachable, not JSON)."""


class GuardedFetch:
    """`Fetch` over httpx2 (the SDK's HTTP client), each URL judged by the URL guard first."""

    def __init__(self, guard: UrlGuard, *, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.guard = guard
        self.transport = transport

    async def __call__(self, url: str) -> Any:
        verdict = await self.guard.check(url, purpose="fetch")
        if not verdict.allowed:
            raise KeyFetchError(f"the URL guard refused {url!r}: {verdict.reason}")
        try:
            with anyio.fail_after(FETCH_TIMEOUT_S):
                async with httpx2.AsyncClient(transport=self.transport, follow_redirects=False) as http:
                    response = await http.get(url, headers={"Accept": "application/json"})
                    body = await response.aread()
        except TimeoutError:
            raise KeyFetchError(f"{url} did not answer within {FETCH_TIMEOUT_S:g} s") from None
        except httpx2.HTTPError as exc:
            raise KeyFetchError(f"{url} could not be fetched: {exc}") from exc
        if response.status_code != 200:
            raise KeyFetchError(f"{url} answered HTTP {response.status_code}")
        if len(body) > MAX_DOCUMENT_BYTES:
            raise KeyFetchError(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
        try:
            return json.loads(body)
        except ValueError:
            raise KeyFetchError(f"{url} did not answer with JSON") from None


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where an issuer's metadata may be: RFC 8414 (path inserted after the host), then OpenID Connect."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return (
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    )


class IssuerKeys:
    """One issuer's signing keys by key id, as the module docstring describes."""

    def __init__(
        self,
        issuer: TrustedIssuer,
        fetch: Fetch,
        *,
        ttl_s: float,
        debounce_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.fetch = fetch
        self.ttl_s = ttl_s
        self.debounce_s = debounce_s
        self.clock = clock
        self.fetches = 0  # key-set fetches attempted (metadata lookups not counted)
        self._jwks_uri = issuer.jwks_uri
        self._keys: dict[str | None, PyJWK] = {}
        self._fetched_at: float | None = None  # last successful fetch
        self._attempted_at: float | None = None  # last fetch, successful or not
        self._failing = False
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"<IssuerKeys {self.issuer.issuer!r} keys={sorted(str(k) for k in self._keys)}>"

    async def key(self, kid: str | None) -> PyJWK | None:
        """The key named `kid` (a key set's only key when the token names none), or None."""
        now = self.clock()
        found = self._keys.get(kid)
        if found is not None and (self._fresh(now) or self._lock.locked()):
            return found
        if not self._lock.locked() and not self._may_fetch(now):
            return found  # within the window: the keys at hand (stale ones too) are the answer
        async with self._lock:  # fetch, or wait for the fetch under way and read its answer
            if self._may_fetch(self.clock()):  # nobody fetched while this waited
                await self._refresh()
        return self._keys.get(kid)

    def _fresh(self, now: float) -> bool:
        return self._fetched_at is not None and now - self._fetched_at < self.ttl_s

    def _may_fetch(self, now: float) -> bool:
        return self._attempted_at is None or now - self._attempted_at >= self.debounce_s

    async def _refresh(self) -> None:
        self._attempted_at = self.clock()
        self.fetches += 1
        try:
            keys = _by_kid(await self.fetch(await self._keys_url()))
        except KeyFetchError as exc:
            if not self._failing:
                count = len({id(key) for key in self._keys.values()})
                kept = f"keeping its {count} last good keys" if count else "no keys are known yet"
                logger.warning("signing keys of %s could not be fetched (%s); %s", self.issuer.issuer, exc, kept)
            self._failing = True
            return
        if self._failing:
            logger.info("signing keys of %s are fetched again", self.issuer.issuer)
        self._failing = False
        self._keys = keys
        self._fetched_at = self.clock()

    async def _keys_url(self) -> str:
        if self._jwks_uri is not None:
            return self._jwks_uri
        candidates = (self.issuer.metadata_url,) if self.issuer.metadata_url else metadata_urls(self.issuer.issuer)
        problems = []
        for url in candidates:
            try:
                document = await self.fetch(url)
            except KeyFetchError as exc:
                problems.append(str(exc))
                continue
            if not isinstance(document, dict) or document.get("issuer") != self.issuer.issuer:
                problems.append(f"{url} names another issuer")
                continue
            jwks_uri = document.get("jwks_uri")
            if isinstance(jwks_uri, str) and jwks_uri.startswith(("https://", "http://")):
                self._jwks_uri = jwks_uri
                return jwks_uri
            problems.append(f"{url} names no jwks_uri")
        raise KeyFetchError("; ".join(problems))


def _by_kid(document: Any) -> dict[str | None, PyJWK]:
    """The usable keys of a JWKS document by key id; a set of one key also answers to no key id."""
    if not isinstance(document, dict):
        raise KeyFetchError("the key set is not a JSON object")
    try:
        key_set = PyJWKSet.from_dict(document)
    except PyJWKSetError as exc:
        raise KeyFetchError(f"the key set holds no usable key: {exc}") from None
    keys: dict[str | None, PyJWK] = {key.key_id: key for key in key_set.keys if key.public_key_use in (None, "sig")}
    if len(keys) == 1:
        keys[None] = next(iter(keys.values()))
    return keys
