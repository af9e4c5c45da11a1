"""The typed configuration: one `StationConfig` holding station settings and `ServerSpec`s.

Every model is frozen and forbids unknown keys. Secrets (environment values, headers, tokens)
are `SecretStr` so `repr`, logs and `--json` output never show them.

The file reads as the schema, top to bottom.
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import os
import re
from typing import Annotated, Any, Literal, Self

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    SecretStr,
    Tag,
    TypeAdapter,
    field_validator,
    model_validator,
)

from mcpstation.config.environment import NETWORK_VARIABLES
from mcpstation.config.presets import FetchOptions, preset_servers

NamingMode = Literal["prefix", "namespace", "bare"]
ToolSearchMode = Literal["off", "auto", "on"]
CodeModeSwitch = Literal["off", "auto", "on"]
StartMode = Literal["eager", "lazy"]


class Role(enum.StrEnum):
    """What a caller may see and do: `user` lists and calls what its role reaches, `admin` everything."""

    USER = "user"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _ROLE_RANKS[self]

    def reaches(self, required: Role) -> bool:
        """Whether this role is at least `required`."""
        return self.rank >= required.rank


_ROLE_RANKS: dict[Role, int] = {Role.USER: 1, Role.ADMIN: 2}

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
ProtocolChoice = str  # "auto", "legacy" or a released protocol version
PROTOCOL_CHOICES: tuple[str, ...] = ("auto", "legacy", *HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

DEFAULT_SERVER_STARTUP_TIMEOUT_S = 30.0  # an `npx -y` server on a cold package cache needs more than 10 s
DEFAULT_STARTUP_TIMEOUT_S = 60.0  # overall: servers still starting then are left to finish in the background
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_MAX_LIST_PAGES = 100
DEFAULT_MAX_RESULT_BYTES = 256 * 1024  # what an LLM can sensibly read of one result
DEFAULT_HARD_MAX_RESULT_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # one JSON-RPC message from a server over our own transports
DEFAULT_IDLE_STOP_S = 600.0  # a lazy server unused this long is stopped; its catalog stays
STARTS_PER_CORE = 4  # default start-up slots per CPU core: a slot is held only while its server works
MIN_CONCURRENT_STARTS = 8
MAX_CONCURRENT_STARTS = 16


class _Frozen(BaseModel):
    # Validators are built at first use, not at import: a program that imports the station pays for
    # the models it validates, when it validates them.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


# -- identity: the station as an OAuth 2.1 resource server ([auth]), and each server's [servers.NAME.auth] --

UpstreamAuthMode = Literal["shared", "token-exchange", "user-oauth"]
_HTTP_SCHEMES = ("http://", "https://")
DEFAULT_JWT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
_ASYMMETRIC_JWT_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES256K", "ES384", "ES512", "EdDSA"}
)


def _http_url(value: str | None, what: str) -> str | None:
    if value is not None and not value.startswith(_HTTP_SCHEMES):
        raise ValueError(f"{what} must be an http(s) URL, not {value!r}")
    return value


class ClaimMapping(_Frozen):
    """How an issuer's access-token claims become a caller's role and groups."""

    groups_claim: str = Field(default="groups", description="The claim listing the subject's groups.")
    admin_groups: tuple[str, ...] = Field(default=(), description="Members of any of these groups are admins.")
    user_groups: tuple[str, ...] = Field(
        default=(), description="Members of any of these are users; empty: every valid token's subject is a user."
    )
    client_id_claims: tuple[str, ...] = Field(
        default=("client_id", "azp", "appid"), description="Claims naming the client the token was issued to."
    )


class TrustedIssuer(_Frozen):
    """One identity provider whose JWT access tokens the station accepts (`[[auth.issuers]]`)."""

    issuer: str = Field(min_length=1, description="The exact `iss` of its tokens.")
    jwks_uri: str | None = Field(default=None, description="Its signing keys; unset: from its metadata.")
    metadata_url: str | None = Field(
        default=None,
        description="Its RFC 8414 / OpenID metadata; unset: the issuer's well-known "
        "oauth-authorization-server, then openid-configuration.",
    )
    audiences: tuple[str, ...] = Field(
        default=(), description="`aud` values accepted; empty: the station's public URL only (Entra: add `api://...`)."
    )
    algorithms: tuple[str, ...] = Field(default=DEFAULT_JWT_ALGORITHMS, description="Signature algorithms accepted.")
    gateway_scopes: tuple[str, ...] = Field(default=(), description="Scopes a token needs for the gateway (/mcp).")
    api_scopes: tuple[str, ...] = Field(default=(), description="Scopes a token needs for the HTTP API (/api).")
    roles: ClaimMapping = Field(default_factory=ClaimMapping)

    @field_validator("issuer", "jwks_uri", "metadata_url")
    @classmethod
    def _is_http(cls, value: str | None) -> str | None:
        return _http_url(value, "an issuer URL")

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, algorithms: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in algorithms if a not in _ASYMMETRIC_JWT_ALGORITHMS]
        if unknown or not algorithms:
            raise ValueError(
                f"algorithms must be asymmetric JWS algorithms ({', '.join(sorted(_ASYMMETRIC_JWT_ALGORITHMS))}); "
                f"not {', '.join(unknown) or 'none at all'}"
            )
        return algorithms


class AuthSettings(_Frozen):
    """The `[auth]` table: identity providers whose users the gateway and the API serve."""

    public_url: str | None = Field(
        default=None,
        description="The station's public URL: the resource its tokens must name (`aud`) and its metadata "
        "advertises. Never taken from request headers. Needed once an issuer is configured.",
    )
    issuers: tuple[TrustedIssuer, ...] = ()
    jwks_ttl_s: float = Field(default=300.0, gt=0, description="Signing keys are fetched again after this long.")
    jwks_refresh_debounce_s: float = Field(
        default=5.0, gt=0, description="An unknown key id fetches the keys at most once per this window."
    )
    clock_skew_s: float = Field(default=60.0, ge=0, le=600, description="Leeway on `exp`, `nbf` and `iat`.")
    token_key: SecretStr | None = Field(
        default=None,
        description="Key encrypting per-user upstream tokens at rest (any string); unset: a key file kept "
        "beside the store.",
    )

    @field_validator("public_url")
    @classmethod
    def _public_is_http(cls, value: str | None) -> str | None:
        return _http_url(value, "public_url")

    @model_validator(mode="after")
    def _public_url_with_issuers(self) -> AuthSettings:
        if self.issuers and self.public_url is None:
            raise ValueError("auth.public_url is needed once an issuer is configured: it is what tokens must name")
        seen = [i.issuer for i in self.issuers]
        if len(seen) != len(set(seen)):
            raise ValueError("an issuer is listed twice in auth.issuers")
        return self


class ServerAuth(_Frozen):
    """Per server (`[servers.NAME.auth]`): who may use it, and as whom the upstream sees each call.

    `upstream`: `shared` sends the server's configured credentials (its `bearer_token`, headers or
    `oauth`) for everyone; `token-exchange` exchanges the caller's IdP token (RFC 8693) at `issuer`
    for one naming the upstream, authenticated as `client_id`; `user-oauth` has each user authorize
    the upstream once (PKCE), as `client_id` when given, else a dynamically registered client.
    The caller's own token is never sent upstream.
    """

    upstream: UpstreamAuthMode = "shared"
    caller_scopes: tuple[str, ...] = Field(
        default=(), description="Scopes an identity-provider caller's token needs to see and call this server."
    )
    groups: tuple[str, ...] = Field(
        default=(), description="Only admins and callers in one of these groups see this server; empty: everyone."
    )
    scopes: tuple[str, ...] = Field(default=(), description="Scopes asked for at the upstream, per user.")
    issuer: str | None = Field(default=None, description="token-exchange: the authorization server that exchanges.")
    client_id: str | None = Field(default=None, min_length=1, description="The station's client at that server.")
    client_secret: SecretStr | None = None
    resource: str | None = Field(default=None, description="The upstream's resource indicator; unset: its URL.")

    @field_validator("issuer", "resource")
    @classmethod
    def _is_http(cls, value: str | None) -> str | None:
        return _http_url(value, "an upstream authorization URL")

    @model_validator(mode="after")
    def _complete_for_mode(self) -> ServerAuth:
        if self.upstream == "token-exchange" and (
            self.issuer is None or self.client_id is None or self.client_secret is None
        ):
            raise ValueError("token-exchange needs issuer, client_id and client_secret (the station's client there)")
        return self


class _ServerBase(_Frozen):
    """Fields every transport shares."""

    name: str = Field(min_length=1, description="The server's key; identity in the catalog.")
    title: str | None = Field(default=None, description="A display name for people; never used as identity.")
    enabled: bool = True
    namespace: str | None = Field(default=None, description="Prefix used by the `namespace` naming mode.")
    include_tools: tuple[str, ...] = Field(default=(), description="Glob patterns; only matching tools.")
    exclude_tools: tuple[str, ...] = Field(default=(), description="Glob patterns; matching tools dropped.")
    startup_timeout_s: float | None = Field(default=None, gt=0, description="Overrides the station default.")
    call_timeout_s: float | None = Field(default=None, gt=0, description="Overrides the station default.")
    protocol: ProtocolChoice = Field(default="auto", description="'auto', 'legacy' or a version to pin.")
    max_result_bytes: int | None = Field(default=None, ge=1024, description="Overrides the station default.")
    min_role: Role = Field(default=Role.USER, description="The lowest caller role that sees this server's tools.")
    tool_roles: dict[str, Role] = Field(
        default_factory=dict, description="Tool-name glob -> minimum role, for single tools."
    )
    sampling: bool | None = Field(default=None, description="May this server sample the host LLM; None follows [host].")
    elicitation_form: bool | None = Field(default=None, description="Form elicitation here; None follows [host].")
    elicitation_url: bool | None = Field(default=None, description="URL elicitation here; None follows [host].")
    log_level: LogLevel | None = Field(default=None, description="Least severe server log message to receive.")
    url_guard: bool | None = Field(
        default=None,
        description="Judge URL arguments of every request with the URL guard; unset: on for fetch servers.",
    )
    naming: NamingMode | None = Field(default=None, description="This server's naming mode; unset: [station].")
    always_visible: tuple[str, ...] = Field(
        default=(), description="Tool-name globs (its own names) kept on the LLM surface when tool search is on."
    )
    start: StartMode | None = Field(
        default=None,
        description="'eager' starts the server with the station; 'lazy' serves its cached catalog and starts it on "
        "the first request (a server never listed before starts at boot to fill the cache). Unset: [station].",
    )
    idle_stop_s: float | None = Field(
        default=None, gt=0, description="A lazy server without requests this long is stopped; unset: [station]."
    )
    unusable: str | None = Field(
        default=None,
        description="Why this entry of another client's file cannot run (an env file that is missing, an input "
        "nobody gives, an extension the client runs itself); such an entry is listed, never started.",
    )

    @model_validator(mode="before")
    @classmethod
    def _unusable_never_starts(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("unusable"):
            return {**data, "enabled": False}
        return data

    auth: ServerAuth = Field(default_factory=ServerAuth, description="Who may use it; as whom the upstream sees calls.")

    @property
    def unsupported(self) -> str | None:
        """Why the station cannot run this entry as configured (a feature it does not have yet), or None."""
        return None

    @model_validator(mode="after")
    def _per_user_upstream_over_http(self) -> Self:
        if self.auth.upstream != "shared" and getattr(self, "transport", None) not in ("streamable_http", "sse"):
            raise ValueError(f"auth.upstream {self.auth.upstream!r} needs an HTTP server (streamable_http or sse)")
        return self

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        if value not in PROTOCOL_CHOICES:
            raise ValueError(f"expected one of {', '.join(PROTOCOL_CHOICES)}")
        return value

    @field_validator("transport", mode="before", check_fields=False)
    @classmethod
    def _transport_alias(cls, value: object) -> object:
        return TRANSPORT_ALIASES.get(value, value) if isinstance(value, str) else value

    @property
    def sdk_mode(self) -> str:
        """The SDK `Client(mode=...)` for this server: handshake pins negotiate via `legacy`."""
        if self.protocol in HANDSHAKE_PROTOCOL_VERSIONS:
            return "legacy"
        return self.protocol

    @property
    def target(self) -> str:
        """What a person recognises the server by: its command line or its URL."""
        raise NotImplementedError


class _OwnTransportLimits(_Frozen):
    """Bounds our own transports (stdio, WebSocket) apply before the SDK parses anything."""

    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES,
        ge=1024,
        description="Largest message taken from the server; a longer answer fails its request unread.",
    )
    max_tool_bytes: int | None = Field(
        default=None, ge=1024, description="Largest tool definition kept from a listing; None: the default (256 KiB)."
    )
    max_tool_depth: int | None = Field(
        default=None, ge=4, description="Deepest JSON nesting of a kept tool definition; None: the default (40)."
    )


class StdioServerSpec(_ServerBase, _OwnTransportLimits):
    """A local server run as a subprocess, spoken to over stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    inherit_env: tuple[str, ...] = Field(
        default=(),
        description="Names or globs of the station's environment variables this server also gets, besides the "
        "network ones a server from the config inherits anyway (mcpstation.config.environment).",
    )
    # What the child inherits when the spec belongs to the user's own config: the network
    # variables and `[station] inherit_env` added to its own `inherit_env` (set by StationConfig).
    _config_inherits: tuple[str, ...] | None = PrivateAttr(default=None)

    @property
    def target(self) -> str:
        return " ".join([self.command, *self.args])

    @property
    def inherited_env(self) -> tuple[str, ...]:
        """Names and globs of the station's variables the child gets (besides the SDK's short list).

        A server of the user's own config (a `StationConfig`): `NETWORK_VARIABLES`, `[station]
        inherit_env` and its own `inherit_env`. Any other (added at run time): its own only.
        """
        return self.inherit_env if self._config_inherits is None else self._config_inherits

    def from_config(self, station_inherits: tuple[str, ...]) -> StdioServerSpec:
        """A copy marked as the user's own: it inherits the network variables and `station_inherits`."""
        copy = self.model_copy()
        copy._config_inherits = tuple(dict.fromkeys((*NETWORK_VARIABLES, *station_inherits, *self.inherit_env)))
        return copy


