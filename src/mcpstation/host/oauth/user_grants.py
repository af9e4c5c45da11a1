"""`UserGrants`: each user's own authorization of a `user-oauth` upstream, kept sealed in the store.

Signing in (once per user and upstream). The SDK's `OAuthClientProvider` runs the authorization
code flow for that user: Protected Resource Metadata and authorization-server discovery, the
configured client (or dynamic registration), PKCE S256, `resource` = the upstream (RFC 8707), and
the code exchange. `authorization_url` starts it in the station's task group and answers as soon
as the SDK shows the URL; the flow then waits (up to `AUTHORIZATION_TIMEOUT_S`) for the user's
browser to come back to `{public_url}/oauth/callback`, which `complete` receives. The flow lives
in the process that started it: a callback reaching another replica is answered "unknown or
expired sign-in; start again", never completed for someone else.

Using a grant. `access_token` answers the user's current access token from memory, else from
their sealed record, refreshing it when it is near expiry or the upstream refused it. A refresh
happens once: one lock per (user, upstream) in this process, then the store's lock across replicas
(`Store.exclusive`), and after each the record is read again, so a refresh another task or
replica made meanwhile (its rotated refresh token saved) is used instead of refreshing twice. A
refresh refused with `invalid_grant` (the grant was revoked) forgets that user's tokens for that
upstream only and asks them to sign in again (`NeedsAuthorization`).

What is stored, per (user issuer, user subject, server): one row whose `sealed` field holds the
tokens, their expiry, the client, and the authorization server's token and revocation endpoints,
encrypted (`sealing.Sealer`). The caller's own token to the station is never involved.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from anyio.abc import TaskGroup
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, BaseModel, SecretStr, ValidationError

from mcpstation.config.models import AnyServerSpec
from mcpstation.errors import ServerError
from mcpstation.host.oauth.exchange import RequestGuard, TokenFailure, UpstreamTokenError
from mcpstation.host.oauth.loopback import AUTHORIZATION_TIMEOUT_S
from mcpstation.host.oauth.providers import CLIENT_NAME, _ConfiguredClient
from mcpstation.host.oauth.sealing import Sealer, SealError
from mcpstation.host.oauth.storage import REFRESH_LOCK_TIMEOUT_S, RecordStorage
from mcpstation.store.records import UserOAuth

logger = logging.getLogger(__name__)

USER_OAUTH = "user-oauth"
CALLBACK_PATH = "/oauth/callback"
EXPIRY_MARGIN_S = 30.0  # an access token this close to its expiry is refreshed before use
URL_TIMEOUT_S = 30.0  # discovery and registration, until the authorization URL is known
REQUEST_TIMEOUT_S = 10.0  # one request to the upstream or its authorization server
FINISH_TIMEOUT_S = 30.0  # how long the callback page waits for the code exchange to end
PROBE_PROTOCOL = "2025-11-25"  # the version the sign-in's first request names (the SDK then sends `resource`)

User = tuple[str, str]
GrantKey = tuple[User, str]  # ((issuer, subject), server)


class NeedsAuthorization(UpstreamTokenError):
    """The user holds no usable grant for the upstream (never signed in, or it was revoked)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, TokenFailure.REFUSED)


class UnknownSignIn(Exception):
    """A callback whose `state` names no sign-in in progress in this process."""


class UserOAuthStore(Protocol):
    """What per-user grants need of the station's store (`mcpstation.store.Store` implements it)."""

    async def get_user_oauth(self, user: User, server: str) -> UserOAuth | None: ...
    async def list_user_oauth(self, user: User) -> tuple[UserOAuth, ...]: ...
    async def set_user_oauth(
        self, user: User, server: str, server_url: str, sealed: str, expires_at: datetime | None
    ) -> None: ...
    async def delete_user_oauth(self, user: User, server: str) -> bool: ...
    def exclusive(self, name: str, *, timeout_s: float) -> AbstractAsyncContextManager[None]: ...


def is_user_oauth(spec: AnyServerSpec) -> bool:
    return spec.auth.upstream == USER_OAUTH


def server_url(spec: AnyServerSpec) -> str:
    url: str = getattr(spec, "url", "")
    return url


