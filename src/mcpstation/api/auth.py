"""Who may use the HTTP API, and from where: Host and Origin checks, then bearer tokens with roles.

Order of checks, for every HTTP request (the console's static files included):

1. `Host` must be one of the allowed hosts (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`, the
   bound address when it is a specific one, plus configured names): a page on another origin that
   rebinds its DNS name to 127.0.0.1 sends its own name as `Host`, and is refused (421).
2. An `Origin`, when sent, must be `http(s)://` one of the allowed hosts (403): a page elsewhere
   cannot drive the API through the person's browser.
3. A bearer token (`Authorization: Bearer ...`; on `/api/events` also `?token=`, since
   `EventSource` cannot send headers), checked with `Store.verify_token`: 401 when missing or
   unknown. The console (`/`, `/static/...`) and, when configured, `/api/health` need none.
   **Local-dev mode**: bound to loopback with no token in the store, requests without a token act
   as a local admin. Never on any other address: `check_bind` refuses to start there.

**The control socket** (`control_socket=`, the path of the Unix socket `mcpstation up` serves for
its owner's CLI) skips all three: the socket's file permissions (0600 in a 0700 directory) are the
authentication, and its requests run as `Caller.cli()`. A request is the control socket's only by
its ASGI scope, which the server fills from the connection: `server` is `[socket path, None]` and
`client` is absent, as the ASGI spec has it for Unix sockets. A TCP request always has a host and
a port there, so no header, Host name or token can give it that trust.

**Identity providers** (`[auth]` issuers, `identity.ResourceServer`): a bearer token of the
station's own shape (`mcps_...`) is checked in the store and nowhere else; any other token is
verified as an issuer's JWT access token and nowhere else, so each token takes exactly one path.
While an issuer is configured, refusals carry RFC 6750 challenges naming the Protected Resource
Metadata (served at its well-known paths without a token): no token is 401 without an `error`; a
bad token, or any token in the query string other than one of the station's own on
`/api/events`, is 401 `invalid_token`; a token lacking the face's scopes (`gateway_scopes`,
`api_scopes`) or the target server's `auth.caller_scopes` is 403 `insufficient_scope` naming
every scope needed. Local-dev mode is off.

The request's `Caller` (the token's name and role, or the local-dev admin) goes in the ASGI scope
under `CALLER_SCOPE_KEY`; the gateway at `/mcp` reads it there too, so every request there runs
as its own token's caller. Roles are checked by the handlers (`require_role`): `admin` manages
servers and reads the audit; `user` lists and calls what its role may see, through the API and
through the gateway alike.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

from starlette.requests import Request
from starlette.types import Scope

from mcpstation.api.errors import ApiError, forbidden, unauthorized
from mcpstation.config.models import Role
from mcpstation.errors import UsageError
from mcpstation.identity import ChallengeError, InvalidToken, ResourceServer, Surface, looks_like_jwt
from mcpstation.pipeline import CALLER_SCOPE_KEY, Caller, Face
from mcpstation.store import Store
from mcpstation.store.store import TOKEN_PREFIX

LOCAL_DEV_IDENTITY = "local"  # the caller name audited for requests in local-dev mode
TOKEN_PRESENCE_TTL_S = 2.0  # how long "tokens exist" is believed; revoking the last one restores local-dev after it
PUBLIC_PATHS = ("/", "/favicon.ico", "/oauth/callback")  # the callback: a browser back from an authorization server
PUBLIC_PREFIXES = ("/static/",)
QUERY_TOKEN_PATHS = ("/api/events",)
HEALTH_PATH = "/api/health"
GATEWAY_PREFIX = "/mcp"  # requests here are the gateway's: their callers' face is GATEWAY
MCP_TARGET_SCOPE_KEY = "mcpstation.mcp_target"  # (method, name) of a gateway request, read from its body
CONTROL_ACTOR_HEADER = "x-mcpstation-actor"  # on the control socket only: who at the terminal acts (`--actor`)
_ACTOR_NAME = re.compile(r"^[A-Za-z0-9_.@+-]{1,64}$")


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or name) only accepts connections from this machine."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts_for(
    host: str, port: int, extra: Iterable[str] = (), *, public_url: str | None = None
) -> tuple[str, ...]:
    """The `Host` values accepted: the loopback names on `port`, the bound address, `extra`, and the
    host of the station's configured public URL."""
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    if public_url is not None:
        hosts.append(urlsplit(public_url).netloc)
    name = host.strip("[]")
    wildcard = name in ("", "0.0.0.0", "::")
    if not wildcard:
        literal = f"[{name}]" if ":" in name else name
        hosts.append(f"{literal}:{port}")
    hosts.extend(extra)
    return tuple(dict.fromkeys(h.lower() for h in hosts))


