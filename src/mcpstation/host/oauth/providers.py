"""Each server's OAuth `httpx2.Auth`: an SDK provider, wrapped so that tokens are shared across processes.

The SDK (`mcp.client.auth`) runs the flows: metadata discovery, issuer checks, CIMD or dynamic
registration, PKCE, scope selection and step-up, refresh, client credentials. `StationAuth` wraps
one SDK provider through its public surface only (the `httpx2.Auth` method `async_auth_flow`, and
the `OAuthContext` the provider keeps its state in, `provider.context`) and adds two things.

Stored expiry: the SDK loads stored tokens without their expiry and so treats them as valid; an
expired one would earn a 401 and an interactive re-authorization although a refresh token is at
hand. `StationAuth` loads tokens, expiry and client from the storage into the context before the
SDK's flow first runs (and again whenever the SDK dropped its tokens), so the SDK refreshes.

One refresh and one sign-in: replicas on one store (or processes on one token directory) share
the tokens; with a rotating refresh token only the first refresh succeeds, and a sign-in needs a
person. So a flow that finds its access token expired first takes the storage's cross-process
lock (`exclusive()`), then adopts tokens another process stored meanwhile; the SDK's flow then
refreshes only if those are expired too. A request refused with 401 likewise takes the lock and,
if another process stored tokens meanwhile, is sent again with them; only if that is refused too
does the SDK's flow authorize afresh, still under the lock, so the others wait for it and then
adopt its tokens. The lock goes as soon as the request being authenticated is sent with tokens no
one refused. Within a process, `StationAuth`'s own lock, taken first around the whole flow,
serialises the flows of one provider (the SDK's lock inside it is then never contended), so the
locks are always taken in one order.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import AsyncGenerator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, SecretStr

from mcpstation.config.models import AnyServerSpec, OAuthSettings, TokenEndpointAuthMethod
from mcpstation.host.oauth.loopback import (
    AUTHORIZATION_TIMEOUT_S,
    CallbackHandler,
    LoopbackCallback,
    RedirectHandler,
    loopback_redirect_uri,
    print_authorization_url,
)
from mcpstation.host.oauth.storage import (
    FileTokenStorage,
    OAuthStore,
    RecordStorage,
    StoreTokenStorage,
    oauth_storage_dir,
    token_file,
)

logger = logging.getLogger(__name__)

CLIENT_NAME = "mcpstation"
EXPIRY_SKEW_S = 30.0  # a stored token this close to expiry is refreshed before use
SIGN_IN_LOCK_TIMEOUT_S = AUTHORIZATION_TIMEOUT_S + 60.0  # how long a refused request waits for another's sign-in


class StationAuth(httpx2.Auth):
    """One server's SDK OAuth provider, with stored expiry and one refresh across processes.

    `provider` is the SDK's; `storage` is the record storage it was built over (the SDK sees it,
    or a view of it, as its `TokenStorage`).
    """

    requires_response_body = True

    def __init__(self, provider: OAuthClientProvider, storage: RecordStorage) -> None:
        self.provider = provider
        self.storage = storage
        self._flow_lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"<StationAuth {type(self.provider).__name__} {self.provider.context.server_url!r}>"

    @property
    def context(self) -> OAuthContext:
        """The SDK provider's state: tokens, client, discovered metadata."""
        return self.provider.context

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        context = self.provider.context
        async with self._flow_lock, contextlib.AsyncExitStack() as refreshing:
            if context.current_tokens is None:
                await self._load()
            if not context.is_token_valid() and context.can_refresh_token():
                await refreshing.enter_async_context(self.storage.exclusive())
                await self._adopt_stored_tokens()
            flow = self.provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    if outgoing is request:
                        await refreshing.aclose()  # refreshed (or not needed): others may go
                    response = yield outgoing
                    if outgoing is request and response.status_code == 401:
                        await refreshing.enter_async_context(self.storage.exclusive(timeout_s=SIGN_IN_LOCK_TIMEOUT_S))
                        if await self._adopt_stored_tokens():
                            _authorize(request, context.current_tokens)
                            response = yield request  # again, with what another process stored
                            if response.status_code != 401:
                                await refreshing.aclose()
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    async def _load(self) -> None:
        """Tokens, their expiry and the client from storage, before the SDK's flow reads them.

        The SDK's own first read (`get_tokens`, `get_client_info`) finds the same record and keeps
        the expiry set here.
        """
        tokens, expires_at, client_info = await self.storage.get_all()
        context = self.provider.context
        context.current_tokens = tokens
        context.token_expiry_time = None if expires_at is None else expires_at - EXPIRY_SKEW_S
        self._loaded(client_info)
        if context.client_info is None:
            context.client_info = client_info

    def _loaded(self, client_info: OAuthClientInformationFull | None) -> None:
        """What a flow kind makes of the stored client (the authorization code flow follows its redirect)."""

    async def _adopt_stored_tokens(self) -> bool:
        """Take up the tokens another process stored since these were loaded (it refreshed or signed
        in first); whether they were new and are valid."""
        stored, expires_at, client_info = await self.storage.get_all()
        context = self.provider.context
        held = context.current_tokens
        if stored is None or (held is not None and stored.access_token == held.access_token):
            return False
        context.current_tokens = stored
        context.token_expiry_time = None if expires_at is None else expires_at - EXPIRY_SKEW_S
        if context.client_info is None:  # the client another process registered, to refresh with later
            context.client_info = client_info
        logger.info("OAuth tokens of %s were stored by another process; using them", context.server_url)
        return context.is_token_valid()


