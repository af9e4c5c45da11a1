"""OAuth 2.1 for streamable HTTP and SSE servers: the SDK runs the flows, this package wires them.

What the SDK (`mcp.client.auth`) does for us: protected-resource and authorization-server
metadata discovery, issuer checks, CIMD or dynamic client registration, PKCE, scope selection and
step-up, refresh, client credentials. What we add, one module each:

* `storage`: where credentials live, bound to the server URL they were issued for and keeping the
  access token's absolute expiry: `StoreTokenStorage` in the station's store, `FileTokenStorage`
  (for the library used without a store) in one 0600 JSON file per server under `oauth_storage_dir()`.
* `loopback`: `LoopbackCallback`, a headless redirect target on `http://127.0.0.1:PORT/callback`.
* `providers`: `StationAuth`, the SDK provider wrapped (through its public API only) so that a
  refresh and a sign-in happen once across processes; `oauth_provider_for(spec, ...)`, and
  `OAuthProviders`, the per-station factory (`Host(auth_provider_factory=...)`) that keeps one
  provider per server, so every session of a server shares one lock, one token set and the
  discovered metadata.
"""

from mcpstation.host.oauth.loopback import (
    AUTHORIZATION_TIMEOUT_S,
    CallbackHandler,
    LoopbackCallback,
    RedirectHandler,
    print_authorization_url,
)
from mcpstation.host.oauth.providers import OAuthProviders, StationAuth, auth_over, oauth_provider_for
from mcpstation.host.oauth.storage import (
    DATA_DIR_ENV,
    FileTokenStorage,
    OAuthStore,
    RecordStorage,
    StoredOAuth,
    StoreTokenStorage,
    oauth_storage_dir,
    token_file,
)

__all__ = [
    "AUTHORIZATION_TIMEOUT_S",
    "DATA_DIR_ENV",
    "CallbackHandler",
    "FileTokenStorage",
    "LoopbackCallback",
    "OAuthProviders",
    "OAuthStore",
    "RecordStorage",
    "RedirectHandler",
    "StationAuth",
    "StoreTokenStorage",
    "StoredOAuth",
    "auth_over",
    "oauth_provider_for",
    "oauth_storage_dir",
    "print_authorization_url",
    "token_file",
]