async def check_bind(store: Store | None, host: str) -> None:
    """Refuse to serve on a non-loopback address when no token exists (anyone could drive it).

    Raises:
        UsageError: `host` is not loopback and the store has no token (or there is no store).
    """
    if is_loopback(host):
        return
    if store is not None and await store.has_tokens():
        return
    raise UsageError(
        f"refusing to serve on {host!r} without any API token: anyone who can reach it "
        "could manage servers and call tools.\n"
        "  Fix: create one with `mcpstation token create --role admin --name NAME`, or bind to 127.0.0.1."
    )


LOCAL_DEV_WARNING = (
    "no API token exists: local-dev mode, anyone on this machine is served without one. "
    "Create a token (`mcpstation token create --role admin --name NAME`) before binding to another address."
)


def require_role(request: Request, role: Role) -> Caller:
    """The request's caller, if its role reaches `role`.

    Raises:
        ApiError: 403 when the role is too low.
    """
    caller = caller_of(request)
    if not caller.sees(role):
        raise forbidden(f"this needs the '{role}' role; the token {caller.identity!r} has '{caller.role}'")
    return caller


def is_control_request(scope: Scope, control_socket: str) -> bool:
    """Whether the connection `scope` came in on is the Unix socket bound at `control_socket`."""
    server = scope.get("server")
    return (
        scope.get("client") is None
        and isinstance(server, tuple | list)
        and len(server) == 2
        and server[1] is None
        and server[0] == control_socket
    )


def control_caller(headers: dict[str, str]) -> Caller:
    """The caller of a control-socket request: the CLI, named by `--actor` when it was given.

    Raises:
        ApiError: 400 when the actor header is not a plain name.
    """
    actor = headers.get(CONTROL_ACTOR_HEADER)
    if actor is None:
        return Caller.cli()
    if not _ACTOR_NAME.match(actor):
        raise ApiError(400, "BadRequest", f"--actor must be a plain name (letters, digits, _.@+-), not {actor!r}")
    return Caller(actor, Role.ADMIN, Face.CLI)


def caller_of(request: Request) -> Caller:
    caller = request.scope.get(CALLER_SCOPE_KEY)
    if not isinstance(caller, Caller):
        raise unauthorized("this needs an API token: send `Authorization: Bearer <token>`")
    return caller


class LocalDev:
    """Whether local-dev mode is on: a loopback bind and no token in the store.

    Only the safe answer is cached: "tokens exist" is believed for `TOKEN_PRESENCE_TTL_S`, while
    "no token" is asked of the store again on every request. So the first token, created by any
    process on the store (the CLI, another replica), ends local-dev mode at once; revoking the
    last one brings it back within seconds.
    """

    def __init__(self, store: Store | None, bind_host: str) -> None:
        self.store = store
        self.loopback = is_loopback(bind_host)
        self._tokens_seen_at: float | None = None  # when the store last had a token

    async def active(self) -> bool:
        if not self.loopback:
            return False
        if self.store is None:
            return True
        now = time.monotonic()
        if self._tokens_seen_at is not None and now - self._tokens_seen_at <= TOKEN_PRESENCE_TTL_S:
            return False
        if await self.store.has_tokens():
            self._tokens_seen_at = now
            return False
        self._tokens_seen_at = None
        return True


