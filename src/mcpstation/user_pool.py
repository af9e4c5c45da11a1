"""`UserConnections`: each signed-in user's own connection to a server that sees each user.

A server with `[servers.NAME.auth] upstream = "token-exchange"` or `"user-oauth"` is reached by
each user as themselves: the router asks `connection_for(request)` before it sends, and gets the connection of
`(caller's issuer and subject, server)`, opened on demand (once for all of that user's concurrent
requests) and closed once it has gone the server's `idle_stop_s` without requests. Every HTTP
request on it carries a token exchanged (RFC 8693) for that user's own access token, which stays
in memory here only as long as the connection lives, and is never sent upstream.

A `user-oauth` connection carries instead the user's own access token for that upstream, from the
authorization they gave it once (`host.oauth.user_grants.UserGrants`); a user who has not (or whose
grant was revoked) is refused with the URL where they authorize it.

Before a request is sent the token is exchanged, or the user's grant found (and refreshed if
needed), so a failed exchange or a missing grant is the request's typed refusal
(`UpstreamIdentityError`), never a connection failure, and never a fallback to the server's
shared credentials. A caller who did not sign in with an identity provider (the library, the
CLI, a station token) is refused with that reason.

These connections are the shared connection's siblings, not its replacement: the pool still
supervises the shared one, which lists the catalog; nothing here touches it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable

import anyio
import httpx2
from anyio.abc import TaskGroup
from pydantic import SecretStr

from mcpstation.config.models import AnyServerSpec, StationSettings
from mcpstation.connection import ConnectionState, ServerConnection, SessionHooks
from mcpstation.errors import IdentityProblem, ServerUnavailable, UpstreamIdentityError, UsageError
from mcpstation.host.oauth.exchange import TokenClient, TokenFailure, TokenKey, UpstreamTokenError, UpstreamTokens
from mcpstation.host.oauth.minted import MintedTokenAuth
from mcpstation.host.oauth.upstream_hooks import (
    UserHooks,
    exchanges,
    per_user_spec,
    token_client,
    upstream_resource,
)
from mcpstation.host.oauth.user_grants import NeedsAuthorization, UserGrants
from mcpstation.host.oauth.user_records import is_user_oauth
from mcpstation.pipeline import Principal, Request

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0  # bound on closing every user's connections at shutdown
UserKey = tuple[tuple[str, str], str]  # ((issuer, subject), server)


class _Subject:
    """A user's newest own access token, held for their connection while it lives."""

    __slots__ = ("expires_at", "token")

    def __init__(self, token: SecretStr | None = None, expires_at: float | None = None) -> None:
        self.token = token
        self.expires_at = expires_at  # the token's `exp`: what is exchanged for it is not used past it


