"""What `status` shows: every known server's state, origin, versions, counts and last error; and why a
server cannot answer now (`offline_reason`), in the words requests to it fail with.

A server's state is its connection's while it runs, else the reason it does not (disabled,
shadowed, pending, refused); the two are one enum, so a reader never compares free strings.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcpstation.catalog import Catalog
from mcpstation.config.models import AnyServerSpec
from mcpstation.connection import ConnectionState, ServerConnection
from mcpstation.pipeline import SurfaceTotals
from mcpstation.policy import clean_text
from mcpstation.pool import ConnectionPool
from mcpstation.roster import Origin, RosterEntry, ServerRoster, Standing

MAX_INSTRUCTIONS_CHARS = 2000


class ServerState(enum.StrEnum):
    """A known server's state: its connection's lifecycle, or why it has none."""

    IDLE = "IDLE"  # a lazy server between runs: its catalog is known, the next request starts it
    STARTING = "STARTING"
    READY = "READY"
    BACKING_OFF = "BACKING_OFF"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    DISABLED = "DISABLED"
    SHADOWED = "SHADOWED"
    PENDING = "PENDING"
    REFUSED = "REFUSED"
    REMOVED = "REMOVED"  # only in the answer to a removal: the server is gone

    @property
    def is_held(self) -> bool:
        """Known but deliberately not run (not a failure to run)."""
        return self in (
            ServerState.DISABLED,
            ServerState.SHADOWED,
            ServerState.PENDING,
            ServerState.REFUSED,
            ServerState.REMOVED,
        )


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as `status` shows it; never carries a secret."""

    name: str
    state: ServerState
    transport: str
    target: str
    protocol_version: str | None
    server_name: str | None
    server_version: str | None
    tools: int
    prompts: int
    resources: int
    templates: int
    error: str | None
    pid: int | None
    startup_s: float | None
    restarts: int
    stderr_tail: tuple[str, ...]
    warnings: tuple[str, ...]
    instructions: str | None = None
    origin: Origin = Origin.STATIC
    tokens: int = 0  # estimated schema tokens of its tools in the catalog

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": str(self.origin),
            "state": str(self.state),
            "transport": self.transport,
            "target": self.target,
            "protocol_version": self.protocol_version,
            "server_name": self.server_name,
            "server_version": self.server_version,
            "tools": self.tools,
            "tokens": self.tokens,
            "prompts": self.prompts,
            "resources": self.resources,
            "templates": self.templates,
            "error": self.error,
            "pid": self.pid,
            "startup_s": None if self.startup_s is None else round(self.startup_s, 3),
            "restarts": self.restarts,
            "stderr_tail": list(self.stderr_tail),
            "warnings": list(self.warnings),
            "instructions": self.instructions,
        }


@dataclass(frozen=True, slots=True)
class StationStatus:
    servers: tuple[ServerStatus, ...]
    conflicts: tuple[dict[str, Any], ...]
    surface: SurfaceTotals | None = None  # the LLM surface of a caller who sees everything

    def seen_by(self, sees: Callable[[str], bool]) -> StationStatus:
        """The servers that `sees` names, without their stderr (servers' output is for admins, as
        their `log` events are), and the conflicts among them: what a caller who is not an admin
        may know of the station."""
        servers = tuple(replace(s, stderr_tail=()) for s in self.servers if sees(s.name))
        names = {s.name for s in servers}
        conflicts = tuple(c for c in self.conflicts if c.get("server") in names and c.get("winner") in (None, *names))
        return replace(self, servers=servers, conflicts=conflicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "servers": [s.to_dict() for s in self.servers],
            "conflicts": list(self.conflicts),
            "surface": self.surface.to_dict() if self.surface is not None else None,
        }


