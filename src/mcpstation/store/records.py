"""What the store hands back: frozen records, never ORM rows or raw database values."""

from __future__ import annotations

import enum
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
ACTION_RELOAD = "reload"


class ChangeKind(enum.StrEnum):
    """What one row of the change log says changed; every station follows the log and applies it."""

    SERVER_ADDED = "server_added"
    SERVER_REMOVED = "server_removed"
    SERVER_UPDATED = "server_updated"  # its spec or note
    SERVER_ENABLED = "server_enabled"
    SERVER_DISABLED = "server_disabled"
    SERVER_APPROVED = "server_approved"
    SERVER_SUSPENDED = "server_suspended"  # back to pending approval
    SERVER_RELOADED = "server_reloaded"  # reconnect it and list it again
    TOKEN_CREATED = "token_created"
    TOKEN_REVOKED = "token_revoked"
    PIN_APPROVED = "pin_approved"
    USER_GRANT_REVOKED = "user_grant_revoked"  # a user's own authorization of a user-oauth server (subject: the server)


# The management actions that are durable changes, and the change each writes to the log.
CHANGE_OF_ACTION: Mapping[str, ChangeKind] = {
    ACTION_ADD: ChangeKind.SERVER_ADDED,
    ACTION_REMOVE: ChangeKind.SERVER_REMOVED,
    ACTION_UPDATE: ChangeKind.SERVER_UPDATED,
    ACTION_NOTE: ChangeKind.SERVER_UPDATED,
    ACTION_ENABLE: ChangeKind.SERVER_ENABLED,
    ACTION_DISABLE: ChangeKind.SERVER_DISABLED,
    ACTION_APPROVE: ChangeKind.SERVER_APPROVED,
    ACTION_SUSPEND: ChangeKind.SERVER_SUSPENDED,
    ACTION_RELOAD: ChangeKind.SERVER_RELOADED,
    ACTION_CREATE_TOKEN: ChangeKind.TOKEN_CREATED,
    ACTION_REVOKE_TOKEN: ChangeKind.TOKEN_REVOKED,
    ACTION_APPROVE_PIN: ChangeKind.PIN_APPROVED,
}


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """One row of the change log. `subject` is the server (or, for tokens, the token's name);
    `tool` the pinned tool; `origin` the replica id of the store that wrote it."""

    id: int
    at: datetime
    kind: ChangeKind
    subject: str | None
    tool: str | None
    origin: str


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
class CallEntry:
    """One request to audit, as `Store.record_calls` takes it; `at` is when it ended (None: when written)."""

    server: str
    tool: str
    outcome: CallOutcome
    duration_s: float
    caller: str | None = None
    arguments: Mapping[str, Any] | None = None
    error: str | None = None
    at: datetime | None = None
    kind: str = "tools/call"  # the request's MCP method
    principal: CallPrincipal | None = None  # who signed in, when the caller did
    upstream: str | None = None  # the upstream reached, and as whom (`user-oauth https://...`)
    via: str | None = None  # how the request came in when not directly: "code" (a code-mode script)
    run_id: str | None = None  # the code-mode run: its own record's and those of the calls it made


@dataclass(frozen=True, slots=True)
class CallPrincipal:
    """Who signed in for an audited request: the token's issuer, subject, client and id. Never the token."""

    issuer: str
    subject: str
    client_id: str | None = None
    token_id: str | None = None


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
    issuer: str | None = None  # the caller's token issuer (`mcpstation` for the station's own tokens)
    subject: str | None = None
    client_id: str | None = None
    token_id: str | None = None
    upstream: str | None = None  # the upstream reached, and as whom
    via: str | None = None  # "code": made by a code-mode script
    run_id: str | None = None  # the code-mode run it belongs to


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
class PinCheck:
    """What checking a listing against its pins needs of a stored pin: its fingerprint, and
    whether a person approved it (read without the timestamps: a listing can hold 10,000 tools)."""

    fingerprint: str
    is_approved: bool


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


@dataclass(frozen=True, slots=True)
class UserOAuth:
    """One user's own OAuth credentials for one per-user upstream, sealed by the station (the store
    never sees them in clear); `user` is the user's `(issuer, subject)`."""

    user: tuple[str, str]
    server: str
    server_url: str
    sealed: str = field(repr=False)
    token_expires_at: datetime | None
    updated_at: datetime
