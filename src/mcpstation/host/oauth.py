"""OAuth 2.1 for streamable HTTP and SSE servers: the SDK runs the flows, this module wires them.

What the SDK (`mcp.client.auth`) does for us: protected-resource and authorization-server
metadata discovery, issuer checks, CIMD or dynamic client registration, PKCE, scope selection and
step-up, refresh, client credentials. What we add:

* Token storage, bound to the server URL the credentials were issued for and keeping the access
  token's absolute expiry so a restarted station refreshes instead of re-authorizing:
  `StoreTokenStorage` keeps them in the station's store (`OAuthProviders(store=...)`), and
  `FileTokenStorage`, for the library used without a store, in one JSON file per server written
  atomically with mode 0600 under `oauth_storage_dir()`.
* `LoopbackCallback`: a headless authorization-code redirect target on
  `http://127.0.0.1:PORT/callback` that captures `code`, `state` and `iss`.
* `oauth_provider_for(spec, ...)`: the `httpx2.Auth` for a server's `[oauth]` settings, and
  `OAuthProviders`, the per-station factory (`Host(auth_provider_factory=...)`) that keeps one
  provider per server.

Refresh is serialised per server. The SDK provider already runs its whole auth flow, refresh
included, under `OAuthContext.lock` (an `anyio.Lock` per provider), so concurrent requests through
one provider refresh once. A second provider for the same server would not share that lock, nor
the tokens held in memory, and would spend a rotating refresh token a second time; so
`OAuthProviders` hands every session of a server the same provider (a new one only when the
server's settings change), and with it one lock, one token set and the discovered metadata.
Across processes (replicas on one store, stations on one token directory) the storage's lock
(`exclusive`: an advisory lock on PostgreSQL, a file lock otherwise) makes a refresh, and a
sign-in, happen once: the first refreshes or asks a person, the others adopt what it stored
(`_SharedTokens`).

Long because one authorization flow's pieces (metadata discovery, client registration, the loopback
redirect listener, token storage and refresh) share its state and are only ever used together.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, BaseModel, ValidationError

from mcpstation.config.models import AnyServerSpec, OAuthSettings
from mcpstation.file_lock import file_lock

logger = logging.getLogger(__name__)

__all__ = [
    "AUTHORIZATION_TIMEOUT_S",
    "DATA_DIR_ENV",
    "CallbackHandler",
    "FileTokenStorage",
    "LoopbackCallback",
    "OAuthProviders",
    "OAuthStore",
    "RedirectHandler",
    "StoreTokenStorage",
    "StoredOAuth",
    "oauth_provider_for",
    "oauth_storage_dir",
    "print_authorization_url",
    "token_file",
]

DATA_DIR_ENV = "MCPSTATION_DATA_DIR"
CLIENT_NAME = "mcpstation"
CALLBACK_PATH = "/callback"
LOOPBACK_HOST = "127.0.0.1"
AUTHORIZATION_TIMEOUT_S = 300.0  # time a person has to sign in once the authorization URL is shown
REDIRECT_GRACE_S = 5.0  # time the redirect handler gets to finish after the callback arrived
CALLBACK_READ_TIMEOUT_S = 10.0  # time a connection to the callback server gets to send its request head
MAX_REQUEST_HEAD_BYTES = 16 * 1024
EXPIRY_SKEW_S = 30.0  # a stored token this close to expiry is refreshed before use
REFRESH_LOCK_TIMEOUT_S = 60.0  # how long a refresh waits for another process's refresh of the same server
SIGN_IN_LOCK_TIMEOUT_S = AUTHORIZATION_TIMEOUT_S + 60.0  # how long a refused request waits for another's sign-in
_FILE_VERSION = 1

RedirectHandler = Callable[[str], Awaitable[None]]
"""Shows (or follows) the authorization URL: print it, open a browser, hand it to a UI."""
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]
"""Returns the authorization response (code, state, iss) when it does not come to the loopback server."""


def oauth_storage_dir() -> Path:
    """Where token files live: `$MCPSTATION_DATA_DIR/oauth`, else `$XDG_DATA_HOME/mcpstation/oauth`,
    else `~/.local/share/mcpstation/oauth`."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        return Path(data_dir).expanduser() / "oauth"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "mcpstation" / "oauth"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def token_file(storage_dir: Path, server: str) -> Path:
    """The token file of the server named `server` (names that are not plain get a hash suffix)."""
    safe = _UNSAFE.sub("_", server).lstrip(".") or "server"
    if safe != server:
        safe = f"{safe}-{hashlib.sha256(server.encode()).hexdigest()[:8]}"
    return storage_dir / f"{safe}.json"