@dataclass(frozen=True, slots=True)
class ReloadReport:
    """What a reload did, by server name."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]

    def __str__(self) -> str:
        parts = [f"{label} {', '.join(names)}" for label, names in self._parts() if names]
        return "; ".join(parts) or "nothing changed"

    def _parts(self) -> list[tuple[str, tuple[str, ...]]]:
        return [("added", self.added), ("removed", self.removed), ("restarted", self.changed)]

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "unchanged": list(self.unchanged),
        }


def station_status(
    roster: ServerRoster,
    pool: ConnectionPool,
    catalog: Catalog,
    *,
    tokens: Mapping[str, int] | None = None,
    surface: SurfaceTotals | None = None,
    extra_warnings: Callable[[str], tuple[str, ...]] | None = None,
) -> StationStatus:
    """Every known server's status. `tokens`: estimated schema tokens of each server's catalog tools;
    `surface`: the LLM surface's totals; `extra_warnings`: what other parts know (tool pinning)."""
    servers: list[ServerStatus] = []
    counted = tokens or {}
    for entry in roster.entries():
        status = server_status(entry, pool.get(entry.name), tokens=counted.get(entry.name, 0))
        if extra_warnings is not None and (more := extra_warnings(entry.name)):
            status = replace(status, warnings=status.warnings + more)
        servers.append(status)
        if entry.shadowed is not None:
            servers.append(server_status(entry.shadowed, None))
    conflicts = tuple(c.to_dict() for c in catalog.conflicts)
    return StationStatus(servers=tuple(servers), conflicts=conflicts, surface=surface)


def server_status(entry: RosterEntry, connection: ServerConnection | None, *, tokens: int = 0) -> ServerStatus:
    spec = entry.spec
    if connection is None or not entry.active:
        state = ServerState.STOPPED if entry.standing is Standing.ACTIVE else ServerState(str(entry.standing))
        if not spec.enabled and entry.standing is Standing.ACTIVE:
            state = ServerState.DISABLED
        return ServerStatus(
            name=spec.name, state=state, transport=spec.transport, target=redacted_target(spec),
            protocol_version=None, server_name=None, server_version=None, tools=0, prompts=0, resources=0,
            templates=0, error=entry.reason, pid=None, startup_s=None, restarts=0, stderr_tail=(), warnings=(),
            origin=entry.origin,
        )  # fmt: skip
    snapshot = connection.snapshot()
    listing, info = snapshot.listing, snapshot.session
    instructions = info.instructions
    return ServerStatus(
        name=spec.name,
        state=ServerState(str(snapshot.state)),
        transport=spec.transport,
        target=redacted_target(spec),
        protocol_version=info.protocol_version,
        server_name=info.server_name,
        server_version=info.server_version,
        tools=len(listing.tools),
        prompts=len(listing.prompts),
        resources=len(listing.resources),
        templates=len(listing.templates),
        error=snapshot.error,
        pid=info.pid,
        startup_s=info.startup_s,
        restarts=snapshot.restarts,
        stderr_tail=snapshot.stderr_tail,
        warnings=snapshot.warnings,
        instructions=clean_text(instructions, max_chars=MAX_INSTRUCTIONS_CHARS) if instructions else None,
        origin=entry.origin,
        tokens=tokens,
    )


def offline_reason(roster: ServerRoster, pool: ConnectionPool, server: str) -> str | None:
    """Why `server` cannot answer now, for the LLM and the person; None when it can."""
    entry = roster.get(server)
    if entry is None:
        return f"server {server!r} is not in this station"
    if not entry.active:
        why = f": {entry.reason}" if entry.reason else ""
        return f"server {server!r} is not running ({entry.standing}{why})"
    connection = pool.get(server)
    if connection is None:
        return f"server {server!r} is not running"
    if connection.is_ready:
        return None
    if connection.state is ConnectionState.STARTING and not connection.listing.tools:
        return f"server {server!r} is still starting; its tools are not known yet"
    detail = f": {connection.error}" if connection.error else ""
    unknown = "" if connection.listing.tools else "; its tools are unknown because it never started"
    return f"server {server!r} is not running ({connection.state}{detail}){unknown}"


def redacted_target(spec: AnyServerSpec) -> str:
    """The command line or URL with any userinfo left out."""
    target = spec.target
    if "://" in target and "@" in target.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = target.split("://", 1)
        target = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return target


def describe_servers(statuses: Sequence[ServerStatus]) -> str:
    """A one-line summary: how many servers are in which state."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[str(status.state)] = counts.get(str(status.state), 0) + 1
    return ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
