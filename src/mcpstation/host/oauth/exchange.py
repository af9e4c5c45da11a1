"""Tokens the station gets for an upstream at that upstream's authorization server, one per user.

`UpstreamTokens` (one per station) asks an authorization server's token endpoint (found in its
RFC 8414 or OpenID metadata) for two kinds of token, authenticated as the station's client there
(client_secret_basic):

* `exchange`: RFC 8693 token exchange of a signed-in user's own access token (the subject token)
  for one naming the upstream (`resource`, RFC 8707), so the upstream sees that user (`sub`) with
  the station as actor (`act`), never the user's token itself;
* `own`: the client credentials grant, the station as itself (what it lists a server's catalog with
  when that server has no credentials of its own).

Each token is cached by its `TokenKey` (who, which upstream, which scopes) until shortly before it
expires, never past the subject token's own expiry (an exchanged token does not outlive the
sign-in it came from), and minted once for all who ask at the same time: fifty concurrent calls by one user make
one exchange. `forget` drops a token an upstream refused, unless a newer one replaced it already,
so concurrent refusals cause one new exchange, not one each. Nothing here logs or keeps a subject
token; a failure is an `UpstreamTokenError`, never a fallback to another credential.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from pydantic import SecretStr

from mcpstation.errors import ServerError

logger = logging.getLogger(__name__)

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
REQUEST_TIMEOUT_S = 10.0  # one metadata or token request
EXPIRY_MARGIN_S = 30.0  # a cached token this close to its expiry is minted again
DEFAULT_LIFETIME_S = 300.0  # a token whose answer says no `expires_in` is kept this long

RequestGuard = Callable[[httpx2.Request], Awaitable[None]]


class TokenFailure(enum.StrEnum):
    """Why no token came."""

    UNREACHABLE = "unreachable"  # the authorization server or its metadata could not be reached
    REFUSED = "refused"  # its token endpoint said no (an OAuth error)
    MALFORMED = "malformed"  # its answer was not a token response


class UpstreamTokenError(Exception):
    """No token for an upstream: `failure` says why; the message names the server, never a token."""

    def __init__(self, message: str, failure: TokenFailure) -> None:
        self.failure = failure
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class TokenClient:
    """The station's client at an authorization server."""

    issuer: str
    client_id: str
    client_secret: SecretStr


@dataclass(frozen=True, slots=True)
class TokenKey:
    """What a cached token is for: a user (`(issuer, subject)`; None: the station itself), an
    upstream resource, and the scopes asked for there."""

    user: tuple[str, str] | None
    resource: str
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Cached:
    token: SecretStr
    expires_at: float


