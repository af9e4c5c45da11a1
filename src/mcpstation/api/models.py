"""The HTTP API's request and response bodies: handlers validate and serialize with these, and
`/openapi.json` is built from their JSON schemas, so the document cannot drift from the code.

Shapes follow the library's own `to_dict()` (a tool result here is `ToolResult.to_dict()`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from mcpstation.config.models import ServerSpec
from mcpstation.outcomes import Outcome


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    """Every error: what kind, what happened and what to do, and what it concerns."""

    type: str = Field(description="The error's kind, e.g. Unauthorized, ToolNotFound, ValidationError.")
    message: str
    server: str | None = None
    tool: str | None = None


class SurfaceCost(_Body):
    tools: int
    tokens: int = Field(description="Estimated schema tokens (o200k_base, the tokenizer of GPT-4o and later).")


class SurfaceInfo(_Body):
    """What the tools cost a model: the LLM surface of a caller who sees every tool, with and without search."""

    tool_search: Literal["off", "auto", "on"] = Field(description="The `[station] tool_search` setting.")
    search: bool = Field(description="Whether this surface is the search one (pinned tools and the meta-tools).")
    tools: int = Field(description="Tools on the surface as a model is handed it.")
    tokens: int = Field(description="Their estimated schema tokens.")
    without_search: SurfaceCost = Field(description="Every visible tool.")
    with_search: SurfaceCost = Field(description="The pinned tools plus mcp_search_tools and mcp_call_tool.")
    code_mode: Literal["off", "auto", "on"] = Field(default="off", description="The `[station] code_mode` setting.")
    code: bool = Field(default=False, description="Whether this surface is handed with mcp_run_code.")
    with_code: SurfaceCost | None = Field(
        default=None,
        description="The surface as handed with mcp_run_code (its stubs included); null when code mode is off.",
    )


class ReplicaInfo(_Body):
    """Where this station is in the store's change log, which every station sharing the store follows."""

    id: str = Field(description="This replica's id: the origin of the changes it writes.")
    applied: int = Field(description="The number of the last change applied.")
    head: int = Field(description="The newest change number seen in the log.")
    behind: int = Field(description="Change numbers seen but not applied yet.")
    lag_s: float = Field(description="Age of the oldest change seen but not applied; 0 when caught up.")


class Health(_Body):
    status: Literal["ok"] = "ok"
    version: str
    auth: Literal["token", "local-dev"] = Field(description="local-dev: loopback with no token in the store.")
    servers: dict[str, int] = Field(description="How many servers are in each state.")
    tools: int
    surface: SurfaceInfo | None = None
    replica: ReplicaInfo | None = Field(None, description="Absent without a store.")


class ServerInfo(_Body):
    """One server as `Station.status()` shows it; secrets never appear (targets are redacted)."""

    name: str
    origin: Literal["host", "static", "dynamic"]
    state: str
    transport: str
    target: str
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    tools: int
    tokens: int = Field(description="Estimated schema tokens of its tools in the catalog.")
    prompts: int
    resources: int
    templates: int
    error: str | None
    pid: int | None
    startup_s: float | None
    restarts: int
    stderr_tail: list[str]
    warnings: list[str]
    instructions: str | None


class ServerList(_Body):
    servers: list[ServerInfo]
    conflicts: list[dict[str, Any]] = Field(description="Catalog entries not published, and why.")
    surface: SurfaceInfo | None = None


class AddServerRequest(RootModel[ServerSpec]):
    """A server entry as in a config file, plus its `name` (`transport` picks the variant)."""


class ServerChangeBody(_Body):
    """The outcome of a management action (`ServerChange.to_dict()`); `ok` false means refused."""

    ok: bool
    action: str
    server: str
    message: str
    state: str | None
    tools: int
    conflict: bool = Field(False, description="Refused because the store already holds the name.")


class ReconnectBody(_Body):
    """Which servers were asked to reconnect, and every server's status once they settled."""

    reconnected: list[str]
    servers: list[ServerInfo]
    conflicts: list[dict[str, Any]] = Field(description="Catalog entries not published, and why.")
    surface: SurfaceInfo | None = None


