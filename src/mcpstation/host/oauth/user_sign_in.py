"""Signing a user in to a `user-oauth` upstream: the SDK's authorization code flow, run per user.

`SignIns.authorization_url` starts the SDK's `OAuthClientProvider` for that user in the station's
task group: Protected Resource Metadata and authorization-server discovery, the configured client
(or dynamic registration), PKCE S256, `resource` = the upstream (RFC 8707). It answers as soon as
the SDK shows the URL; the flow then waits (up to `AUTHORIZATION_TIMEOUT_S`) for the user's browser
to come back to `{public_url}/oauth/callback`, which `complete` receives, and the SDK exchanges the
code and writes the tokens to the user's sealed record. A sign-in lives in the process that started
it: a callback reaching another replica is answered "unknown or expired sign-in; start again",
never completed for someone else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from anyio.abc import TaskGroup
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult

from mcpstation.config.models import AnyServerSpec
from mcpstation.host.oauth.exchange import TokenFailure, UpstreamTokenError
from mcpstation.host.oauth.loopback import AUTHORIZATION_TIMEOUT_S
from mcpstation.host.oauth.providers import code_flow_client
from mcpstation.host.oauth.user_records import GrantKey, SealedUserStorage, User, server_url

logger = logging.getLogger(__name__)

CALLBACK_PATH = "/oauth/callback"
URL_TIMEOUT_S = 30.0  # discovery and registration, until the authorization URL is known
FINISH_TIMEOUT_S = 30.0  # how long the callback page waits for the code exchange to end
PROBE_PROTOCOL = "2025-11-25"  # the version the sign-in's first request names (the SDK then sends `resource`)

HttpClient = Callable[[httpx2.Auth], httpx2.AsyncClient]
"""An HTTP client authenticating with the given auth (the station's timeouts and guard)."""


class UnknownSignIn(Exception):
    """A callback whose `state` names no sign-in in progress in this process."""


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


class SignIns:
    """The sign-ins in progress in this process, by (user, server) and by `state`."""

    def __init__(
        self,
        public_url: Callable[[], str | None],
        http: HttpClient,
        signed_in: Callable[[GrantKey], None],
    ) -> None:
        """`signed_in(key)` is told when a user's new tokens are stored (to drop what it held)."""
        self._public_url = public_url
        self._http = http
        self._signed_in = signed_in
        self._task_group: TaskGroup | None = None
        self._signing_in: dict[GrantKey, _SignIn] = {}
        self._by_state: dict[str, _SignIn] = {}

    def bind(self, task_group: TaskGroup | None) -> None:
        self._task_group = task_group

    async def authorization_url(self, key: GrantKey, spec: AnyServerSpec, storage: SealedUserStorage) -> str:
        """Where the user of `key` authorizes `spec`: a sign-in in progress, or a new one started
        (writing what it gets to `storage`).

        Raises:
            UpstreamTokenError: discovery or registration failed, or the station cannot receive callbacks.
        """
        pending = self._signing_in.get(key)
        if pending is None or pending.finished.is_set() or pending.deadline <= anyio.current_time():
            pending = self._start(key, spec, storage)
        with anyio.move_on_after(URL_TIMEOUT_S):
            await pending.url_known.wait()
        if pending.url is None:
            raise UpstreamTokenError(
                f"the sign-in to server {spec.name!r} could not start: {pending.error or 'no answer in time'}",
                TokenFailure.UNREACHABLE,
            )
        return pending.url

    def _start(self, key: GrantKey, spec: AnyServerSpec, storage: SealedUserStorage) -> _SignIn:
        public_url = self._public_url()
        if public_url is None or self._task_group is None:
            raise UpstreamTokenError(
                f"server {spec.name!r}: the station cannot receive sign-ins (auth.public_url unset, or not serving)",
                TokenFailure.UNREACHABLE,
            )
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
                async with self._http(provider) as http:
                    await http.post(server_url(spec), json=probe, headers=headers)
            stored, _, _ = await storage.get_all()
            if stored is None:
                sign_in.error = "no token was issued"
            else:
                self._signed_in(sign_in.key)
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
        metadata, sdk_storage = code_flow_client(
            storage,
            redirect_uri=redirect,
            scope=" ".join(auth.scopes) or None,
            client_id=auth.client_id,
            client_secret=auth.client_secret,
            auth_method="client_secret_basic" if auth.client_secret is not None else "none",
        )
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