class SealedUserStorage(RecordStorage):
    """The SDK `TokenStorage` protocol over one user's sealed `user_oauth` row for one server.

    A row kept for another server URL, or that does not open (another key, another row's record),
    reads as empty: the user signs in again.
    """

    def __init__(self, store: UserOAuthStore, sealer: Sealer, user: User, server: str, url: str) -> None:
        self.store = store
        self.sealer = sealer
        self.user = user
        self.server = server
        self.server_url = url

    def __repr__(self) -> str:
        return f"<SealedUserStorage {self.user[1]!r} {self.server!r}>"

    @property
    def _row(self) -> tuple[str, str, str]:
        return (self.user[0], self.user[1], self.server)

    async def clear(self) -> None:
        await self.store.delete_user_oauth(self.user, self.server)

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        # A digest of the row: names of any length and characters (PostgreSQL refuses NUL in text).
        digest = hashlib.sha256(json.dumps(self._row).encode()).hexdigest()
        return self.store.exclusive(f"user-oauth:{digest}", timeout_s=timeout_s)

    async def record(self) -> dict[str, Any]:
        """The whole opened record (tokens, expiry, client, endpoints)."""
        return await self._read()

    async def remember(self, **fields: Any) -> None:
        """Keep `fields` in the record beside what it holds."""
        await self._update(**fields)

    async def forget_tokens(self) -> None:
        """Drop the tokens, keep the client: the next sign-in reuses the registration."""
        data = await self._read()
        if data:
            await self._write({k: v for k, v in data.items() if k not in ("tokens", "expires_at")})

    async def _read(self) -> dict[str, Any]:
        row = await self.store.get_user_oauth(self.user, self.server)
        if row is None or row.server_url != self.server_url:
            return {}
        try:
            data = json.loads(self.sealer.open(row.sealed, self._row))
        except (SealError, ValueError) as exc:
            logger.warning("the sealed OAuth record of %r for %r does not open (%s); ignoring it", *self._row[1:], exc)
            return {}
        return data if isinstance(data, dict) else {}

    async def _update(self, **changes: Any) -> None:
        await self._write((await self._read()) | changes)

    async def _write(self, data: dict[str, Any]) -> None:
        expires_at = data.get("expires_at")
        expiry = datetime.fromtimestamp(expires_at, UTC) if isinstance(expires_at, int | float) else None
        sealed = self.sealer.seal(json.dumps(data).encode(), self._row)
        await self.store.set_user_oauth(self.user, self.server, self.server_url, sealed, expiry)


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