# -- storage ---------------------------------------------------------------------------------------


_Model = TypeVar("_Model", bound=BaseModel)


class _TokenStorage(abc.ABC):
    """The SDK `TokenStorage` protocol over a record of three JSON fields: `tokens`, `expires_at`
    (seconds since the epoch) and `client_info`. Subclasses say where the record lives."""

    async def get_tokens(self) -> OAuthToken | None:
        return self._parse(OAuthToken, (await self._read()).get("tokens"))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self._read()).get("client_info")
        return self._parse(OAuthClientInformationFull, raw)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    async def get_token_expiry(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if the server said."""
        return _expiry((await self._read()).get("expires_at"))

    async def get_all(self) -> tuple[OAuthToken | None, float | None, OAuthClientInformationFull | None]:
        """The tokens, their expiry and the client, from one read."""
        record = await self._read()
        tokens = self._parse(OAuthToken, record.get("tokens"))
        client_info = self._parse(OAuthClientInformationFull, record.get("client_info"))
        return tokens, _expiry(record.get("expires_at")), client_info

    @abc.abstractmethod
    async def clear(self) -> None:
        """Forget everything stored for this server (sign out)."""

    @abc.abstractmethod
    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        """This server's lock across every process sharing the storage: held while refreshing or signing in."""

    @abc.abstractmethod
    async def _read(self) -> dict[str, Any]:
        """The record; empty when nothing (usable) is stored."""

    @abc.abstractmethod
    async def _update(self, **changes: Any) -> None:
        """Replace the given fields of the record."""

    def _parse(self, model: type[_Model], raw: object) -> _Model | None:
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            logger.warning("%r holds an invalid %s (%s); ignoring it", self, model.__name__, exc)
            return None


def _expiry(raw: object) -> float | None:
    return float(raw) if isinstance(raw, int | float) else None


class FileTokenStorage(_TokenStorage):
    """The SDK `TokenStorage` protocol over one JSON file, written atomically with mode 0600.

    The file records the server URL it belongs to; a file written for another URL (the config
    changed) reads as empty, so tokens never travel to a server they were not issued for. An
    unreadable or corrupt file also reads as empty (the flow then authorizes afresh) and is
    reported in the log.
    """

    def __init__(self, path: Path, *, server_url: str | None = None) -> None:
        self.path = path
        self.server_url = server_url
        self._lock = anyio.Lock()  # read-modify-write of tokens vs client info

    def __repr__(self) -> str:
        return f"<FileTokenStorage {str(self.path)!r}>"

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        return file_lock(self.path.with_name(f"{self.path.name}.lock"), timeout_s=timeout_s)

    def registered_redirect_uri(self) -> str | None:
        """The loopback redirect URI the stored client was registered with, read synchronously."""
        client_info = self._load().get("client_info")
        return _loopback_redirect_uri(client_info.get("redirect_uris") if isinstance(client_info, dict) else None)

    async def clear(self) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._remove)

    async def _read(self) -> dict[str, Any]:
        async with self._lock:
            return await anyio.to_thread.run_sync(self._load)

    async def _update(self, **changes: Any) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._load_and_store, changes)

    def _load_and_store(self, changes: dict[str, Any]) -> None:
        data = self._load() | changes
        data["version"] = _FILE_VERSION
        if self.server_url is not None:
            data["server_url"] = self.server_url
        self._store(data)

    def _load(self) -> dict[str, Any]:
        try:
            mode = self.path.stat().st_mode & 0o777
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            logger.warning("cannot read OAuth token file %s (%s); authorizing afresh", self.path, exc)
            return {}
        if mode & 0o077:
            logger.warning(
                "OAuth token file %s was readable by others (mode %o); restricting it to 0600", self.path, mode
            )
            with contextlib.suppress(OSError):
                self.path.chmod(0o600)
        try:
            data = json.loads(text)
        except ValueError:
            logger.warning("OAuth token file %s is not JSON; ignoring it and authorizing afresh", self.path)
            return {}
        if not isinstance(data, dict):
            return {}
        stored_url = data.get("server_url")
        if self.server_url is not None and stored_url is not None and stored_url != self.server_url:
            logger.info(
                "OAuth token file %s was written for %s, not %s; ignoring it", self.path, stored_url, self.server_url
            )
            return {}
        return data

    def _store(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkstemp creates the file 0600 whatever the umask; os.replace makes the switch atomic.
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=2, sort_keys=True)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable; not every filesystem allows it
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class StoredOAuth(Protocol):
    """One server's OAuth record as the store returns it (`mcpstation.store.OAuthCredentials`)."""

    @property
    def server_url(self) -> str: ...
    @property
    def tokens(self) -> Mapping[str, Any] | None: ...
    @property
    def token_expires_at(self) -> datetime | None: ...
    @property
    def client_info(self) -> Mapping[str, Any] | None: ...