class UserConnections:
    """The per-user connections of the station's token-exchange servers."""

    def __init__(
        self,
        spec_of: Callable[[str], AnyServerSpec | None],
        settings: Callable[[], StationSettings],
        hooks: SessionHooks,
        tokens: UpstreamTokens,
        grants: UserGrants,
    ) -> None:
        self._spec_of = spec_of
        self._settings = settings
        self._hooks = hooks
        self.tokens = tokens
        self.grants = grants
        self._connections: dict[UserKey, ServerConnection] = {}
        self._subjects: dict[UserKey, _Subject] = {}  # each connection's user's newest own token
        self._locks: dict[UserKey, anyio.Lock] = {}
        self._task_group: TaskGroup | None = None
        self._opened = anyio.Event()

    def bind(self, task_group: TaskGroup | None) -> None:
        self._task_group = task_group

    def __len__(self) -> int:
        return len(self._connections)

    def open_for(self, user: tuple[str, str]) -> list[ServerConnection]:
        """`user`'s open connections."""
        return [c for (who, _), c in self._connections.items() if who == user]

    # -- the router's questions ---------------------------------------------------------------------

    def reaches_each_user(self, server: str) -> bool:
        """Whether requests to `server` go over each caller's own connection (token exchange, user-oauth)."""
        spec = self._spec_of(server)
        return spec is not None and (exchanges(spec) or is_user_oauth(spec))

    async def connection_for(self, request: Request) -> ServerConnection | None:
        """The caller's own connection to `request.server`, ready; None when that server is reached
        over its shared connection.

        Raises:
            UpstreamIdentityError: the caller did not sign in, has not authorized the server
                (user-oauth; the error carries the authorization URL), or no token could be had.
            ServerUnavailable: the caller's connection could not be opened.
        """
        spec = self._spec_of(request.server)
        if spec is None:
            return None
        client = token_client(spec)
        if client is None and not is_user_oauth(spec):
            return None
        principal = request.caller.principal
        mode = spec.auth.upstream
        if principal is None or not principal.from_identity_provider or principal.subject_token is None:
            raise UpstreamIdentityError(
                f"server {spec.name!r} is reached as each signed-in user ({mode}): sign in with "
                f"the organisation's identity provider to use it; a station token or a local caller cannot",
                IdentityProblem.NOT_SIGNED_IN,
                tool=request.target,
                server=spec.name,
            )
        key: UserKey = (principal.key, spec.name)
        if client is not None:
            make_auth = await self._exchanging(request, spec, client, key, principal)
        else:
            make_auth = await self._authorized(request, spec, key)
        connection = await self._opened_for(key, per_user_spec(spec), make_auth)
        with anyio.move_on_after(connection.startup_budget_s):
            await connection.settled.wait()
        if not connection.is_ready and connection.state in (ConnectionState.FAILED, ConnectionState.STARTING):
            self._close(key, connection)
            raise ServerUnavailable(
                f"server {spec.name!r} could not be reached as {principal.subject!r}: "
                f"{connection.error or 'it did not start in time'}",
                server=spec.name,
            )
        return connection

    async def _exchanging(
        self, request: Request, spec: AnyServerSpec, client: TokenClient, key: UserKey, principal: Principal
    ) -> Callable[[], httpx2.Auth]:
        """token-exchange: a token is exchanged for the caller's own before anything is opened."""
        subject = self._subjects.setdefault(key, _Subject())
        subject.token = principal.subject_token  # the newest of the user's tokens is what gets exchanged
        subject.expires_at = principal.expires_at
        assert principal.subject_token is not None
        token_key = TokenKey(principal.key, upstream_resource(spec), spec.auth.scopes)
        try:
            await self.tokens.exchange(client, token_key, principal.subject_token, not_after=principal.expires_at)
        except UpstreamTokenError as exc:
            raise _no_token(request, spec, principal.subject, exc) from exc

        def make_auth() -> httpx2.Auth:
            held = self._subjects.setdefault(key, _Subject(subject.token, subject.expires_at))

            async def mint() -> SecretStr:
                token = held.token
                if token is None:  # the connection is closing: nothing to act on
                    raise UpstreamTokenError("the user's connection is closed", TokenFailure.UNREACHABLE)
                return await self.tokens.exchange(client, token_key, token, not_after=held.expires_at)

            return MintedTokenAuth(mint, lambda token: self.tokens.forget(token_key, token), server=spec.name)

        return make_auth

    async def _authorized(self, request: Request, spec: AnyServerSpec, key: UserKey) -> Callable[[], httpx2.Auth]:
        """user-oauth: the caller's own grant, refreshed if needed, before anything is opened; a
        caller without one is refused with the URL where they authorize the server."""
        user = key[0]
        try:
            await self.grants.access_token(user, spec)
        except NeedsAuthorization as exc:
            try:
                url = await self.grants.authorization_url(user, spec)
            except UpstreamTokenError as failed:
                raise UpstreamIdentityError(
                    f"server {spec.name!r}: {exc}, and no sign-in could be started: {failed}",
                    IdentityProblem.NO_TOKEN,
                    tool=request.target,
                    server=spec.name,
                ) from failed
            raise UpstreamIdentityError(
                f"server {spec.name!r} acts as each user, and {user[1]!r} has not authorized it "
                "(or the authorization was revoked).",
                IdentityProblem.NEEDS_AUTHORIZATION,
                tool=request.target,
                server=spec.name,
                authorization_url=url,
            ) from exc
        except UpstreamTokenError as exc:
            raise _no_token(request, spec, user[1], exc) from exc

        def make_auth() -> httpx2.Auth:
            async def mint() -> SecretStr:
                return await self.grants.access_token(user, spec)

            return MintedTokenAuth(mint, lambda token: self.grants.forget((user, spec.name), token), server=spec.name)

        return make_auth

    async def _opened_for(
        self, key: UserKey, wanted: AnyServerSpec, make_auth: Callable[[], httpx2.Auth]
    ) -> ServerConnection:
        """`key`'s connection, opened unless one for `wanted` is open already (once for all who ask)."""
        connection = self._connections.get(key)
        if connection is not None and self._usable(connection, wanted):
            return connection
        async with self._locks.setdefault(key, anyio.Lock()):
            connection = self._connections.get(key)
            if connection is not None and self._usable(connection, wanted):
                return connection
            if connection is not None:  # its server's entry changed, or it failed
                subject = self._subjects.get(key)
                kept = (subject.token, subject.expires_at) if subject is not None else None
                self._close(key, connection)  # forgets its holder
                if kept is not None:
                    self._subjects[key] = _Subject(*kept)
            return self._open(key, wanted, make_auth())

    @staticmethod
    def _usable(connection: ServerConnection, wanted: AnyServerSpec) -> bool:
        return connection.spec == wanted and not connection.stopping and connection.state is not ConnectionState.FAILED

    def _open(self, key: UserKey, spec: AnyServerSpec, auth: httpx2.Auth) -> ServerConnection:
        if self._task_group is None:
            raise UsageError("the station is not running: use `async with Station(...) as station:`")
        connection = ServerConnection(spec, self._settings(), hooks=UserHooks(self._hooks, auth))
        self._connections[key] = connection
        logger.info("server %r: opening a connection for %r", spec.name, key[0][1])
        self._task_group.start_soon(connection.run, name=f"mcpstation server {spec.name!r} for a user")
        self._opened.set()
        return connection

    def _close(self, key: UserKey, connection: ServerConnection) -> None:
        connection.stop()
        if self._connections.get(key) is connection:
            del self._connections[key]
            subject = self._subjects.pop(key, None)
            if subject is not None:
                subject.token = None

    def close_user(self, user: tuple[str, str], server: str) -> None:
        """Close `user`'s connection to `server` (they revoked their authorization)."""
        key: UserKey = (user, server)
        connection = self._connections.get(key)
        if connection is not None:
            self._close(key, connection)

    async def follow_revoked(self, server: str) -> None:
        """A user's grant for `server` was revoked on another station on the store: close the
        connection to it of each user whose grant is gone, and forget their tokens held here.

        Raises:
            StoreError: the store could not be read (the follower applies the change again).
        """
        users = [user for user, name in self._connections if name == server]
        for user in await self.grants.forget_revoked(users, server):
            if (user, server) in self._connections:
                logger.info(
                    "server %r: closing the connection of %r (authorization revoked elsewhere)", server, user[1]
                )
                self.close_user(user, server)

    # -- closing ------------------------------------------------------------------------------------

    async def close_idle(self) -> None:
        """Close each connection once it has gone its server's `idle_stop_s` without requests; runs
        for the station's life (in its task group)."""
        while True:
            wait_s = math.inf
            for key, connection in list(self._connections.items()):
                if connection.state is ConnectionState.STARTING:  # not used yet: its idle time has not begun
                    wait_s = min(wait_s, connection.idle_stop_s)
                    continue
                remaining = connection.idle_remaining_s()
                if connection.state is ConnectionState.FAILED or (remaining is not None and remaining <= 0):
                    logger.info("server %r: closing the idle connection of %r", connection.name, key[0][1])
                    self._close(key, connection)
                    continue
                wait_s = min(wait_s, remaining if remaining is not None else connection.idle_stop_s)
            with anyio.move_on_after(wait_s):
                await self._opened.wait()
                self._opened = anyio.Event()

    def close_server(self, names: Iterable[str]) -> None:
        """Close every user's connection to these servers (removed or changed by a reload)."""
        gone = set(names)
        for key, connection in list(self._connections.items()):
            if key[1] in gone:
                self._close(key, connection)

    async def shutdown(self) -> None:
        """Close every user's connection, bounded by `STOP_TIMEOUT_S`."""
        connections = list(self._connections.items())
        for key, connection in connections:
            self._close(key, connection)
        with anyio.move_on_after(STOP_TIMEOUT_S):
            for _, connection in connections:
                await connection.wait_stopped()


def _no_token(
    request: Request, spec: AnyServerSpec, subject: str, failure: UpstreamTokenError
) -> UpstreamIdentityError:
    """The refusal of a call whose user could not be given a token for `spec`'s upstream."""
    return UpstreamIdentityError(
        f"server {spec.name!r}: no token for {subject!r} ({failure.failure}): {failure}",
        IdentityProblem.NO_TOKEN,
        tool=request.target,
        server=spec.name,
    )