def _authorize(request: httpx2.Request, tokens: OAuthToken | None) -> None:
    if tokens is not None and tokens.access_token:
        request.headers["Authorization"] = f"Bearer {tokens.access_token}"


class _AuthorizationCodeAuth(StationAuth):
    """Authorization code + PKCE. Unless a redirect port is configured, the redirect URI follows the
    stored client's registration (its loopback port), so a strict server still recognises it after
    a restart; the stored client is only known once storage is read, hence at load time."""

    def __init__(
        self, provider: OAuthClientProvider, storage: RecordStorage, *, loopback: LoopbackCallback | None, follow: bool
    ) -> None:
        super().__init__(provider, storage)
        self._loopback = loopback
        self._follow = follow

    def _loaded(self, client_info: OAuthClientInformationFull | None) -> None:
        registered = loopback_redirect_uri(client_info.redirect_uris) if client_info is not None else None
        if registered is not None and self._follow:
            self.provider.context.client_metadata.redirect_uris = [AnyUrl(registered)]
            if self._loopback is not None:
                self._loopback.port = urlsplit(registered).port or self._loopback.port


class _ConfiguredClient:
    """The SDK `TokenStorage` over a record storage, answering with the configured (pre-registered)
    client instead of a stored one; its redirect URI follows the provider's client metadata."""

    def __init__(self, storage: RecordStorage, client: OAuthClientInformationFull) -> None:
        self.storage = storage
        self.client = client
        self.metadata: OAuthClientMetadata | None = None  # set once the provider exists

    async def get_tokens(self) -> OAuthToken | None:
        return await self.storage.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self.storage.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        redirect_uris = self.metadata.redirect_uris if self.metadata is not None else self.client.redirect_uris
        return self.client.model_copy(update={"redirect_uris": redirect_uris})

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self.storage.set_client_info(client_info)


def code_flow_client(
    storage: RecordStorage,
    *,
    redirect_uri: str,
    scope: str | None,
    client_id: str | None,
    client_secret: SecretStr | None,
    auth_method: TokenEndpointAuthMethod | None,
) -> tuple[OAuthClientMetadata, RecordStorage | _ConfiguredClient]:
    """The station's client metadata for the authorization code flow, and the storage to give the
    SDK: one that answers with the configured client when there is one (it takes precedence over a
    stored registration), else `storage` itself."""
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        token_endpoint_auth_method=auth_method,
    )
    if client_id is None:
        return metadata, storage
    secret = client_secret.get_secret_value() if client_secret is not None else None
    configured = _ConfiguredClient(
        storage,
        OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method=auth_method or ("client_secret_basic" if secret else "none"),
        ),
    )
    configured.metadata = metadata
    return metadata, configured


def oauth_provider_for(
    spec: AnyServerSpec,
    *,
    storage_dir: Path | None = None,
    store: OAuthStore | None = None,
    redirect_handler: RedirectHandler | None = None,
    callback_handler: CallbackHandler | None = None,
) -> StationAuth | None:
    """The OAuth `httpx2.Auth` for `spec`, or None when it has no `oauth` settings.

    Authorization code: `redirect_handler(url)` shows the authorization URL (default: print it to
    stderr). Unless a `callback_handler` is given, the redirect back is received on the loopback
    callback server while `redirect_handler` runs. Tokens and the registered client are kept in
    `store` when given, else in `token_file(storage_dir, spec.name)` (`storage_dir` defaults to
    `oauth_storage_dir()`). Each call makes a new provider: keep one per server
    (`OAuthProviders` does) so refreshes are serialised.

    Raises:
        ValueError: the settings cannot be used with this server (e.g. a non-HTTPS CIMD URL).
    """
    settings: OAuthSettings | None = getattr(spec, "oauth", None)
    if settings is None:
        return None
    url: str = spec.url  # type: ignore[union-attr]  # only HTTP specs carry `oauth`
    storage: RecordStorage
    if store is not None:
        storage = StoreTokenStorage(store, spec.name, url)
    else:
        storage = FileTokenStorage(token_file(storage_dir or oauth_storage_dir(), spec.name), server_url=url)
    return auth_over(spec.name, url, settings, storage, redirect_handler, callback_handler)