class ToolApprovalBody(_Body):
    """A pinned tool's current definition, approved (policy.tool_pinning)."""

    server: str
    tool: str
    message: str


class Authorization(_Body):
    """One of the caller's own authorizations of a user-oauth server (its tokens are never shown)."""

    server: str
    server_url: str
    connected: bool
    expires_at: str | None = None
    updated_at: str


class AuthorizationList(_Body):
    """The caller's own authorizations of user-oauth servers."""

    authorizations: list[Authorization]


class AuthorizationStart(_Body):
    """Where the caller authorizes a user-oauth server: open `authorization_url` in a browser."""

    server: str
    authorization_url: str


class AuthorizationRevoked(_Body):
    """The caller's authorization of a server, forgotten (and revoked at its authorization server)."""

    server: str
    revoked: bool


class ToolInfo(_Body):
    """One catalog tool, flat: its public name and where it comes from."""

    name: str = Field(description="The public (LLM-facing) name; call it by this.")
    server: str = Field(description="The server's id (its config key).")
    server_name: str | None = Field(description="The name the server gave itself at initialize.")
    tool: str = Field(description="The tool's own name on its server.")
    description: str
    input_schema: dict[str, Any]
    tokens: int = Field(description="Estimated schema tokens of this tool as a model is handed it.")


class ToolList(_Body):
    tools: list[ToolInfo]


class ToolHit(_Body):
    """One search result (`SearchHit.to_dict()`)."""

    name: str = Field(description="The public (LLM-facing) name; call it by this.")
    server: str
    tool: str
    score: float = Field(description="Higher is better; comparable within one search only.")
    description: str


class ToolSearchBody(_Body):
    """The best matches for a request in words, best first, among the tools the token's role may see."""

    query: str
    hybrid: bool = Field(description="Whether the embedding model ranked alongside the lexical ranker.")
    tools: list[ToolHit]


class CallToolRequest(RootModel[dict[str, Any]]):
    """The tool's arguments object."""


class ToolResultBody(_Body):
    """`ToolResult.to_dict()`: a failed call is `ok: false` with `outcome` and `error`; the status says
    which kind of failure (200 when the tool itself reported it)."""

    ok: bool
    outcome: Outcome = Field(description="What became of the call: ok, tool_error, refused, timeout, ...")
    name: str
    text: str
    content: list[dict[str, Any]] = Field(description="MCP content blocks (text, image, audio, resource...).")
    structured: dict[str, Any] | None
    server: str | None
    tool: str | None
    duration_s: float
    error: str | None


class ConfirmationInfo(_Body):
    """A call of a confirm-tier tool waiting for a person's answer (`PendingQuestion.to_dict()`)."""

    id: str = Field(description="Answer it at `POST /api/mcp/confirmations/{id}`.")
    name: str = Field(description="The tool's public name, as called.")
    server: str
    tool: str = Field(description="The tool's own name on its server.")
    caller: str = Field(description="Who made the call (`api:ci-bot`, `cli`).")
    text: str = Field(description="The question, with the call's arguments (shortened).")
    via: Literal["code"] | None = Field(description="`code`: the call of a code-mode script.")
    run_id: str | None = Field(description="The code-mode run that made the call.")
    tag: str | None = Field(description="The label the call was made with (`confirm_tag`).")
    asked_at: float = Field(description="When it was asked (epoch seconds).")


class ConfirmationList(_Body):
    """The calls waiting for the caller's answer: their own, or every one for an admin."""

    confirmations: list[ConfirmationInfo]


class ConfirmationAnswer(_Body):
    """A person's answer to a waiting call."""

    approve: bool = Field(description="true runs the call; false refuses it (`confirmation: denied`).")


class ConfirmationAnswered(_Body):
    """An answer taken: the waiting call runs or is refused, and its own answer says how it went."""

    id: str
    name: str
    approved: bool
    message: str