class OAuthStore(Protocol):
    """What token storage needs of the station's store (`mcpstation.store.Store` implements it)."""

    async def get_oauth(self, server: str) -> StoredOAuth | None: ...

    async def set_oauth_tokens(
        self, server: str, server_url: str, tokens_json: Mapping[str, Any] | None, expires_at: datetime | None
    ) -> None: ...

    async def set_oauth_client(self, server: str, server_url: str, client_json: Mapping[str, Any] | None) -> None: ...

    async def delete_oauth(self, server: str) -> bool: ...

    def exclusive(self, name: str, *, timeout_s: float) -> AbstractAsyncContextManager[None]: ...


class StoreTokenStorage(_TokenStorage):
    """The SDK `TokenStorage` protocol over the station's store: one `oauth_credentials` row per server.

    Credentials kept for another server URL (the server's URL changed) read as empty, and the
    first write for the new URL replaces them. A store that cannot be reached raises
    `StoreError`, which fails the connect: re-authorizing because a database blinked would ask a
    person to sign in for nothing.
    """

    def __init__(self, store: OAuthStore, server: str, server_url: str) -> None:
        self.store = store
        self.server = server
        self.server_url = server_url

    def __repr__(self) -> str:
        return f"<StoreTokenStorage {self.server!r} {self.server_url!r}>"

    async def clear(self) -> None:
        await self.store.delete_oauth(self.server)

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        return self.store.exclusive(f"oauth:{self.server}", timeout_s=timeout_s)

    async def _read(self) -> dict[str, Any]:
        record = await self.store.get_oauth(self.server)
        if record is None:
            return {}
        if record.server_url != self.server_url:
            logger.info(
                "OAuth credentials of %r were stored for %s, not %s; ignoring them",
                self.server,
                record.server_url,
                self.server_url,
            )
            return {}
        expires_at = record.token_expires_at
        return {
            "tokens": record.tokens,
            "expires_at": None if expires_at is None else expires_at.timestamp(),
            "client_info": record.client_info,
        }

    async def _update(self, **changes: Any) -> None:
        if "tokens" in changes:
            expires_at = changes.get("expires_at")
            expiry = None if expires_at is None else datetime.fromtimestamp(expires_at, UTC)
            await self.store.set_oauth_tokens(self.server, self.server_url, changes["tokens"], expiry)
        if "client_info" in changes:
            await self.store.set_oauth_client(self.server, self.server_url, changes["client_info"])


def _loopback_redirect_uri(redirect_uris: object) -> str | None:
    """The first of a registered client's redirect URIs if it is our loopback callback."""
    if isinstance(redirect_uris, list) and redirect_uris:
        first = str(redirect_uris[0])
        if _is_loopback_callback(first):
            return first
    return None


