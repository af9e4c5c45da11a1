"""`Caller`: who is asking, as every face knows it; the pipeline's visibility and audit read it.

A `Caller` has no default: each face builds the one it knows. The library is the trusted
in-process user (`Caller.library()`), the CLI the person at the terminal, the HTTP API and the
gateway over HTTP the owner of the bearer token of each request, the gateway over stdio the
caller its operator configured.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mcpstation.config.models import Role

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
class Caller:
    """A request's identity (shown in audit records) and role (what it may see and call)."""

    identity: str
    role: Role
    face: Face

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
        """The holder of the API token named `name`."""
        return cls(name, role, face)

    @property
    def actor(self) -> str:
        """How management actions by this caller are audited: `api:ci-bot`, `gateway:local`, `cli`.

        A caller whose identity is just its face's name (the person at the terminal) is the face alone.
        """
        return str(self.face) if self.identity == self.face else f"{self.face}:{self.identity}"

    def sees(self, required: Role) -> bool:
        """Whether this caller's role reaches `required`."""
        return self.role.reaches(required)