class _RemoteBase(_ServerBase):
    url: str = Field(min_length=1)
    headers: dict[str, SecretStr] = Field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.url


OAuthMode = Literal["authorization_code", "client_credentials"]
TokenEndpointAuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]


class OAuthSettings(_Frozen):
    """OAuth 2.1 for one HTTP server (`[servers.NAME.oauth]`); the SDK runs the flow, we configure it.

    `authorization_code`: PKCE, discovery, and a client id from `client_id` (pre-registered),
    `client_metadata_url` (CIMD) or dynamic registration, in that order of preference; the
    redirect comes back to `http://127.0.0.1:<redirect_port>/callback`. `client_credentials`:
    machine to machine with `client_id` plus `client_secret`, or `private_key` for `private_key_jwt`.
    """

    mode: OAuthMode = "authorization_code"
    client_id: str | None = Field(default=None, min_length=1, description="A pre-registered client id.")
    client_secret: SecretStr | None = None
    scopes: tuple[str, ...] = Field(default=(), description="Scopes to ask for; empty lets the server decide.")
    redirect_port: int = Field(default=0, ge=0, le=65535, description="Loopback callback port; 0 picks a free one.")
    client_metadata_url: str | None = Field(
        default=None, description="An HTTPS URL serving this client's metadata document (CIMD), used as client id."
    )
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = Field(
        default=None, description="How the client authenticates at the token endpoint; derived when unset."
    )
    issuer: str | None = Field(
        default=None, description="The authorization server the client credentials belong to (client_credentials)."
    )
    private_key: SecretStr | None = Field(default=None, description="PEM key signing `private_key_jwt` assertions.")
    signing_algorithm: str = Field(default="RS256", description="JWS algorithm for `private_key_jwt`.")

    @model_validator(mode="after")
    def _complete_for_mode(self) -> OAuthSettings:
        if self.mode == "client_credentials":
            if self.client_id is None:
                raise ValueError("client_credentials needs client_id")
            if self.token_endpoint_auth_method == "private_key_jwt":
                if self.private_key is None:
                    raise ValueError("token_endpoint_auth_method 'private_key_jwt' needs private_key")
            elif self.client_secret is None:
                raise ValueError("client_credentials needs client_secret (or private_key with 'private_key_jwt')")
            elif self.token_endpoint_auth_method == "none":
                raise ValueError("client_credentials cannot use token_endpoint_auth_method 'none'")
        elif self.token_endpoint_auth_method == "private_key_jwt":
            raise ValueError("'private_key_jwt' is only supported with mode 'client_credentials'")
        if self.client_metadata_url is not None and not self.client_metadata_url.startswith("https://"):
            raise ValueError("client_metadata_url must be an https:// URL")
        return self