# -- the loopback redirect target --------------------------------------------------------------------


def _is_loopback_callback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and parts.hostname == LOOPBACK_HOST and parts.path == CALLBACK_PATH


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK_HOST, 0))
        return int(probe.getsockname()[1])


async def print_authorization_url(url: str) -> None:
    """The headless default: show the URL on stderr for a person to open."""
    print(f"\nTo authorize mcpstation, open this URL in a browser:\n\n  {url}\n", file=sys.stderr, flush=True)


_DONE_PAGE = (
    b"<!doctype html><title>mcpstation</title>"
    b"<p>Authorization received. You can close this window and return to mcpstation.</p>"
)


class LoopbackCallback:
    """Receives the authorization response on `http://127.0.0.1:PORT/callback` (RFC 8252 §7.3).

    `authorize(url)` listens, shows `url` through the redirect handler, and returns once the
    browser comes back with `code` (or `error`), `state` and `iss`. The listener lives only while
    an authorization is in progress. Its two methods are the SDK's `redirect_handler` and
    `callback_handler` (`handle_redirect`, `handle_callback`).
    """

    def __init__(
        self,
        port: int = 0,
        *,
        show: RedirectHandler = print_authorization_url,
        timeout_s: float = AUTHORIZATION_TIMEOUT_S,
    ) -> None:
        self.port = port or _free_port()
        self.show = show
        self.timeout_s = timeout_s
        self._result: AuthorizationCodeResult | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://{LOOPBACK_HOST}:{self.port}{CALLBACK_PATH}"

    async def handle_redirect(self, authorization_url: str) -> None:
        self._result = await self.authorize(authorization_url)

    async def handle_callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise OAuthFlowError("no authorization response was received on the loopback callback")
        return result

    async def authorize(self, authorization_url: str) -> AuthorizationCodeResult:
        """Show `authorization_url` and wait for the redirect back.

        Raises:
            OAuthFlowError: the port is taken, the authorization server answered with an
                error, the redirect handler failed, or no answer came within `timeout_s`.
        """
        try:
            listener = await anyio.create_tcp_listener(local_host=LOOPBACK_HOST, local_port=self.port)
        except OSError as exc:
            raise OAuthFlowError(
                f"cannot listen for the OAuth redirect on {self.redirect_uri}: {exc}. "
                "Fix: free that port, or set another oauth.redirect_port for this server."
            ) from exc
        received = anyio.Event()
        shown = anyio.Event()
        outcome: dict[str, Any] = {}

        async def serve_one(stream: Any) -> None:
            async with stream:
                query = await _read_callback_query(stream)
                if query is None or not ({"code", "error"} & query.keys()) or "result" in outcome:
                    await _respond(stream, 404, b"Not found")
                    return
                await _respond(stream, 200, _DONE_PAGE)
                outcome["result"] = query
                received.set()

        async def show() -> None:
            try:
                await self.show(authorization_url)
            except Exception as exc:  # handed to the flow below as its error
                outcome["show_error"] = exc
                received.set()
            finally:
                shown.set()

        async with listener, anyio.create_task_group() as task_group:
            task_group.start_soon(listener.serve, serve_one, task_group)
            task_group.start_soon(show)
            with anyio.move_on_after(self.timeout_s):
                await received.wait()
            with anyio.move_on_after(REDIRECT_GRACE_S):
                await shown.wait()
            task_group.cancel_scope.cancel()

        if "show_error" in outcome and "result" not in outcome:
            error = outcome["show_error"]
            raise OAuthFlowError(f"showing the authorization URL failed: {error}") from error
        query = outcome.get("result")
        if query is None:
            raise OAuthFlowError(
                f"no authorization response on {self.redirect_uri} within {self.timeout_s:g} s; "
                "open the printed URL and finish signing in, then connect again"
            )
        if "error" in query:
            description = query.get("error_description")
            detail = f" ({description})" if description else ""
            raise OAuthFlowError(f"the authorization server refused: {query['error']}{detail}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def _read_callback_query(stream: Any) -> dict[str, str] | None:
    """The query of a `GET /callback?...` request, or None for anything else."""
    head = b""
    with anyio.move_on_after(CALLBACK_READ_TIMEOUT_S):
        while b"\r\n\r\n" not in head and len(head) < MAX_REQUEST_HEAD_BYTES:
            try:
                head += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or parts[0] != "GET":
        return None
    target = urlsplit(parts[1])
    if target.path != CALLBACK_PATH:
        return None
    return {key: values[0] for key, values in parse_qs(target.query).items()}


async def _respond(stream: Any, status: int, body: bytes) -> None:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head + body)