TargetScopes = Callable[[Caller, str, str], tuple[str, ...]]
"""`(caller, method, name)` → the `auth.caller_scopes` of the named target's server when the caller
otherwise reaches it (by role and groups); empty for a target it cannot see or that asks none."""


class Authenticator:
    """Who is asking: Host, Origin, then token; `admit` answers with the request's `Caller`."""

    def __init__(
        self,
        *,
        store: Store | None,
        local_dev: LocalDev,
        allowed_hosts: Sequence[str],
        public_health: bool = False,
        control_socket: str | None = None,
        identity: ResourceServer | None = None,
        target_scopes: TargetScopes | None = None,
    ) -> None:
        self.identity = identity
        self.target_scopes = target_scopes
        self.control_socket = control_socket
        self.store = store
        self.local_dev = local_dev
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.allowed_origins = frozenset(f"{scheme}://{h}" for h in self.allowed_hosts for scheme in ("http", "https"))
        self.public_health = public_health

    async def admit(self, scope: Scope) -> Caller | None:
        """The caller of the HTTP request `scope`; None for a public path asked without a token.

        Raises:
            ApiError: 421 for a foreign Host, 403 for a foreign Origin or site, 401 for a missing
                or bad token, 400 for a control-socket actor that is not a plain name.
            StoreError: the token could not be checked.
        """
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.control_socket is not None and is_control_request(scope, self.control_socket):
            return control_caller(headers)
        self._check_host_and_origin(headers)
        self._check_fetch_site(scope["path"], headers)
        gateway = scope["path"].startswith(GATEWAY_PREFIX)
        face = Face.GATEWAY if gateway else Face.HTTP_API
        surface = Surface.GATEWAY if gateway else Surface.API
        caller = await self._authenticate(scope, headers, face, surface)
        if caller is None and not self._is_public(scope["path"]):
            if self.identity is not None or not await self.local_dev.active():
                raise unauthorized(
                    "this needs an API token: send `Authorization: Bearer <token>` "
                    "(create one with `mcpstation token create --role user --name NAME`)",
                    challenge=self._challenge(surface),
                )
            caller = Caller(LOCAL_DEV_IDENTITY, Role.ADMIN, face)
        if caller is not None:
            self._check_target_scopes(scope, caller, surface)
        return caller

    def _challenge(
        self, surface: Surface, error: ChallengeError | None = None, **details: Iterable[str] | str | None
    ) -> str | None:
        if self.identity is None:
            return None
        return self.identity.challenge(surface, error, **details)  # type: ignore[arg-type]

    def _invalid_token(self, surface: Surface, why: str) -> ApiError:
        challenge = self._challenge(surface, ChallengeError.INVALID_TOKEN, description=why)
        return unauthorized(f"the token is not valid: {why}", challenge=challenge)

    def _insufficient_scope(self, surface: Surface, needed: Sequence[str], missing: Sequence[str]) -> ApiError:
        challenge = self._challenge(surface, ChallengeError.INSUFFICIENT_SCOPE, scopes=needed)
        return forbidden(f"the token lacks the scopes {' '.join(missing)} (this needs {' '.join(needed)})",
                         challenge=challenge)  # fmt: skip

    def _check_target_scopes(self, scope: Scope, caller: Caller, surface: Surface) -> None:
        """403 `insufficient_scope` when the request names a target whose server asks more scopes of
        an identity-provider caller than its token carries (a target it may not see at all is left
        to the pipeline, which answers "not found")."""
        principal = caller.principal
        if self.identity is None or self.target_scopes is None or principal is None:
            return
        issuer = next((i for i in self.identity.settings.issuers if i.issuer == principal.issuer), None)
        target = scope.get(MCP_TARGET_SCOPE_KEY) or api_target(scope)
        if issuer is None or target is None:
            return
        server_scopes = self.target_scopes(caller, *target)
        missing = [s for s in server_scopes if s not in principal.scopes]
        if missing:
            needed = tuple(dict.fromkeys((*self.identity.face_scopes(issuer, surface), *server_scopes)))
            raise self._insufficient_scope(surface, needed, missing)

    def _check_host_and_origin(self, headers: dict[str, str]) -> None:
        host = headers.get("host", "").lower()
        if not self._host_allowed(host):
            raise ApiError(
                421,
                "InvalidHost",
                f"Host {host!r} is not served here; add it to the allowed hosts (--allow-host) if it is yours",
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower().rstrip("/") not in self.allowed_origins:
            raise forbidden(f"requests from the origin {origin!r} are not allowed")

    def _check_fetch_site(self, path: str, headers: dict[str, str]) -> None:
        # Browsers omit `Origin` on some cross-site GETs (<img>, <script>); they do send this.
        if headers.get("sec-fetch-site") in ("cross-site", "same-site") and not self._is_public(path):
            raise forbidden("requests from another site are not allowed")

    def _host_allowed(self, host: str) -> bool:
        if host in self.allowed_hosts:
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return f"{name}:*" in self.allowed_hosts

    def _is_public(self, path: str) -> bool:
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES) or self._is_metadata(path):
            return True
        return self.public_health and path == HEALTH_PATH

    def _is_metadata(self, path: str) -> bool:
        return self.identity is not None and path in self.identity.metadata_paths

    async def _authenticate(self, scope: Scope, headers: dict[str, str], face: Face, surface: Surface) -> Caller | None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if self.identity is not None and "access_token" in query:
            raise self._invalid_token(surface, "tokens are accepted only in the Authorization header")
        token = _bearer(headers.get("authorization"))
        if token is None and scope["path"] in QUERY_TOKEN_PATHS and query.get("token"):
            token = query["token"][0]
            if self.identity is not None and not token.startswith(TOKEN_PREFIX):
                raise self._invalid_token(surface, "only the station's own tokens are accepted in the query string")
        if token is None:
            return None
        if self.identity is None or token.startswith(TOKEN_PREFIX):
            return await self._station_token(token, face, surface)
        if not looks_like_jwt(token):
            raise self._invalid_token(surface, "neither a station token nor a JWT access token")
        try:
            verified = await self.identity.verify(token)
        except InvalidToken as exc:
            raise self._invalid_token(surface, str(exc)) from None
        if verified.role is None:
            raise forbidden(
                f"{verified.principal.subject!r} of {verified.principal.issuer} has no role here: "
                "its groups are in none of the issuer's admin_groups or user_groups"
            )
        needed = self.identity.face_scopes(verified.issuer, surface)
        missing = [s for s in needed if s not in verified.principal.scopes]
        if missing:
            raise self._insufficient_scope(surface, needed, missing)
        return Caller.signed_in(verified.principal, verified.role, face)

    async def _station_token(self, token: str, face: Face, surface: Surface) -> Caller:
        record = await self.store.verify_token(token) if self.store is not None else None
        if record is None:
            raise self._invalid_token(surface, "the API token is unknown or revoked")
        return Caller.token(record.name, Role(record.role), face)


def api_target(scope: Scope) -> tuple[str, str] | None:
    """The (MCP method, name) an API request is for: a tool call, a prompt get, a resource read."""
    path: str = scope["path"]
    if path.startswith("/api/mcp/tools/") and path.endswith("/call"):
        return ("tools/call", unquote(path.removeprefix("/api/mcp/tools/").removesuffix("/call")))
    if path.startswith("/api/mcp/prompts/") and path.endswith("/get"):
        return ("prompts/get", unquote(path.removeprefix("/api/mcp/prompts/").removesuffix("/get")))
    if path == "/api/mcp/resources/read":
        uri = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("uri")
        return ("resources/read", uri[0]) if uri else None
    return None


def _bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