class UpstreamTokens:
    """Minting, caching and forgetting upstream tokens (see the module docstring)."""

    def __init__(
        self,
        *,
        guard: RequestGuard | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        """`guard` judges every request before it is sent (the station's URL guard); `transport` is for tests."""
        self._guard = guard
        self._transport = transport
        self._cache: dict[TokenKey, _Cached] = {}
        self._locks: dict[TokenKey, anyio.Lock] = {}
        self._endpoints: dict[str, str] = {}
        self.minted = 0  # token requests answered with a token, for tests and status

    async def exchange(
        self, client: TokenClient, key: TokenKey, subject_token: SecretStr, *, not_after: float | None = None
    ) -> SecretStr:
        """A token naming `key.resource` for `key.user`, exchanged (RFC 8693) for `subject_token`.

        `not_after` is when the subject token expires (seconds since the epoch, its `exp`): the
        exchanged token is not used past it, whatever its own lifetime.

        Raises:
            UpstreamTokenError: the authorization server could not be reached or refused.
        """
        form = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "subject_token": subject_token.get_secret_value(),
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "resource": key.resource,
        }
        return await self._token(client, key, form, not_after)

    async def own(self, client: TokenClient, key: TokenKey) -> SecretStr:
        """A token naming `key.resource` for the station itself (client credentials).

        Raises:
            UpstreamTokenError: the authorization server could not be reached or refused.
        """
        return await self._token(client, key, {"grant_type": "client_credentials", "resource": key.resource})

    def forget(self, key: TokenKey, token: SecretStr) -> None:
        """Drop `key`'s cached token if it is still `token` (an upstream refused it)."""
        cached = self._cache.get(key)
        if cached is not None and cached.token.get_secret_value() == token.get_secret_value():
            del self._cache[key]

    def forget_user(self, user: tuple[str, str]) -> None:
        """Drop every token cached for `user`."""
        for key in [k for k in self._cache if k.user == user]:
            del self._cache[key]

    async def _token(
        self, client: TokenClient, key: TokenKey, form: dict[str, str], not_after: float | None = None
    ) -> SecretStr:
        cached = self._fresh(key)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            cached = self._fresh(key)  # minted by whoever held the lock before us
            if cached is not None:
                return cached
            if key.scopes:
                form = {**form, "scope": " ".join(key.scopes)}
            answer = await self._post(client, form)
            token = answer.get("access_token")
            if not isinstance(token, str) or not token:
                raise UpstreamTokenError(
                    f"the token endpoint of {client.issuer} answered without an access token", TokenFailure.MALFORMED
                )
            lifetime = answer.get("expires_in")
            lifetime_s = float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else DEFAULT_LIFETIME_S
            keep_s = max(lifetime_s - EXPIRY_MARGIN_S, 1.0)
            if not_after is not None:  # never past the subject token's expiry (at or before now: not kept)
                keep_s = min(keep_s, not_after - time.time())
            secret = SecretStr(token)
            self._cache[key] = _Cached(secret, anyio.current_time() + keep_s)
            self.minted += 1
            return secret

    def _fresh(self, key: TokenKey) -> SecretStr | None:
        cached = self._cache.get(key)
        if cached is None or cached.expires_at <= anyio.current_time():
            return None
        return cached.token

    async def _post(self, client: TokenClient, form: dict[str, str]) -> dict[str, Any]:
        endpoint = await self._endpoint(client.issuer)
        auth = (client.client_id, client.client_secret.get_secret_value())
        try:
            async with self._http() as http:
                response = await http.post(endpoint, data=form, auth=auth, headers={"Accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise UpstreamTokenError(
                f"the token endpoint of {client.issuer} could not be reached: {type(exc).__name__}",
                TokenFailure.UNREACHABLE,
            ) from None
        except ServerError as exc:  # the guard refused the endpoint
            raise UpstreamTokenError(str(exc), TokenFailure.UNREACHABLE) from None
        body = json_object(response)
        if response.status_code != 200 or body is None:
            error = (body or {}).get("error") or f"HTTP {response.status_code}"
            detail = (body or {}).get("error_description")
            said = f"{error}: {detail}" if detail else str(error)
            raise UpstreamTokenError(f"the authorization server {client.issuer} refused: {said}", TokenFailure.REFUSED)
        return body

    async def _endpoint(self, issuer: str) -> str:
        """The token endpoint in `issuer`'s metadata (RFC 8414, else OpenID), cached for the station's life."""
        known = self._endpoints.get(issuer)
        if known is not None:
            return known
        base = issuer.rstrip("/")
        try:
            async with self._http() as http:
                for path in METADATA_PATHS:
                    response = await http.get(base + path, headers={"Accept": "application/json"})
                    endpoint = (
                        (json_object(response) or {}).get("token_endpoint") if response.status_code == 200 else None
                    )
                    if isinstance(endpoint, str) and endpoint.startswith(("http://", "https://")):
                        self._endpoints[issuer] = endpoint
                        return endpoint
        except httpx2.HTTPError as exc:
            raise UpstreamTokenError(
                f"the metadata of {issuer} could not be fetched: {type(exc).__name__}", TokenFailure.UNREACHABLE
            ) from None
        except ServerError as exc:  # the guard refused the metadata URL
            raise UpstreamTokenError(str(exc), TokenFailure.UNREACHABLE) from None
        raise UpstreamTokenError(f"{issuer} publishes no token endpoint in its metadata", TokenFailure.UNREACHABLE)

    def _http(self) -> httpx2.AsyncClient:
        hooks = {"request": [self._guard]} if self._guard is not None else {}
        return httpx2.AsyncClient(
            timeout=REQUEST_TIMEOUT_S, follow_redirects=False, transport=self._transport, event_hooks=hooks
        )


def json_object(response: httpx2.Response) -> dict[str, Any] | None:
    """The response's body as a JSON object, or None when it is not one."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
