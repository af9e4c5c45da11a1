"""What the store hands back: frozen records, never ORM rows or raw database values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from mcpstation.config.models import ServerSpec
from mcpstation.outcomes import Outcome

ServerStatus = Literal["active", "pending_approval"]
CallOutcome = Outcome
Role = Literal["admin", "user"]

SERVER_STATUSES: tuple[ServerStatus, ...] = ("active", "pending_approval")
CALL_OUTCOMES: tuple[CallOutcome, ...] = tuple(Outcome)
ROLES: tuple[Role, ...] = ("admin", "user")

# The management actions the store itself writes; `Store.record_action` takes any other name too
# (e.g. "reload" from the station, "login" from the HTTP API).
ACTION_ADD = "add"
ACTION_REMOVE = "remove"
ACTION_ENABLE = "enable"
ACTION_DISABLE = "disable"
ACTION_UPDATE = "update"
ACTION_APPROVE = "approve"
ACTION_SUSPEND = "suspend"  # back to pending_approval
ACTION_NOTE = "note"
ACTION_CREATE_TOKEN = "create_token"
ACTION_REVOKE_TOKEN = "revoke_token"
ACTION_APPROVE_PIN = "approve_pin"


@dataclass(frozen=True, slots=True)
class DynamicServer:
    """A server added at run time.

    `spec` has its secrets replaced by `**********` unless it came from a call that reveals them
    (`get_dynamic_server(..., reveal_secrets=True)`, `connectable_specs()`). `spec.enabled`
    always equals `enabled`.
    """

    name: str
    spec: ServerSpec
    enabled: bool
    status: ServerStatus
    note: str | None
    added_by: str
    added_at: datetime
    updated_at: datetime

    @property
    def is_connectable(self) -> bool:
        """Enabled and approved: the station should connect it."""
        return self.enabled and self.status == "active"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as audited. `arguments` is None unless the store keeps arguments."""

    id: int
    at: datetime
    server: str
    tool: str
    caller: str | None
    argument_bytes: int
    argument_sha256: str
    arguments: Mapping[str, Any] | None
    outcome: CallOutcome
    error: str | None
    duration_s: float
    kind: str = "tools/call"  # the request's MCP method: tools/call, prompts/get, resources/read, ...


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One management change: who did what to which server. `detail` never holds secret values."""

    id: int
    at: datetime
    actor: str
    action: str
    server: str | None
    detail: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ApiToken:
    """An API token's public facts; the store keeps only the token's SHA-256."""

    id: int
    name: str
    role: Role
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True, slots=True)
class ToolPin:
    """The fingerprint a tool was first seen with, and when a person approved it (if they did)."""

    server: str
    tool: str
    fingerprint: str
    first_seen: datetime
    approved_at: datetime | None

    @property
    def is_approved(self) -> bool:
        return self.approved_at is not None


@dataclass(frozen=True, slots=True)
class OAuthCredentials:
    """What the store keeps of one server's OAuth: tokens (secret), their expiry, the registered client.

    `tokens` and `client_info` are the SDK's JSON (`OAuthToken`, `OAuthClientInformationFull`);
    they hold secrets and are left out of `repr`.
    """

    server: str
    server_url: str
    tokens: dict[str, Any] | None = field(repr=False)
    token_expires_at: datetime | None
    client_info: dict[str, Any] | None = field(repr=False)
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class CachedCatalog:
    """A server's last listing as the catalog cache keeps it: JSON as the server sent it.

    `spec_hash` names the entry it was listed under; `digest` is the SHA-256 of `listing`;
    `ttl_ms` the server's cache hint (None when it gave none); `session` the protocol version,
    server name and version, and instructions of the session that listed it.
    """

    server: str
    spec_hash: str
    digest: str
    listing: Mapping[str, Any]
    session: Mapping[str, Any]
    ttl_ms: int | None
    listed_at: datetime