class _HttpBase(_RemoteBase):
    """What the HTTP transports share: a bearer token or OAuth, and a read timeout."""

    bearer_token: SecretStr | None = None
    http_timeout_s: float | None = Field(default=None, gt=0, description="HTTP read timeout.")
    oauth: OAuthSettings | None = Field(default=None, description="OAuth 2.1 instead of a static bearer token.")

    @model_validator(mode="after")
    def _one_kind_of_auth(self) -> Self:
        if self.oauth is not None and self.bearer_token is not None:
            raise ValueError("set either bearer_token or oauth, not both")
        return self


class StreamableHttpServerSpec(_HttpBase):
    """A remote server over streamable HTTP (`http` is accepted as an alias)."""

    transport: Literal["streamable_http"] = "streamable_http"


class SseServerSpec(_HttpBase):
    """A remote server over the legacy HTTP+SSE transport."""

    transport: Literal["sse"] = "sse"


class WebSocketServerSpec(_RemoteBase, _OwnTransportLimits):
    """A remote server over WebSocket (subprotocol `mcp`)."""

    transport: Literal["websocket"] = "websocket"


class InProcessServerSpec(_ServerBase):
    """A server object in this process (an SDK `Server` or `MCPServer`), reached over the SDK's memory
    transport: the station's own management tools, and the in-memory test tier. Only Python builds one."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, arbitrary_types_allowed=True, defer_build=True
    )

    transport: Literal["inprocess"] = "inprocess"
    server: Any = Field(exclude=True, repr=False, description="The mcp.server `Server` or `MCPServer` to run.")

    @property
    def target(self) -> str:
        return f"in-process {type(self.server).__name__}"


TRANSPORT_ALIASES: dict[str, str] = {"http": "streamable_http", "streamable-http": "streamable_http", "ws": "websocket"}


def _transport_tag(value: Any) -> str | None:
    if isinstance(value, InProcessServerSpec):
        return "inprocess"
    if isinstance(value, dict):
        raw = value.get("transport", "stdio")
    else:
        raw = getattr(value, "transport", None)
    if not isinstance(raw, str) or raw == "inprocess":  # only Python builds in-process servers
        return None
    return TRANSPORT_ALIASES.get(raw, raw)


_TRANSPORT_DISCRIMINATOR = Discriminator(
    _transport_tag,
    custom_error_type="invalid_transport",
    custom_error_message="expected transport 'stdio', 'streamable_http' (or 'http'), 'sse' or 'websocket'",
)

ServerSpec = Annotated[
    Annotated[StdioServerSpec, Tag("stdio")]
    | Annotated[StreamableHttpServerSpec, Tag("streamable_http")]
    | Annotated[SseServerSpec, Tag("sse")]
    | Annotated[WebSocketServerSpec, Tag("websocket")],
    _TRANSPORT_DISCRIMINATOR,
]
"""One server a file, the store or a request can describe; the `transport` key picks the variant."""

StationServerSpec = Annotated[
    Annotated[StdioServerSpec, Tag("stdio")]
    | Annotated[StreamableHttpServerSpec, Tag("streamable_http")]
    | Annotated[SseServerSpec, Tag("sse")]
    | Annotated[WebSocketServerSpec, Tag("websocket")]
    | Annotated[InProcessServerSpec, Tag("inprocess")],
    _TRANSPORT_DISCRIMINATOR,
]
"""A `ServerSpec`, or a server object in this process (only Python builds those)."""

AnyServerSpec = StdioServerSpec | StreamableHttpServerSpec | SseServerSpec | WebSocketServerSpec | InProcessServerSpec
"""A validated `StationServerSpec`, as a plain union for annotations."""

RemoteServerSpec = StreamableHttpServerSpec | SseServerSpec | WebSocketServerSpec


@functools.cache
def _station_spec_adapter() -> TypeAdapter[AnyServerSpec]:
    return TypeAdapter(StationServerSpec)  # built at first use, as the models are


TRANSPORTS: tuple[str, ...] = ("stdio", "streamable_http", "sse", "websocket")


class StationSettings(_Frozen):
    """The `[station]` table."""

    naming: NamingMode = "prefix"
    reserved_names: tuple[str, ...] = Field(default=(), description="Tool names a server may never take.")
    startup_timeout_s: float = Field(default=DEFAULT_STARTUP_TIMEOUT_S, gt=0, description="Overall start-up deadline.")
    server_startup_timeout_s: float = Field(default=DEFAULT_SERVER_STARTUP_TIMEOUT_S, gt=0)
    call_timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    max_list_pages: int = Field(default=DEFAULT_MAX_LIST_PAGES, ge=1, description="Bound on pages per list.")
    server_messages_per_s: float = Field(
        default=100.0, gt=0, description="Notifications and requests a server may send per second before it is paced."
    )
    server_messages_burst: float = Field(default=200.0, ge=1, description="How many it may send at once.")
    management_tools: bool = Field(
        default=False, description="Offer mcp_add_server and friends to the LLM (needs a store)."
    )
    max_description_chars: int = Field(
        default=2000, ge=64, description="Tool descriptions and server instructions are cut to this."
    )
    max_result_bytes: int = Field(
        default=DEFAULT_MAX_RESULT_BYTES, ge=1024, description="Results over this are cut, head and tail kept."
    )
    hard_max_result_bytes: int = Field(
        default=DEFAULT_HARD_MAX_RESULT_BYTES, ge=1024, description="A result over this fails the call."
    )
    max_consecutive_failures: int = Field(
        default=5, ge=1, description="Restarts in a row before a server is FAILED (circuit open)."
    )
    restart_backoff_s: float = Field(default=0.5, gt=0, description="First restart delay; doubles each time.")
    restart_backoff_max_s: float = Field(default=30.0, gt=0)
    health_interval_s: float = Field(default=30.0, ge=0, description="Ping or discover this often; 0 turns it off.")
    health_timeout_s: float = Field(default=10.0, gt=0)
    tool_search: ToolSearchMode = Field(
        default="auto",
        description="What an LLM is handed: every visible tool (off), or the pinned tools plus mcp_search_tools and "
        "mcp_call_tool (on); auto is on for a caller over the threshold or the token budget.",
    )
    tool_search_threshold: int = Field(
        default=40, ge=0, description="auto: tool search for a caller who sees more tools than this."
    )
    tool_search_token_budget: int = Field(
        default=10_000,
        ge=0,
        description="auto: tool search for a caller whose visible tool schemas are estimated at more tokens than this.",
    )
    always_visible: tuple[str, ...] = Field(
        default=(), description="Public tool-name globs kept on the LLM surface when tool search is on."
    )
    code_mode: CodeModeSwitch = Field(
        default="off",
        description="Hand the LLM mcp_run_code, a sandboxed Python script calling the tools it may see (on), or "
        "only to a caller whose surface has tool search (auto); limits in [code_mode].",
    )
    default_start: StartMode = Field(
        default="eager", description="A server's start mode when it sets none: 'eager' (at boot) or 'lazy'."
    )
    idle_stop_s: float = Field(
        default=DEFAULT_IDLE_STOP_S, gt=0, description="A lazy server without requests this long is stopped."
    )
    max_concurrent_starts: int | None = Field(
        default=None,
        ge=1,
        description="Servers starting at once (spawn, handshake, first listing); the rest wait their turn, their "
        "start-up budget not yet running; a stdio server that only waits lends its slot meanwhile. Unset: 4 per CPU "
        "core, between 8 and 16.",
    )
    inherit_env: tuple[str, ...] = Field(
        default=(),
        description="Names or globs of environment variables every server of this config gets from the station, "
        "besides the SDK's short list and the network variables (proxies, CA bundles, package indexes).",
    )

    @property
    def concurrent_starts(self) -> int:
        """How many servers may be starting at once."""
        if self.max_concurrent_starts is not None:
            return self.max_concurrent_starts
        cores = os.cpu_count() or 1
        return max(MIN_CONCURRENT_STARTS, min(MAX_CONCURRENT_STARTS, STARTS_PER_CORE * cores))


class CodeModeSettings(_Frozen):
    """The `[code_mode]` table: the limits of one `mcp_run_code` run (docs/code-mode.md)."""

    timeout_s: float = Field(default=60.0, gt=0, description="Wall time of a run, tool calls included.")
    cpu_s: float = Field(default=10.0, gt=0, description="Time the sandbox itself executes, tool calls excluded.")
    max_memory_bytes: int = Field(default=64 * 1024 * 1024, ge=1024 * 1024, description="The sandbox's heap.")
    max_recursion_depth: int = Field(default=200, ge=10, description="Nested function calls in the script.")
    max_tool_calls: int = Field(default=50, ge=1, description="Tool calls a run may start; checked before each.")
    max_result_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Bytes of tool results a run may take in, all calls together."
    )
    max_output_bytes: int = Field(
        default=64 * 1024, ge=256, description="Bytes of printed output and final value handed back to the model."
    )
    type_check: bool = Field(default=True, description="Check the script against the tools' stubs before it runs.")
    workers: int = Field(
        default=4,
        ge=1,
        description="Sandbox worker processes running scripts at once; a run beyond them waits for a free one. "
        "A run paused for a person's confirmation holds none.",
    )


class RootSpec(_Frozen):
    """One filesystem root offered to servers that ask for roots."""

    uri: str = Field(min_length=1)
    name: str | None = None
    enabled: bool = True


class SamplingSettings(_Frozen):
    """Whether servers may ask the host's LLM to sample (`sampling/createMessage`)."""

    enabled: bool = False
    task_name: str | None = Field(default=None, description="The host model task that answers sampling.")
    tool_support: bool = False
    max_tokens: int = Field(default=1024, ge=1, description="Cap on `maxTokens` of one sampling request.")
    requests_per_minute: float = Field(default=30, gt=0, description="Sampling requests per server per minute.")
    base_url: str | None = Field(default=None, description="An OpenAI-compatible endpoint answering sampling.")
    model: str | None = Field(default=None, description="The model asked at `base_url`.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Environment variable holding the API key.")