class PromptInfo(_Body):
    name: str
    server: str
    prompt: str
    description: str
    arguments: list[dict[str, Any]]


class PromptList(_Body):
    prompts: list[PromptInfo]


class GetPromptRequest(RootModel[dict[str, str]]):
    """The prompt's arguments (strings)."""


class PromptResultBody(_Body):
    """The SDK's `GetPromptResult` as JSON."""

    model_config = ConfigDict(extra="allow")

    description: str | None = None
    messages: list[dict[str, Any]]


class ResourceInfo(_Body):
    kind: Literal["resource"]
    uri: str
    server: str
    name: str
    description: str
    mime_type: str | None


class TemplateInfo(_Body):
    kind: Literal["template"]
    uri_template: str
    server: str
    name: str
    description: str
    mime_type: str | None


class ResourceList(_Body):
    resources: list[ResourceInfo]
    templates: list[TemplateInfo]


class ResourceResultBody(_Body):
    """The SDK's `ReadResourceResult` as JSON (`text` or base64 `blob` per item)."""

    model_config = ConfigDict(extra="allow")

    contents: list[dict[str, Any]]


class AuditCall(_Body):
    id: int
    at: str
    server: str
    tool: str
    caller: str | None
    argument_bytes: int
    argument_sha256: str = Field(description="SHA-256 of the arguments' JSON.")
    outcome: str
    error: str | None
    duration_s: float
    issuer: str | None = Field(default=None, description="The caller's token issuer (`mcpstation`: a station token).")
    subject: str | None = None
    client_id: str | None = None
    token_id: str | None = None
    upstream: str | None = Field(default=None, description="The upstream reached, and as whom.")
    via: str | None = Field(default=None, description="`code`: a call a code-mode script made.")
    run_id: str | None = Field(default=None, description="The code-mode run: its own record and each call it made.")


class AuditAction(_Body):
    id: int
    at: str
    actor: str
    action: str
    server: str | None
    detail: dict[str, Any]


class AuditBody(_Body):
    calls: list[AuditCall]
    actions: list[AuditAction]


class EventBody(_Body):
    """One Server-Sent Event's `data` (`StationEvent.to_dict()`); the SSE `event:` is its kind.

    `state`: a server's connection state changed · `catalog`: which lists changed · `server`: a
    management action (a `ServerChange`) · `log`: a server's log or stderr line (admins only) ·
    `resource`: a subscribed resource changed upstream (`uri`; to those who can see its server) ·
    `confirmation`: a call waiting for a person's answer, by `state` (asked, approved, denied,
    withdrawn) with the `ConfirmationInfo` fields (admins and the caller who made the call only) ·
    `snapshot` (first, on connect): every server, as `GET /api/mcp/servers` · `lost`: this stream
    fell behind and lost events (`lost`: how many so far); fetch again what matters.
    """

    model_config = ConfigDict(extra="allow")

    kind: Literal["state", "catalog", "server", "log", "resource", "confirmation", "snapshot", "lost"]
    server: str | None
    at: float


MODELS: tuple[type[BaseModel], ...] = (
    ErrorBody,
    Health,
    ReplicaInfo,
    ServerInfo,
    ServerList,
    AddServerRequest,
    ServerChangeBody,
    ReconnectBody,
    ToolApprovalBody,
    Authorization,
    AuthorizationList,
    AuthorizationStart,
    AuthorizationRevoked,
    ToolInfo,
    ToolList,
    ToolHit,
    ToolSearchBody,
    SurfaceCost,
    SurfaceInfo,
    CallToolRequest,
    ToolResultBody,
    ConfirmationInfo,
    ConfirmationList,
    ConfirmationAnswer,
    ConfirmationAnswered,
    PromptInfo,
    PromptList,
    GetPromptRequest,
    PromptResultBody,
    ResourceInfo,
    TemplateInfo,
    ResourceList,
    ResourceResultBody,
    AuditCall,
    AuditAction,
    AuditBody,
    EventBody,
)
"""Every model, for the OpenAPI document's components."""
