"""Which credentials each connection of a token-exchange server carries: a user's connection never
the server's shared ones; the shared connection its own, else the station's client credentials."""

from __future__ import annotations

from mcpstation.config.models import StreamableHttpServerSpec
from mcpstation.connection import NO_HOOKS
from mcpstation.host.oauth.exchange import UpstreamTokens
from mcpstation.host.oauth.minted import MintedTokenAuth
from mcpstation.host.oauth.upstream_hooks import SharedIdentityHooks, per_user_spec, token_client, upstream_resource

EXCHANGE = {"upstream": "token-exchange", "issuer": "https://idp.example", "client_id": "station", "client_secret": "s"}


def spec(**fields: object) -> StreamableHttpServerSpec:
    return StreamableHttpServerSpec.model_validate(
        {"name": "jira", "url": "https://jira.example/mcp", "auth": EXCHANGE, "start": "lazy", **fields}
    )


def test_a_users_connection_carries_none_of_the_shared_credentials_and_is_not_lazy() -> None:
    shared = spec(bearer_token="shared-secret")
    own = per_user_spec(shared)
    assert own.bearer_token is None and own.oauth is None and own.start == "eager"
    assert own.url == shared.url and own.auth == shared.auth


def test_the_shared_connection_lists_with_its_own_credentials_else_as_the_station() -> None:
    hooks = SharedIdentityHooks(NO_HOOKS, UpstreamTokens())
    assert hooks.http_auth(spec(bearer_token="shared-secret")) is None  # the bearer header, as configured
    assert isinstance(hooks.http_auth(spec()), MintedTokenAuth)
    plain = StreamableHttpServerSpec(name="plain", url="https://plain.example/mcp")
    assert hooks.http_auth(plain) is None and token_client(plain) is None


def test_the_upstream_resource_is_the_configured_one_else_the_url() -> None:
    assert upstream_resource(spec()) == "https://jira.example/mcp"
    assert upstream_resource(spec(auth={**EXCHANGE, "resource": "https://jira.example"})) == "https://jira.example"