class _SignIn:
    """One authorization in progress for one user and upstream."""

    def __init__(self, key: GrantKey) -> None:
        self.key = key
        self.url: str | None = None
        self.state: str | None = None
        self.error: str | None = None
        self.result: AuthorizationCodeResult | None = None
        self.url_known = anyio.Event()
        self.answered = anyio.Event()
        self.finished = anyio.Event()
        self.deadline = anyio.current_time() + AUTHORIZATION_TIMEOUT_S


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
        self._public_url = public_url
        self._guard = guard
        self._transport = transport
        self._task_group: TaskGroup | None = None
        self._held: dict[GrantKey, _Held] = {}
        self._refused: dict[GrantKey, str] = {}  # the access token an upstream refused, per grant
        self._locks: dict[GrantKey, anyio.Lock] = {}
        self._signing_in: dict[GrantKey, _SignIn] = {}
        self._by_state: dict[str, _SignIn] = {}
        self.refreshes = 0  # refresh requests sent, for tests and status

    def bind(self, task_group: TaskGroup | None) -> None:
        self._task_group = task_group

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
        body = _json(response)
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
        """Where `user` authorizes `spec`: a sign-in in progress, or a new one started.

        Raises:
            UpstreamTokenError: discovery or registration failed, or the station cannot receive callbacks.
        """
        key: GrantKey = (user, spec.name)
        pending = self._signing_in.get(key)
        if pending is None or pending.finished.is_set() or pending.deadline <= anyio.current_time():
            pending = self._start(key, spec)
        with anyio.move_on_after(URL_TIMEOUT_S):
            await pending.url_known.wait()
        if pending.url is None:
            raise UpstreamTokenError(
                f"the sign-in to server {spec.name!r} could not start: {pending.error or 'no answer in time'}",
                TokenFailure.UNREACHABLE,
            )
        return pending.url

    def _start(self, key: GrantKey, spec: AnyServerSpec) -> _SignIn:
        public_url = self._public_url()
        if public_url is None or self._task_group is None:
            raise UpstreamTokenError(
                f"server {spec.name!r}: the station cannot receive sign-ins (auth.public_url unset, or not serving)",
                TokenFailure.UNREACHABLE,
            )
        storage = self.storage(key[0], spec)
        sign_in = _SignIn(key)
        self._signing_in[key] = sign_in
        self._task_group.start_soon(self._sign_in, sign_in, spec, storage, public_url.rstrip("/") + CALLBACK_PATH)
        return sign_in

    async def _sign_in(self, sign_in: _SignIn, spec: AnyServerSpec, storage: SealedUserStorage, redirect: str) -> None:
        provider = self._provider(sign_in, spec, storage, redirect)
        probe = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROBE_PROTOCOL}
        try:
            with anyio.fail_after(URL_TIMEOUT_S + AUTHORIZATION_TIMEOUT_S + FINISH_TIMEOUT_S):
                async with self._http(auth=provider) as http:
                    await http.post(server_url(spec), json=probe, headers=headers)
            stored, _, _ = await storage.get_all()
            if stored is None:
                sign_in.error = "no token was issued"
            else:
                self._held.pop(sign_in.key, None)
                self._refused.pop(sign_in.key, None)
                logger.info("server %r: %r authorized the station", spec.name, sign_in.key[0][1])
        except Exception as exc:  # boundary: a sign-in that fails is reported to its user, never a crash
            sign_in.error = f"{type(exc).__name__}: {exc}"
            logger.warning("server %r: the sign-in of %r failed: %s", spec.name, sign_in.key[0][1], sign_in.error)
        finally:
            sign_in.url_known.set()
            sign_in.finished.set()
            if self._signing_in.get(sign_in.key) is sign_in:
                del self._signing_in[sign_in.key]
            if sign_in.state is not None:
                self._by_state.pop(sign_in.state, None)

    def _provider(
        self, sign_in: _SignIn, spec: AnyServerSpec, storage: SealedUserStorage, redirect: str
    ) -> OAuthClientProvider:
        auth = spec.auth
        secret = auth.client_secret.get_secret_value() if auth.client_secret is not None else None
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(auth.scopes) or None,
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
        sdk_storage: RecordStorage | _ConfiguredClient = storage
        if auth.client_id is not None:
            sdk_storage = _ConfiguredClient(
                storage,
                OAuthClientInformationFull(
                    client_id=auth.client_id,
                    client_secret=secret,
                    redirect_uris=[AnyUrl(redirect)],
                    token_endpoint_auth_method="client_secret_basic" if secret else "none",
                ),
            )
            sdk_storage.metadata = metadata
        provider: OAuthClientProvider

        async def on_redirect(url: str) -> None:
            context = provider.context
            found = context.oauth_metadata
            registered = context.client_info if auth.client_id is None else None  # a configured one stays in config
            await storage.remember(
                client_info=registered.model_dump(mode="json", exclude_none=True) if registered else None,
                token_endpoint=str(found.token_endpoint) if found else None,
                revocation_endpoint=str(found.revocation_endpoint) if found and found.revocation_endpoint else None,
                resource=context.get_resource_url(),
            )
            state = parse_qs(urlsplit(url).query).get("state", [None])[0]
            if state is None:
                raise UpstreamTokenError("the authorization URL carries no state", TokenFailure.MALFORMED)
            sign_in.url, sign_in.state = url, state
            self._by_state[state] = sign_in
            sign_in.url_known.set()

        async def on_callback() -> AuthorizationCodeResult:
            with anyio.fail_after(AUTHORIZATION_TIMEOUT_S):
                await sign_in.answered.wait()
            assert sign_in.result is not None
            return sign_in.result

        provider = OAuthClientProvider(
            server_url=server_url(spec),
            client_metadata=metadata,
            storage=sdk_storage,
            redirect_handler=on_redirect,
            callback_handler=on_callback,
        )
        return provider

    async def complete(self, state: str, code: str | None, iss: str | None, error: str | None) -> tuple[User, str]:
        """The browser came back to the callback: finish the sign-in `state` names; its user and server.

        Raises:
            UnknownSignIn: no sign-in in progress here has that state.
            UpstreamTokenError: the authorization server said no, or the code exchange failed.
        """
        sign_in = self._by_state.pop(state, None)
        if sign_in is None or sign_in.answered.is_set():
            raise UnknownSignIn("unknown or expired sign-in: start it again from your client or the console")
        user, server = sign_in.key
        sign_in.result = AuthorizationCodeResult(code=code or "", state=state, iss=iss)
        sign_in.answered.set()
        with anyio.move_on_after(FINISH_TIMEOUT_S):
            await sign_in.finished.wait()
        if error is not None:
            raise UpstreamTokenError(f"the authorization server said {error!r}", TokenFailure.REFUSED)
        if sign_in.error is not None or not sign_in.finished.is_set():
            raise UpstreamTokenError(
                f"the sign-in to server {server!r} failed: {sign_in.error or 'it did not finish'}", TokenFailure.REFUSED
            )
        return user, server

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


def _json(response: httpx2.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
