"""Servers managed at run time: what a change produced, and why a stored server is not running.

`Station.add_server` and friends return a `ServerChange` whatever face asked (library, CLI,
HTTP API, the LLM's management tools), so a refusal reads the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from mcpstation.config.models import ServerSpec
from mcpstation.errors import UsageError
from mcpstation.store import DynamicServer

ChangeAction = Literal["add", "remove", "enable", "disable", "reload", "approve"]
Origin = Literal["static", "dynamic"]

_SPEC_ADAPTER: TypeAdapter[ServerSpec] = TypeAdapter(ServerSpec)


@dataclass(frozen=True, slots=True)
class ServerChange:
    """The outcome of one management action, in words an LLM or a person can act on."""

    ok: bool
    action: ChangeAction
    server: str
    message: str
    state: str | None = None
    tools: int = 0

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "action": self.action,
            "server": self.server,
            "message": self.message,
            "state": self.state,
            "tools": self.tools,
        }


@dataclass(frozen=True, slots=True)
class DynamicEntry:
    """A stored dynamic server; `held` says why it is not connected (None when it is)."""

    record: DynamicServer
    held: str | None = None
    held_state: str | None = None


def parse_spec(spec: ServerSpec | dict[str, Any]) -> ServerSpec:
    """A spec from a typed model or a config-shaped dict (as the CLI, API and LLM tools send).

    Raises:
        UsageError: the dict is not a valid server entry; says which field and why.
    """
    if not isinstance(spec, dict):
        return spec
    try:
        return _SPEC_ADAPTER.validate_python(spec)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'][1:]) or 'server'}: {error['msg']}" for error in exc.errors()[:5]
        )
        raise UsageError(f"invalid server entry: {problems}") from None
