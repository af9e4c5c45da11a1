"""The typed configuration: one `StationConfig` holding station settings and `ServerSpec`s.

Every model is frozen and forbids unknown keys. Secrets (environment values, headers, tokens)
are `SecretStr` so `repr`, logs and `--json` output never show them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Discriminator, Field, SecretStr, Tag, field_validator

NamingMode = Literal["prefix", "namespace", "bare"]
ProtocolChoice = str  # "auto", "legacy" or a released protocol version
PROTOCOL_CHOICES: tuple[str, ...] = ("auto", "legacy", *HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

DEFAULT_SERVER_STARTUP_TIMEOUT_S = 10.0
DEFAULT_STARTUP_TIMEOUT_S = 30.0
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_MAX_LIST_PAGES = 100
DEFAULT_MAX_RESULT_BYTES = 256 * 1024  # what an LLM can sensibly read of one result
DEFAULT_HARD_MAX_RESULT_BYTES = 32 * 1024 * 1024


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


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


class StdioServerSpec(_ServerBase):
    """A local server run as a subprocess, spoken to over stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None

    @property
    def target(self) -> str:
        return " ".join([self.command, *self.args])


class _RemoteBase(_ServerBase):
    url: str = Field(min_length=1)
    headers: dict[str, SecretStr] = Field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.url


class StreamableHttpServerSpec(_RemoteBase):
    """A remote server over streamable HTTP (`http` is accepted as an alias)."""

    transport: Literal["streamable_http"] = "streamable_http"
    bearer_token: SecretStr | None = None
    http_timeout_s: float | None = Field(default=None, gt=0, description="HTTP read timeout.")


class SseServerSpec(_RemoteBase):
    """A remote server over the legacy HTTP+SSE transport."""

    transport: Literal["sse"] = "sse"
    bearer_token: SecretStr | None = None
    http_timeout_s: float | None = Field(default=None, gt=0)


class WebSocketServerSpec(_RemoteBase):
    """A remote server over WebSocket (subprotocol `mcp`)."""

    transport: Literal["websocket"] = "websocket"


TRANSPORT_ALIASES: dict[str, str] = {"http": "streamable_http", "streamable-http": "streamable_http", "ws": "websocket"}


def _transport_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        raw = value.get("transport", "stdio")
    else:
        raw = getattr(value, "transport", None)
    if not isinstance(raw, str):
        return None
    return TRANSPORT_ALIASES.get(raw, raw)


ServerSpec = Annotated[
    Annotated[StdioServerSpec, Tag("stdio")]
    | Annotated[StreamableHttpServerSpec, Tag("streamable_http")]
    | Annotated[SseServerSpec, Tag("sse")]
    | Annotated[WebSocketServerSpec, Tag("websocket")],
    Discriminator(
        _transport_tag,
        custom_error_type="invalid_transport",
        custom_error_message="expected transport 'stdio', 'streamable_http' (or 'http'), 'sse' or 'websocket'",
    ),
]
"""One configured server; the `transport` key picks the variant."""

TRANSPORTS: tuple[str, ...] = ("stdio", "streamable_http", "sse", "websocket")


class StationSettings(_Frozen):
    """The `[station]` table."""

    naming: NamingMode = "prefix"
    reserved_names: tuple[str, ...] = Field(default=(), description="Tool names a server may never take.")
    startup_timeout_s: float = Field(default=DEFAULT_STARTUP_TIMEOUT_S, gt=0, description="Overall start-up deadline.")
    server_startup_timeout_s: float = Field(default=DEFAULT_SERVER_STARTUP_TIMEOUT_S, gt=0)
    call_timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    max_list_pages: int = Field(default=DEFAULT_MAX_LIST_PAGES, ge=1, description="Bound on pages per list.")
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


class PolicySettings(_Frozen):
    """The `[policy]` table."""

    allowed_dynamic_stdio_commands: tuple[str, ...] = Field(
        default=(), description="Commands a server added at run time may use; empty allows none."
    )
    allowed_dynamic_url_prefixes: tuple[str, ...] = Field(
        default=(), description="URL prefixes a server added at run time may use; empty allows none."
    )
    fetch_block_internal: bool = Field(default=True, description="Refuse fetches of internal addresses.")


class PresetSettings(_Frozen):
    """The `[presets]` table: built-in servers (kept, but not started by this release)."""

    fetch_enabled: bool = False
    fetch_user_agent: str | None = None
    exa_enabled: bool = False


class StationConfig(_Frozen):
    """Everything the station needs, validated once."""

    enabled: bool = Field(default=True, description="When false the station starts no server.")
    station: StationSettings = Field(default_factory=StationSettings)
    servers: tuple[ServerSpec, ...] = ()
    host: HostSettings = Field(default_factory=HostSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    presets: PresetSettings = Field(default_factory=PresetSettings)
    source: str | None = Field(default=None, description="The file this came from, for messages.")

    @field_validator("servers")
    @classmethod
    def _unique_names(cls, servers: tuple[ServerSpec, ...]) -> tuple[ServerSpec, ...]:
        seen: set[str] = set()
        for spec in servers:
            if spec.name in seen:
                raise ValueError(f"server name {spec.name!r} is used twice")
            seen.add(spec.name)
        return servers

    def server(self, name: str) -> ServerSpec:
        for spec in self.servers:
            if spec.name == name:
                return spec
        raise KeyError(name)