def auth_over(
    server: str,
    url: str,
    settings: OAuthSettings,
    storage: RecordStorage,
    redirect_handler: RedirectHandler | None = None,
    callback_handler: CallbackHandler | None = None,
) -> StationAuth:
    """The OAuth `httpx2.Auth` for the server `server` at `url`, keeping its credentials in `storage`.

    Raises:
        ValueError: the settings cannot be used with this server (e.g. a non-HTTPS CIMD URL).
    """
    scope = " ".join(settings.scopes) or None
    if settings.mode == "client_credentials":
        return StationAuth(_client_credentials_provider(server, url, settings, storage, scope), storage)
    return _authorization_code_auth(url, settings, storage, scope, redirect_handler, callback_handler)


def _authorization_code_auth(
    url: str,
    settings: OAuthSettings,
    storage: RecordStorage,
    scope: str | None,
    redirect_handler: RedirectHandler | None,
    callback_handler: CallbackHandler | None,
) -> StationAuth:
    show = redirect_handler or print_authorization_url
    loopback = LoopbackCallback(settings.redirect_port, show=show)
    redirect_uri = loopback.redirect_uri  # until the stored client's registration is read
    if callback_handler is not None:
        # The response comes back some other way (a UI pastes it): the redirect URI is only named.
        on_redirect, on_callback = show, callback_handler
    else:
        on_redirect, on_callback = loopback.handle_redirect, loopback.handle_callback
    metadata, sdk_storage = code_flow_client(
        storage,
        redirect_uri=redirect_uri,
        scope=scope,
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        auth_method=settings.token_endpoint_auth_method,
    )
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=sdk_storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
        client_metadata_url=settings.client_metadata_url,
    )
    return _AuthorizationCodeAuth(
        provider,
        storage,
        loopback=loopback if callback_handler is None else None,
        follow=not settings.redirect_port,
    )


def _client_credentials_provider(
    server: str, url: str, settings: OAuthSettings, storage: RecordStorage, scope: str | None
) -> OAuthClientProvider:
    # The SDK's client-credentials flow brings PyJWT and cryptography: loaded for such a server only.
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert settings.client_id is not None  # OAuthSettings validates this
    if settings.issuer is None:
        logger.warning(
            "server %r: oauth.issuer is not set, so the MCP server decides which authorization server receives "
            "the client credentials. Fix: set servers.%s.oauth.issuer to your authorization server's issuer URL.",
            server,
            server,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation warning for a missing issuer, reported above
        if settings.token_endpoint_auth_method == "private_key_jwt":
            assert settings.private_key is not None
            assertion = SignedJWTParameters(
                issuer=settings.client_id,
                subject=settings.client_id,
                signing_key=settings.private_key.get_secret_value(),
                signing_algorithm=settings.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                server_url=url,
                storage=storage,
                client_id=settings.client_id,
                assertion_provider=assertion.create_assertion_provider(),
                scope=scope,
                issuer=settings.issuer,
            )
        assert settings.client_secret is not None
        method = settings.token_endpoint_auth_method or "client_secret_basic"
        assert method in ("client_secret_basic", "client_secret_post")  # OAuthSettings validates this
        return ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=settings.client_id,
            client_secret=settings.client_secret.get_secret_value(),
            token_endpoint_auth_method=method,
            scope=scope,
            issuer=settings.issuer,
        )


class OAuthProviders:
    """Makes each server's OAuth provider (`Host(auth_provider_factory=OAuthProviders(...))`).

    Called once per session; every session of a server gets the same provider until the server's
    settings change, so its refreshes are serialised and its tokens and metadata are shared.
    With a `store` (the station's), credentials are kept there; without one, in token files under
    `storage_dir`.
    """

    def __init__(
        self,
        storage_dir: Path | None = None,
        *,
        store: OAuthStore | None = None,
        redirect_handler: RedirectHandler | None = None,
        callback_handler: CallbackHandler | None = None,
    ) -> None:
        self.storage_dir = storage_dir if storage_dir is not None else oauth_storage_dir()
        self.store = store
        self.redirect_handler = redirect_handler
        self.callback_handler = callback_handler
        self._providers: dict[str, tuple[AnyServerSpec, StationAuth]] = {}

    def __call__(self, spec: AnyServerSpec) -> StationAuth | None:
        if getattr(spec, "oauth", None) is None:
            self._providers.pop(spec.name, None)
            return None
        held = self._providers.get(spec.name)
        if held is not None and held[0] == spec:
            return held[1]
        provider = oauth_provider_for(
            spec,
            storage_dir=self.storage_dir,
            store=self.store,
            redirect_handler=self.redirect_handler,
            callback_handler=self.callback_handler,
        )
        assert provider is not None
        self._providers[spec.name] = (spec, provider)
        return provider

    def storage_for(self, spec: AnyServerSpec) -> FileTokenStorage | StoreTokenStorage:
        """The token storage of `spec` (to inspect what is stored)."""
        url: str | None = getattr(spec, "url", None)
        if self.store is not None:
            return StoreTokenStorage(self.store, spec.name, url or "")
        return FileTokenStorage(token_file(self.storage_dir, spec.name), server_url=url)

    async def sign_out(self, spec: AnyServerSpec) -> None:
        """Forget the server's tokens and client registration, stored and in memory."""
        self._providers.pop(spec.name, None)
        await self.storage_for(spec).clear()