# -- providers ---------------------------------------------------------------------------------------


class _SharedTokens(OAuthClientProvider):
    """What every provider of ours adds to the SDK's: stored expiry, and one refresh across processes.

    Stored expiry: the SDK loads stored tokens without their expiry and so treats them as valid;
    an expired one would earn a 401 and an interactive re-authorization although a refresh token
    is at hand.

    One refresh and one sign-in: replicas on one store (or processes on one token directory) share
    the tokens; with a rotating refresh token only the first refresh succeeds, and a sign-in needs a
    person. So a flow that finds its access token expired first takes the storage's cross-process
    lock, then adopts tokens another process stored meanwhile; the SDK's flow then refreshes only if
    those are expired too. A request refused with 401 likewise takes the lock and, if another process
    stored tokens meanwhile, is sent again with them; only if that is refused too does the SDK's
    flow authorize afresh, still under the lock, so the others wait for it and then adopt its
    tokens. The lock goes as soon as the request being authenticated is sent with tokens no one
    refused. The SDK's per-provider lock is taken here, around its flow (its own `async with` gets
    a `nullcontext`), so every flow takes the two locks in one order and they never wait on each other.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._flow_lock = self.context.lock
        self.context.lock = contextlib.nullcontext()  # type: ignore[assignment]  # taken in `_auth_flow`

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if self.context.current_tokens is not None and isinstance(storage, _TokenStorage):
            expires_at = await storage.get_token_expiry()
            if expires_at is not None:
                self.context.token_expiry_time = expires_at - EXPIRY_SKEW_S

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with self._flow_lock, contextlib.AsyncExitStack() as refreshing:
            if not self._initialized:
                await self._initialize()
            storage = self.context.storage
            shared = storage if isinstance(storage, _TokenStorage) else None  # ours always are
            if shared is not None and not self.context.is_token_valid() and self.context.can_refresh_token():
                await refreshing.enter_async_context(shared.exclusive())
                await self._adopt_stored_tokens(shared)
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    if outgoing is request:
                        await refreshing.aclose()  # refreshed (or not needed): others may go
                    response = yield outgoing
                    if outgoing is request and response.status_code == 401 and shared is not None:
                        await refreshing.enter_async_context(shared.exclusive(timeout_s=SIGN_IN_LOCK_TIMEOUT_S))
                        if await self._adopt_stored_tokens(shared):
                            self._add_auth_header(request)
                            response = yield request  # again, with what another process stored
                            if response.status_code != 401:
                                await refreshing.aclose()
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    async def _adopt_stored_tokens(self, storage: _TokenStorage) -> bool:
        """Take up the tokens another process stored since these were loaded (it refreshed or signed
        in first); whether they were new and are valid."""
        stored, expires_at, client_info = await storage.get_all()
        held = self.context.current_tokens
        if stored is None or (held is not None and stored.access_token == held.access_token):
            return False
        self.context.current_tokens = stored
        self.context.token_expiry_time = None if expires_at is None else expires_at - EXPIRY_SKEW_S
        if self.context.client_info is None:  # the client another process registered, to refresh with later
            self.context.client_info = client_info
        logger.info("OAuth tokens of %s were stored by another process; using them", self.context.server_url)
        return self.context.is_token_valid()


class _AuthorizationCodeProvider(_SharedTokens):
    """Authorization code + PKCE; a configured client id takes precedence over a stored one.

    Unless a redirect port is configured, the redirect URI follows the stored client's
    registration (its loopback port), so a strict server still recognises it after a restart.
    The stored client is only known once storage is read, hence here and not at construction.
    """

    def __init__(
        self,
        *args: Any,
        preregistered: OAuthClientInformationFull | None = None,
        loopback: LoopbackCallback | None = None,
        follow_registered: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._preregistered = preregistered
        self._loopback = loopback
        self._follow_registered = follow_registered

    async def _initialize(self) -> None:
        await super()._initialize()
        stored = self.context.client_info
        registered = _loopback_redirect_uri(stored.redirect_uris) if stored is not None else None
        if registered is not None and self._follow_registered:
            self.context.client_metadata.redirect_uris = [AnyUrl(registered)]
            if self._loopback is not None:
                self._loopback.port = urlsplit(registered).port or self._loopback.port
        if self._preregistered is not None:
            redirect_uris = self.context.client_metadata.redirect_uris
            self.context.client_info = self._preregistered.model_copy(update={"redirect_uris": redirect_uris})


def oauth_provider_for(
    spec: AnyServerSpec,
    *,
    storage_dir: Path | None = None,
    store: OAuthStore | None = None,
    redirect_handler: RedirectHandler | None = None,
    callback_handler: CallbackHandler | None = None,
) -> httpx2.Auth | None:
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
    storage: _TokenStorage
    if store is not None:
        storage = StoreTokenStorage(store, spec.name, url)
    else:
        storage = FileTokenStorage(token_file(storage_dir or oauth_storage_dir(), spec.name), server_url=url)
    scope = " ".join(settings.scopes) or None
    provider: OAuthClientProvider
    if settings.mode == "client_credentials":
        provider = _client_credentials_provider(spec.name, url, settings, storage, scope)
    else:
        provider = _authorization_code_provider(url, settings, storage, scope, redirect_handler, callback_handler)
    return provider


def _authorization_code_provider(
    url: str,
    settings: OAuthSettings,
    storage: _TokenStorage,
    scope: str | None,
    redirect_handler: RedirectHandler | None,
    callback_handler: CallbackHandler | None,
) -> OAuthClientProvider:
    show = redirect_handler or print_authorization_url
    loopback = LoopbackCallback(settings.redirect_port, show=show)
    redirect_uri = loopback.redirect_uri  # until the provider reads the stored client's registration
    if callback_handler is not None:
        # The response comes back some other way (a UI pastes it): the redirect URI is only named.
        on_redirect, on_callback = show, callback_handler
    else:
        on_redirect, on_callback = loopback.handle_redirect, loopback.handle_callback
    preregistered = None
    if settings.client_id is not None:
        secret = settings.client_secret.get_secret_value() if settings.client_secret is not None else None
        preregistered = OAuthClientInformationFull(
            client_id=settings.client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method=settings.token_endpoint_auth_method
            or ("client_secret_basic" if secret else "none"),
        )
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        token_endpoint_auth_method=settings.token_endpoint_auth_method,
    )
    return _AuthorizationCodeProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
        client_metadata_url=settings.client_metadata_url,
        preregistered=preregistered,
        loopback=loopback if callback_handler is None else None,
        follow_registered=not settings.redirect_port,
    )


def _client_credentials_provider(
    server: str, url: str, settings: OAuthSettings, storage: _TokenStorage, scope: str | None
) -> OAuthClientProvider:
    # The SDK's client-credentials flow brings PyJWT and cryptography: loaded for such a server only.
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    class ClientCredentialsProvider(_SharedTokens, ClientCredentialsOAuthProvider):
        pass

    class PrivateKeyJWTProvider(_SharedTokens, PrivateKeyJWTOAuthProvider):
        pass

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
            return PrivateKeyJWTProvider(
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
        return ClientCredentialsProvider(
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
        self._providers: dict[str, tuple[AnyServerSpec, httpx2.Auth]] = {}

    def __call__(self, spec: AnyServerSpec) -> httpx2.Auth | None:
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
