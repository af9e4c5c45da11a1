"""`UserGrants`: each user's own authorization of a `user-oauth` upstream, kept sealed in the store.

Signing in (once per user and upstream) is `user_sign_in.SignIns`: the SDK's authorization code
flow for that user, answered with the URL they open.

Using a grant. `access_token` answers the user's current access token from memory, else from
their sealed record (`user_records.SealedUserStorage`), refreshing it when it is near expiry or the
upstream refused it. A refresh happens once: one lock per (user, upstream) in this process, then
the store's lock across replicas (`Store.exclusive`), and after each the record is read again, so a
refresh another task or replica made meanwhile (its rotated refresh token saved) is used instead of
refreshing twice. A refresh refused with `invalid_grant` (the grant was revoked) forgets that
user's tokens for that upstream only and asks them to sign in again (`NeedsAuthorization`).

What is stored, per (user issuer, user subject, server): one row whose `sealed` field holds the
tokens, their expiry, a registered client, and the authorization server's token and revocation
endpoints, encrypted (`sealing.Sealer`). The caller's own token to the station is never involved.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import anyio
import httpx2
from anyio.abc import TaskGroup
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import BaseModel, SecretStr, ValidationError

from mcpstation.config.models import AnyServerSpec
from mcpstation.errors import ServerError
from mcpstation.host.oauth.exchange import RequestGuard, TokenFailure, UpstreamTokenError, json_object
from mcpstation.host.oauth.sealing import Sealer, SealError
from mcpstation.host.oauth.user_records import (
    GrantKey,
    SealedUserStorage,
    User,
    UserOAuthStore,
    server_url,
)
from mcpstation.host.oauth.user_sign_in import SignIns

logger = logging.getLogger(__name__)

EXPIRY_MARGIN_S = 30.0  # an access token this close to its expiry is refreshed before use
REQUEST_TIMEOUT_S = 10.0  # one request to the upstream or its authorization server


class NeedsAuthorization(UpstreamTokenError):
    """The user holds no usable grant for the upstream (never signed in, or it was revoked)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, TokenFailure.REFUSED)


@dataclass(frozen=True, slots=True)
class Connection:
    """One of a user's own upstream authorizations, as they see it listed."""

    server: str
    server_url: str
    connected: bool  # holds tokens (False: registered, but signed out or revoked)
    expires_at: datetime | None
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "server_url": self.server_url,
            "connected": self.connected,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(slots=True)
class _Held:
    token: SecretStr
    expires_at: float  # epoch seconds; refreshed before this
    url: str  # the server URL it was issued for


