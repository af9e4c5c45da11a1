"""Session hooks for servers that see each user (`[servers.NAME.auth] upstream = "token-exchange"`
or `"user-oauth"`).

Such a server has two kinds of connection. Its shared one (the pool's, supervised like any other)
lists the catalog: with the server's own credentials when it has some (`bearer_token`, `oauth`),
else as the station itself, a client credentials token from the configured authorization server
(`SharedIdentityHooks`, `listing_client`). Every request of a signed-in user goes over that user's
own connection (`UserHooks`), whose every HTTP request carries a token for that user (exchanged, or
from their own authorization); such a connection never carries the server's shared credentials.
"""

from __future__ import annotations

from typing import Any

import httpx2
from mcp.client import Client
from pydantic import SecretStr

from mcpstation.config.models import AnyServerSpec
from mcpstation.connection import SessionHooks
from mcpstation.host.oauth.exchange import TokenClient, TokenKey, UpstreamTokens
from mcpstation.host.oauth.minted import MintedTokenAuth

TOKEN_EXCHANGE = "token-exchange"


def exchanges(spec: AnyServerSpec) -> bool:
    """Whether requests to `spec` go with a token exchanged for each user's (it names the exchanging server)."""
    auth = spec.auth
    return not (
        auth.upstream != TOKEN_EXCHANGE or auth.issuer is None or auth.client_id is None or auth.client_secret is None
    )


def token_client(spec: AnyServerSpec) -> TokenClient | None:
    """The station's client at `spec`'s exchanging authorization server; None unless `spec` exchanges."""
    if not exchanges(spec):
        return None
    auth = spec.auth
    assert auth.issuer is not None and auth.client_id is not None and auth.client_secret is not None
    return TokenClient(auth.issuer, auth.client_id, auth.client_secret)


def listing_client(spec: AnyServerSpec) -> TokenClient | None:
    """The station's own client for listing a per-user server's catalog (client credentials): the
    exchanging client of a token-exchange server, or a user-oauth server's `issuer`, `client_id` and
    `client_secret` when all are given; None otherwise."""
    auth = spec.auth
    if auth.upstream == "shared" or auth.issuer is None or auth.client_id is None or auth.client_secret is None:
        return None
    return TokenClient(auth.issuer, auth.client_id, auth.client_secret)


def upstream_resource(spec: AnyServerSpec) -> str:
    """What a token for `spec` must name (its `aud`): `auth.resource`, else the server's URL."""
    url: str = getattr(spec, "url", "")
    return spec.auth.resource or url


def has_own_credentials(spec: AnyServerSpec) -> bool:
    return getattr(spec, "bearer_token", None) is not None or getattr(spec, "oauth", None) is not None


def per_user_spec(spec: AnyServerSpec) -> AnyServerSpec:
    """`spec` as one user's connection runs it: without the shared credentials, started at once
    (its owner closes it when idle, not the session's lazy-server watch)."""
    update: dict[str, Any] = {"start": "eager"}
    if hasattr(spec, "bearer_token"):
        update["bearer_token"] = None
    if hasattr(spec, "oauth"):
        update["oauth"] = None
    return spec.model_copy(update=update)


class SharedIdentityHooks:
    """`base`, except that a token-exchange server without credentials of its own is listed as the
    station itself (client credentials at its authorization server)."""

    def __init__(self, base: SessionHooks, tokens: UpstreamTokens) -> None:
        self.base = base
        self.tokens = tokens

    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        return self.base.client_kwargs(spec)

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        client = listing_client(spec)
        if client is None or has_own_credentials(spec):
            return self.base.http_auth(spec)
        key = TokenKey(None, upstream_resource(spec), spec.auth.scopes)

        async def mint() -> SecretStr:
            return await self.tokens.own(client, key)

        return MintedTokenAuth(mint, lambda token: self.tokens.forget(key, token), server=spec.name)

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        await self.base.session_started(spec, client)

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        self.base.session_ended(spec, client)


class UserHooks:
    """One user's connection: `base`'s client callbacks, `auth` on every HTTP request, and no
    registration with the host (its sessions are the shared connection's, by server name)."""

    def __init__(self, base: SessionHooks, auth: httpx2.Auth) -> None:
        self.base = base
        self.auth = auth

    def client_kwargs(self, spec: AnyServerSpec) -> dict[str, Any]:
        return self.base.client_kwargs(spec)

    def http_auth(self, spec: AnyServerSpec) -> httpx2.Auth | None:
        return self.auth

    async def session_started(self, spec: AnyServerSpec, client: Client) -> None:
        return None

    def session_ended(self, spec: AnyServerSpec, client: Client) -> None:
        return None
