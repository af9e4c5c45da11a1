"""`Caller`: who is asking, as every face knows it; the pipeline's visibility and audit read it.

A `Caller` has no default: each face builds the one it knows. The library is the trusted
in-process user (`Caller.library()`), the CLI the person at the terminal, the HTTP API and the
gateway over HTTP the owner of the bearer token of each request, the gateway over stdio the
caller its operator configured.

A caller who signed in (an identity provider's access token, or one of the station's own API
tokens) also has a `Principal`: `(issuer, subject)`, the key of everything the station keeps per
user (gateway sessions, per-user upstream connections and credentials), with the groups its
token's claims map to.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pydantic import SecretStr

from mcpstation.config.models import Role

STATION_ISSUER = "mcpstation"
"""The issuer named for callers holding one of the station's own API tokens."""

CALLER_SCOPE_KEY = "mcpstation.caller"
"""Where an HTTP face's authentication puts the request's `Caller` in the ASGI scope."""


class Face(enum.StrEnum):
    """Which front of the station a request came in through."""

    LIBRARY = "library"
    CLI = "cli"
    HTTP_API = "api"
    GATEWAY = "gateway"
    LLM = "llm"  # a framework adapter handing the station's tools to a model

    @property
    def answers_leave_process(self) -> bool:
        """Whether this face's answers go to another process (a socket, a terminal), which keeps
        them if the station dies; the library and framework adapters share the station's fate."""
        return self not in _IN_PROCESS_FACES


_IN_PROCESS_FACES = frozenset({Face.LIBRARY, Face.LLM})


@dataclass(frozen=True, slots=True)
class Principal:
    """Who signed in: a subject of an issuer, through a client, with a token of an id.

    `subject_token` is the caller's own access token, kept only to be exchanged for an upstream's
    (RFC 8693) at that upstream's authorization server; it is never shown, compared or sent upstream.
    """

    issuer: str
    subject: str
    client_id: str | None = None
    token_id: str | None = None
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    subject_token: SecretStr | None = field(default=None, repr=False, compare=False)
    expires_at: float | None = field(default=None, compare=False)  # the subject token's `exp` (epoch seconds)

    @property
    def key(self) -> tuple[str, str]:
        """What per-user state is keyed by: `(issuer, subject)`."""
        return (self.issuer, self.subject)

    @property
    def from_identity_provider(self) -> bool:
        return self.issuer != STATION_ISSUER


@dataclass(frozen=True, slots=True)
class Caller:
    """A request's identity (shown in audit records) and role (what it may see and call); the
    `principal` of a caller who signed in."""

    identity: str
    role: Role
    face: Face
    principal: Principal | None = None

    @classmethod
    def library(cls, identity: str = "library") -> Caller:
        """The program that embeds the station: trusted, sees everything."""
        return cls(identity, Role.ADMIN, Face.LIBRARY)

    @classmethod
    def cli(cls) -> Caller:
        """The person at the terminal running `mcpstation`: the owner of its data directory."""
        return cls("cli", Role.ADMIN, Face.CLI)

    @classmethod
    def token(cls, name: str, role: Role, face: Face) -> Caller:
        """The holder of the station's API token named `name`."""
        return cls(name, role, face, Principal(STATION_ISSUER, name, client_id=name))

    @classmethod
    def signed_in(cls, principal: Principal, role: Role, face: Face) -> Caller:
        """A subject of an identity provider, by its verified access token."""
        return cls(principal.subject, role, face, principal)

    @property
    def key(self) -> tuple[str, str]:
        """Who this caller is, whichever face it came through: its principal's `(issuer, subject)`,
        as per-user state is keyed, or `(face, identity)` for a caller who did not sign in (the
        terminal, the library, local-dev mode)."""
        return self.principal.key if self.principal is not None else (str(self.face), self.identity)

    @property
    def groups(self) -> frozenset[str]:
        return self.principal.groups if self.principal is not None else frozenset()

    @property
    def actor(self) -> str:
        """How management actions by this caller are audited: `api:ci-bot`, `gateway:local`, `cli`.

        A caller whose identity is just its face's name (the person at the terminal) is the face alone.
        """
        return str(self.face) if self.identity == self.face else f"{self.face}:{self.identity}"

    def sees(self, required: Role) -> bool:
        """Whether this caller's role reaches `required`."""
        return self.role.reaches(required)