class UserGrants:
    """Sign-in, tokens, refresh, listing and revocation of users' own upstream grants."""

    def __init__(
        self,
        store: UserOAuthStore | None,
        sealer: Callable[[], Sealer],
        public_url: Callable[[], str | None],
        *,
        guard: RequestGuard | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._store = store
        self._sealer = sealer
        self._guard = guard
        self._transport = transport
        self.sign_ins = SignIns(public_url, lambda auth: self._http(auth), self._signed_in)
        self._held: dict[GrantKey, _Held] = {}
        self._refused: dict[GrantKey, str] = {}  # the access token an upstream refused, per grant
        self._locks: dict[GrantKey, anyio.Lock] = {}
        self.refreshes = 0  # refresh requests sent, for tests and status

    def bind(self, task_group: TaskGroup | None) -> None:
        self.sign_ins.bind(task_group)

    def storage(self, user: User, spec: AnyServerSpec) -> SealedUserStorage:
        """The user's sealed record for `spec`.

        Raises:
            NeedsAuthorization: the station has no store, or no sealing key.
        """
        if self._store is None:
            raise NeedsAuthorization(f"server {spec.name!r} needs a store to keep each user's authorization")
        try:
            sealer = self._sealer()
        except ValueError as exc:
            raise NeedsAuthorization(str(exc)) from None
        return SealedUserStorage(self._store, sealer, user, spec.name, server_url(spec))

    # -- using a grant ------------------------------------------------------------------------------

    async def access_token(self, user: User, spec: AnyServerSpec) -> SecretStr:
        """The user's access token for `spec`, refreshed once across replicas when needed.

        Raises:
            NeedsAuthorization: no grant, or the grant was revoked (its tokens are forgotten).
            UpstreamTokenError: the authorization server could not be reached or refused otherwise.
        """
        key: GrantKey = (user, spec.name)
        url = server_url(spec)
        held = self._usable(key, url)
        if held is not None:
            return held
        async with self._locks.setdefault(key, anyio.Lock()):
            held = self._usable(key, url)
            if held is not None:
                return held
            storage = self.storage(user, spec)
            if (token := self._adopt(key, url, await storage.record())) is not None:
                return token
            async with storage.exclusive():
                record = await storage.record()  # another replica may have refreshed meanwhile
                if (token := self._adopt(key, url, record)) is not None:
                    return token
                return await self._refresh(key, spec, storage, record)

    def forget(self, key: GrantKey, token: SecretStr) -> None:
        """The upstream refused `token`: the next `access_token` refreshes (unless it was replaced)."""
        held = self._held.get(key)
        if held is not None and held.token.get_secret_value() == token.get_secret_value():
            del self._held[key]
        self._refused[key] = token.get_secret_value()

    def _usable(self, key: GrantKey, url: str) -> SecretStr | None:
        """The token held for `key`, if it is still fresh and was issued for the server at `url` (an
        entry whose URL changed never gets the old server's token)."""
        held = self._held.get(key)
        return held.token if held is not None and held.url == url and held.expires_at > time.time() else None

    def _adopt(self, key: GrantKey, url: str, record: dict[str, Any]) -> SecretStr | None:
        """The record's access token if it is fresh and was not refused; kept in memory."""
        tokens = record.get("tokens")
        access = tokens.get("access_token") if isinstance(tokens, dict) else None
        expires_at = record.get("expires_at")
        keep_until = float(expires_at) - EXPIRY_MARGIN_S if isinstance(expires_at, int | float) else math.inf
        if not isinstance(access, str) or keep_until <= time.time() or self._refused.get(key) == access:
            return None
        token = SecretStr(access)
        self._held[key] = _Held(token, keep_until, url)
        return token

    async def _refresh(
        self, key: GrantKey, spec: AnyServerSpec, storage: SealedUserStorage, record: dict[str, Any]
    ) -> SecretStr:
        user, server = key
        tokens = _parse(OAuthToken, record.get("tokens"))
        client = _client(spec, record)
        endpoint = record.get("token_endpoint")
        if tokens is None or client is None or not tokens.refresh_token or not isinstance(endpoint, str):
            await storage.forget_tokens()
            raise NeedsAuthorization(f"{user[1]!r} has not authorized server {server!r}")
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "client_id": client.client_id}
        if isinstance(record.get("resource"), str):
            form["resource"] = record["resource"]
        context = OAuthContext(
            server_url=storage.server_url,
            client_metadata=OAuthClientMetadata(redirect_uris=None),
            storage=storage,
            redirect_handler=None,
            callback_handler=None,
        )
        context.client_info = client
        form, headers = context.prepare_token_auth(form, {"Accept": "application/json"})
        self.refreshes += 1
        try:
            async with self._http() as http:
                response = await http.post(endpoint, data=form, headers=headers)
        except httpx2.HTTPError as exc:
            raise UpstreamTokenError(
                f"the token endpoint of server {server!r} could not be reached: {type(exc).__name__}",
                TokenFailure.UNREACHABLE,
            ) from None
        except ServerError as exc:  # the URL guard refused the endpoint
            raise UpstreamTokenError(str(exc), TokenFailure.UNREACHABLE) from None
        body = json_object(response)
        if response.status_code != 200 or body is None:
            error = (body or {}).get("error") or f"HTTP {response.status_code}"
            if error == "invalid_grant":
                await storage.forget_tokens()
                self._held.pop(key, None)
                logger.info(
                    "server %r: the grant of %r was revoked; they are asked to authorize again", server, user[1]
                )
                raise NeedsAuthorization(f"the authorization of {user[1]!r} for server {server!r} was revoked")
            raise UpstreamTokenError(
                f"the authorization server of {server!r} refused a refresh: {error}", TokenFailure.REFUSED
            )
        try:
            fresh = OAuthToken.model_validate(body)
        except ValidationError:
            raise UpstreamTokenError(
                f"the refresh answer for {server!r} is not a token", TokenFailure.MALFORMED
            ) from None
        if fresh.refresh_token is None:  # not rotated: the old one stays good
            fresh.refresh_token = tokens.refresh_token
        if fresh.scope is None:
            fresh.scope = tokens.scope
        await storage.set_tokens(fresh)  # the rotated refresh token, saved before anyone else refreshes
        self._refused.pop(key, None)
        token = self._adopt(key, storage.server_url, await storage.record())
        if token is None:
            raise UpstreamTokenError(f"the refreshed token for {server!r} is already expired", TokenFailure.MALFORMED)
        return token

    # -- signing in ---------------------------------------------------------------------------------

    async def authorization_url(self, user: User, spec: AnyServerSpec) -> str:
        """Where `user` authorizes `spec` (see `user_sign_in.SignIns`).

        Raises:
            UpstreamTokenError: no store or key, discovery or registration failed, or the station
                cannot receive callbacks.
        """
        return await self.sign_ins.authorization_url((user, spec.name), spec, self.storage(user, spec))

    async def complete(self, state: str, code: str | None, iss: str | None, error: str | None) -> tuple[User, str]:
        """See `SignIns.complete`.

        Raises:
            UnknownSignIn: no sign-in in progress here has that state.
            UpstreamTokenError: the authorization server said no, or the code exchange failed.
        """
        return await self.sign_ins.complete(state, code, iss, error)

    def _signed_in(self, key: GrantKey) -> None:
        self._held.pop(key, None)
        self._refused.pop(key, None)

    # -- listing and revoking -----------------------------------------------------------------------

    async def connections(self, user: User) -> list[Connection]:
        """The user's own authorizations, by server."""
        if self._store is None:
            return []
        found = []
        for row in await self._store.list_user_oauth(user):
            try:
                data = json.loads(self._sealer().open(row.sealed, (user[0], user[1], row.server)))
            except (SealError, ValueError):
                data = {}
            connected = isinstance(data, dict) and data.get("tokens") is not None
            found.append(Connection(row.server, row.server_url, connected, row.token_expires_at, row.updated_at))
        return found

    async def revoke(self, user: User, spec: AnyServerSpec) -> bool:
        """Forget the user's grant for `spec` (asking its authorization server to revoke the refresh
        token first, when it offers revocation); whether there was one."""
        storage = self.storage(user, spec)
        record = await storage.record()
        await self._revoke_upstream(spec, record)
        self._held.pop((user, spec.name), None)
        return await self._store.delete_user_oauth(user, spec.name) if self._store is not None else False

    async def forget_revoked(self, users: Iterable[User], server: str) -> list[User]:
        """Of `users`, those whose grant for `server` is gone from the store (revoked by another
        station on it), with their tokens held here forgotten. A user who authorized again since
        keeps theirs: the store is the truth.

        Raises:
            StoreError: the store could not be read.
        """
        if self._store is None:
            return []
        gone = []
        for user in {*users, *(who for who, name in self._held if name == server)}:
            if await self._store.get_user_oauth(user, server) is None:
                self._held.pop((user, server), None)
                gone.append(user)
        return gone

    async def forget_record(self, user: User, server: str) -> bool:
        """Forget the user's record for `server` without asking anyone (the server is no longer
        configured); whether there was one."""
        self._held.pop((user, server), None)
        return await self._store.delete_user_oauth(user, server) if self._store is not None else False

    async def _revoke_upstream(self, spec: AnyServerSpec, record: dict[str, Any]) -> None:
        endpoint = record.get("revocation_endpoint")
        tokens = _parse(OAuthToken, record.get("tokens"))
        client = _client(spec, record)
        if not isinstance(endpoint, str) or tokens is None or client is None:
            return
        token = tokens.refresh_token or tokens.access_token
        form = {"token": token, "client_id": client.client_id}
        context = OAuthContext(
            server_url=server_url(spec),
            client_metadata=OAuthClientMetadata(redirect_uris=None),
            storage=_NoStorage(),
            redirect_handler=None,
            callback_handler=None,
        )
        context.client_info = client
        form, headers = context.prepare_token_auth(form, {})
        try:
            async with self._http() as http:
                response = await http.post(endpoint, data=form, headers=headers)
            if response.status_code != 200:
                logger.warning("server %r: revoking a grant answered HTTP %d", spec.name, response.status_code)
        except (httpx2.HTTPError, ServerError) as exc:
            logger.warning("server %r: revoking a grant at its authorization server failed: %s", spec.name, exc)

    def _http(self, auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        hooks = {"request": [self._guard]} if self._guard is not None else {}
        return httpx2.AsyncClient(
            auth=auth, timeout=REQUEST_TIMEOUT_S, follow_redirects=False, transport=self._transport, event_hooks=hooks
        )


class _NoStorage:
    async def get_tokens(self) -> OAuthToken | None:
        return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        return None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        return None


_Model = TypeVar("_Model", bound=BaseModel)


def _client(spec: AnyServerSpec, record: dict[str, Any]) -> OAuthClientInformationFull | None:
    """The client a grant is refreshed and revoked as: the configured one (its secret as the config
    says now), else the one registered for this user."""
    auth = spec.auth
    if auth.client_id is None:
        return _parse(OAuthClientInformationFull, record.get("client_info"))
    secret = auth.client_secret.get_secret_value() if auth.client_secret is not None else None
    return OAuthClientInformationFull(
        client_id=auth.client_id,
        client_secret=secret,
        redirect_uris=None,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
    )


def _parse(model: type[_Model], raw: object) -> _Model | None:
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None