class ElicitationSettings(_Frozen):
    """Whether servers may ask the user for input, and in which modes."""

    enabled: bool = False
    allow_form: bool = True
    allow_url: bool = False


class HostSettings(_Frozen):
    """The `[host]` table: client capabilities the station declares to servers."""

    roots: tuple[RootSpec, ...] = ()
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    elicitation: ElicitationSettings = Field(default_factory=ElicitationSettings)


# `[policy] allowed_packages` entries; mcpstation.policy._packages parses them the same way
_PACKAGE_ENTRY = re.compile(
    r"^(?:(?:npm|pypi):)?(?:@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*(?:(?:@|==)[A-Za-z0-9][\w.+!-]*)?$"
)


class PolicySettings(_Frozen):
    """The `[policy]` table."""

    allowed_dynamic_stdio_commands: tuple[str, ...] = Field(
        default=(), description="Commands a server added at run time may use; empty allows none."
    )
    allowed_dynamic_url_prefixes: tuple[str, ...] = Field(
        default=(), description="URL prefixes a server added at run time may use; empty allows none."
    )
    allowed_packages: tuple[str, ...] = Field(
        default=(),
        description="npm and PyPI packages (and Python modules, by PyPI name) that runners such as npx, uvx and "
        "`python -m` may start without a person's approval: 'name', 'name@1.2.3', 'name==1.2.3', '@scope/name', "
        "'npm:name', 'pypi:name'.",
    )
    fetch_block_internal: bool = Field(default=True, description="Refuse fetches of internal addresses.")
    audit_arguments: bool = Field(
        default=False, description="Keep tool-call arguments in clear in the audit log (size and hash always)."
    )
    tool_pinning: Literal["off", "warn", "block"] = Field(
        default="warn", description="What to do when a tool's definition changes after it was first seen."
    )
    confirm_tools: tuple[str, ...] = Field(
        default=(),
        description="Tools a person confirms before each call, as globs on 'server/tool' (the server's own tool "
        "name): 'github/delete_*', '*/drop_table'. A call nobody can be asked about is refused.",
    )
    confirm_timeout_s: float = Field(
        default=120.0, gt=0, description="How long a call waits for a person's answer before it is refused."
    )
    allowed_internal_hosts: tuple[str, ...] = Field(
        default=(), description="Internal host names or IP literals the URL guard lets through anyway."
    )
    allowed_internal_cidrs: tuple[str, ...] = Field(
        default=(), description="Internal networks (CIDR) the URL guard lets through anyway."
    )

    @field_validator("allowed_packages")
    @classmethod
    def _valid_packages(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            if not _PACKAGE_ENTRY.match(entry.strip()):
                raise ValueError(
                    f"{entry!r} is not a package name with an optional version "
                    "('name', 'name@1.2.3', 'name==1.2.3', '@scope/name', 'npm:name', 'pypi:name')"
                )
        return entries

    @field_validator("allowed_internal_cidrs")
    @classmethod
    def _valid_cidrs(cls, cidrs: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError as exc:
                raise ValueError(f"{cidr!r} is not a network: {exc}") from None
        return cidrs


class PresetSettings(_Frozen):
    """The `[presets]` table: built-in servers (kept, but not started by this release)."""

    fetch_enabled: bool = False
    fetch_user_agent: str | None = None
    fetch_server: Literal["mcpstation", "mcp-server-fetch"] = Field(
        default="mcpstation", description="Our guarded fetch server, or PyPI's mcp-server-fetch behind the guard."
    )
    fetch_ignore_robots_txt: bool = False
    exa_enabled: bool = False


class TelemetrySettings(_Frozen):
    """The `[telemetry]` table: OpenTelemetry spans and metrics (`pip install 'mcpstation[otel]'`)."""

    enabled: bool = Field(
        default=False,
        description="Trace and measure every request (mcpstation.integrations.otel) with the global OpenTelemetry "
        "providers; off, the request path carries no telemetry layer at all.",
    )


class StationConfig(_Frozen):
    """Everything the station needs, validated once."""

    enabled: bool = Field(default=True, description="When false the station starts no server.")
    station: StationSettings = Field(default_factory=StationSettings)
    servers: tuple[StationServerSpec, ...] = ()
    host: HostSettings = Field(default_factory=HostSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    presets: PresetSettings = Field(default_factory=PresetSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    code_mode: CodeModeSettings = Field(default_factory=CodeModeSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    source: str | None = Field(default=None, description="The file this came from, for messages.")

    @model_validator(mode="after")
    def _presets_made_explicit(self) -> StationConfig:
        # The enabled presets become ordinary entries of `servers` (first), so what a station runs
        # is what its config says. Idempotent: a preset whose name is taken is not added again.
        chosen, policy = self.presets, self.policy
        fetch = FetchOptions(
            chosen.fetch_server, chosen.fetch_user_agent, chosen.fetch_ignore_robots_txt,
            policy.allowed_internal_hosts, policy.allowed_internal_cidrs, policy.fetch_block_internal,
        ) if chosen.fetch_enabled else None  # fmt: skip
        entries = preset_servers(
            fetch=fetch,
            exa=chosen.exa_enabled,
            names={spec.name for spec in self.servers},
            urls=[spec.url for spec in self.servers if isinstance(spec, _RemoteBase)],
        )
        presets = [_station_spec_adapter().validate_python(entry) for entry in entries]
        if presets:
            object.__setattr__(self, "servers", (*presets, *self.servers))
        return self

    @model_validator(mode="after")
    def _servers_are_the_users_own(self) -> StationConfig:
        # A stdio server of a config inherits the network variables and `[station] inherit_env`;
        # one validated on its own (added at run time) does not. Copies: a spec may be shared.
        inherits = self.station.inherit_env
        marked = (spec.from_config(inherits) if isinstance(spec, StdioServerSpec) else spec for spec in self.servers)
        object.__setattr__(self, "servers", tuple(marked))
        return self

    @model_validator(mode="after")
    def _user_oauth_has_a_callback(self) -> StationConfig:
        needing = [spec.name for spec in self.servers if spec.auth.upstream == "user-oauth"]
        if needing and self.auth.public_url is None:
            raise ValueError(
                f"server {needing[0]!r} is reached as each user (user-oauth): auth.public_url is needed, "
                "since each user's authorization comes back to {public_url}/oauth/callback"
            )
        return self

    @field_validator("servers")
    @classmethod
    def _unique_names(cls, servers: tuple[AnyServerSpec, ...]) -> tuple[AnyServerSpec, ...]:
        seen: set[str] = set()
        for spec in servers:
            if spec.name == "mcpstation":
                raise ValueError("the server name 'mcpstation' is reserved for the station's own tools")
            if spec.name in seen:
                raise ValueError(f"server name {spec.name!r} is used twice")
            seen.add(spec.name)
        return servers

    def server(self, name: str) -> AnyServerSpec:
        for spec in self.servers:
            if spec.name == name:
                return spec
        raise KeyError(name)
