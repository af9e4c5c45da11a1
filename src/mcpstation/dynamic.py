"""`DynamicServers`: servers added, removed, enabled, disabled and approved at run time.

Every change is admitted by policy, written to the store first, then applied to the roster and
the pool; a change the store refused is not applied (so there is nothing to roll back). Whatever
face asked (library, CLI, HTTP API, the LLM's management tools) gets the same `ServerChange`, so a
refusal reads the same everywhere. Static config always wins over a stored server of the same name.
A change another process made is brought in by `follow`, which makes this station's view of one
server what the store says; changes of one server, local or followed, never interleave.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import TypeAdapter, ValidationError

from mcpstation.config.models import AnyServerSpec, InProcessServerSpec, PolicySettings, ServerSpec, StdioServerSpec
from mcpstation.connection import ServerConnection
from mcpstation.errors import StoreConflict, UsageError
from mcpstation.events import EventHub, StationEvent
from mcpstation.live_catalog import LiveCatalog
from mcpstation.policy import UrlGuard
from mcpstation.policy.admission import admit
from mcpstation.policy.commands import Verdict
from mcpstation.policy.oauth_guard import oauth_request_guard
from mcpstation.pool import ConnectionPool
from mcpstation.roster import Origin, RosterEntry, ServerRoster, Standing
from mcpstation.status import ServerState
from mcpstation.store import DynamicServer

if TYPE_CHECKING:
    from mcpstation.store import Store

logger = logging.getLogger(__name__)

CONNECT_GRACE_S = 5.0  # beyond a server's own start-up budget, how long a change waits for it
APPROVAL_LOOKBACK = 1000  # management actions of one server searched for its approval


@functools.cache
def _spec_adapter() -> TypeAdapter[ServerSpec]:
    return TypeAdapter(ServerSpec)  # built at first use: a station that adds no server at runtime never needs it


class ChangeAction(enum.StrEnum):
    ADD = "add"
    REMOVE = "remove"
    ENABLE = "enable"
    DISABLE = "disable"
    RELOAD = "reload"
    APPROVE = "approve"
    FOLLOW = "follow"  # another station (or the CLI) changed it; this one followed the store


@dataclass(frozen=True, slots=True)
class ServerChange:
    """The outcome of one management action, in words an LLM or a person can act on."""

    ok: bool
    action: ChangeAction
    server: str
    message: str
    state: ServerState | None = None
    tools: int = 0
    conflict: bool = False  # refused because the store already holds the name (maybe another station's)

    def __str__(self) -> str:
        return self.message

    @property
    def pending(self) -> bool:
        return self.state is ServerState.PENDING

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "action": str(self.action),
            "server": self.server,
            "message": self.message,
            "state": None if self.state is None else str(self.state),
            "tools": self.tools,
            "conflict": self.conflict,
        }


def parse_spec(spec: ServerSpec | dict[str, Any]) -> ServerSpec:
    """A spec from a typed model or a config-shaped dict (as the CLI, API and LLM tools send).

    Raises:
        UsageError: the dict is not a valid server entry; says which field and why.
    """
    if not isinstance(spec, dict):
        return spec
    try:
        return _spec_adapter().validate_python(spec)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'][1:]) or 'server'}: {error['msg']}" for error in exc.errors()[:5]
        )
        raise UsageError(f"invalid server entry: {problems}") from None


class DynamicServers:
    """The run-time side of the roster: stored servers, their admission and their changes."""

    def __init__(
        self,
        store: Store,
        roster: ServerRoster,
        pool: ConnectionPool,
        catalog: LiveCatalog,
        *,
        policy: Callable[[], PolicySettings],
        guard: Callable[[], UrlGuard],
        events: EventHub,
    ) -> None:
        self.store = store
        self.roster = roster
        self.pool = pool
        self.catalog = catalog
        self.events = events
        self._policy = policy
        self._guard = guard
        self._locks: dict[str, anyio.Lock] = {}

    # -- start-up ----------------------------------------------------------------------------------

    async def load(self) -> list[AnyServerSpec]:
        """Put every stored server in the roster; return those to connect now. The others are kept
        and reported, never deleted (a policy change may allow them again)."""
        launch: list[AnyServerSpec] = []
        for record in await self.store.list_dynamic_servers():
            if self._shadow(record):
                continue
            entry, spec = await self._entry_for(record)
            if spec is not None:
                launch.append(spec)
            self.roster.put(entry)
        return launch

    def _shadow(self, record: DynamicServer | None) -> bool:
        """Whether a static server holds the record's name; then the record rides on it, shadowed."""
        if record is None:
            return False
        static = self.roster.get(record.name)
        if static is None or static.origin is Origin.DYNAMIC:
            return False
        reason = f"shadowed by the static server {record.name!r} (static config wins)"
        logger.warning("dynamic server %r not started: %s", record.name, reason)
        shadowed = RosterEntry(record.spec, Origin.DYNAMIC, record=record).held(Standing.SHADOWED, reason)
        self.roster.put(replace(static, shadowed=shadowed))
        return True

    async def _entry_for(self, record: DynamicServer) -> tuple[RosterEntry, AnyServerSpec | None]:
        """The roster entry of a stored server as policy judges it today, and its full spec when
        it should run (None when it is held)."""
        entry = RosterEntry(record.spec, Origin.DYNAMIC, record=record)
        launch: AnyServerSpec | None = None
        if record.status != "active":
            entry = entry.held(Standing.PENDING, f"waiting for approval: {record.note or 'needs an operator'}")
        elif not record.enabled:
            entry = entry.held(Standing.DISABLED, None)
        else:
            full = await self._revealed(record.name)
            admission = await admit(full.spec, self._policy(), guard=self._guard())
            if admission.decision is Verdict.DENY:
                entry = entry.held(Standing.REFUSED, f"no longer allowed by policy: {admission.reason}")
            elif admission.decision is Verdict.CONFIRM and not await self._approved(record.name):
                # Stored as active under older, looser rules: today a person must say yes first.
                reason = f"waiting for approval: {admission.reason}; approve it with `mcpstation servers approve`"
                entry = entry.held(Standing.PENDING, reason)
            else:
                entry = RosterEntry(full.spec, Origin.DYNAMIC, record=record)
                launch = full.spec
        if entry.reason:
            logger.warning("dynamic server %r not started: %s", record.name, entry.reason)
        return entry, launch

    async def _approved(self, name: str) -> bool:
        """Whether a person approved this stored server (an `approve` action in the audit)."""
        actions = await self.store.list_actions(name, None, APPROVAL_LOOKBACK)
        return any(action.action == "approve" for action in actions)

    def launch(self, spec: AnyServerSpec) -> ServerConnection:
        """Connect a dynamic server: a remote one is judged again at every connect, and its OAuth
        requests pass the URL guard too."""
        if isinstance(spec, StdioServerSpec):
            return self.pool.launch(spec)
        url = getattr(spec, "url", "")
        return self.pool.launch(
            spec,
            precheck=self._recheck,
            request_guard=oauth_request_guard(url, self._guard(), server=spec.name),
        )

    async def _recheck(self, spec: AnyServerSpec) -> str | None:
        """A runtime-added URL is judged again at every connect: its DNS answer may have changed."""
        if isinstance(spec, InProcessServerSpec):
            return None  # only Python builds these; nothing an agent can steer
        admission = await admit(spec, self._policy(), guard=self._guard())
        return None if admission.decision is Verdict.ALLOW else admission.reason

    # -- changes -----------------------------------------------------------------------------------

    async def add(self, spec: ServerSpec | dict[str, Any], *, actor: str) -> ServerChange:
        """Admitted by policy, persisted first, then connected; a `confirm` verdict waits as pending.

        Two stations adding one name at once: the store's constraint lets one win, the other gets
        a refusal with `conflict` set (and soon follows the winner's server).
        """
        spec = parse_spec(spec)
        async with self._lock(spec.name):
            return await self._add(spec, actor=actor)

    async def remove(self, name: str, *, actor: str) -> ServerChange:
        """Deleted from the store, disconnected, its tools gone."""
        async with self._lock(name):
            return await self._remove(name, actor=actor)

    async def set_enabled(self, name: str, enabled: bool, *, actor: str) -> ServerChange:
        async with self._lock(name):
            return await self._set_enabled(name, enabled, actor=actor)

    async def approve(self, name: str, *, actor: str) -> ServerChange:
        """An operator approves a pending server; it connects now."""
        async with self._lock(name):
            return await self._approve(name, actor=actor)

    async def _add(self, spec: ServerSpec, *, actor: str) -> ServerChange:
        name = spec.name
        action = ChangeAction.ADD
        existing = self.roster.get(name)
        if existing is not None and existing.origin is not Origin.DYNAMIC:
            return self._refused(
                action, name, f"a static server is named {name!r}; static config wins, pick another name"
            )
        if existing is not None:
            reason = f"a dynamic server named {name!r} exists; remove it first"
            return self._refused(action, name, reason, conflict=True)
        admission = await admit(spec, self._policy(), guard=self._guard())
        if admission.decision is Verdict.DENY:
            return self._refused(action, name, admission.reason)
        pending = admission.decision is Verdict.CONFIRM
        try:
            record = await self.store.add_dynamic_server(
                spec,
                actor=actor,
                status="pending_approval" if pending else "active",
                note=admission.reason if pending else None,
            )
        except StoreConflict:
            reason = f"the store already holds a server named {name!r} (another station added it first)"
            return self._refused(action, name, reason, conflict=True)
        if pending:
            self.roster.put(
                RosterEntry(spec, Origin.DYNAMIC, record=record).held(
                    Standing.PENDING, f"waiting for approval: {admission.reason}"
                )
            )
            return self._announce(ServerChange(
                True, action, name,
                f"saved {name!r} as pending, not connected: waiting for a person: "
                f"`mcpstation servers approve {name}` ({admission.reason})",
                ServerState.PENDING,
            ))  # fmt: skip
        self.roster.put(RosterEntry(spec, Origin.DYNAMIC, record=record))
        return await self._connect(action, spec)

    async def _remove(self, name: str, *, actor: str) -> ServerChange:
        action = ChangeAction.REMOVE
        if refusal := self._not_dynamic(action, name):
            return refusal
        await self.store.remove_dynamic_server(name, actor=actor)
        self.roster.remove(name)
        await self.pool.stop([name])
        return self._announce(ServerChange(True, action, name, f"removed {name!r}", ServerState.REMOVED))

    async def _set_enabled(self, name: str, enabled: bool, *, actor: str) -> ServerChange:
        action = ChangeAction.ENABLE if enabled else ChangeAction.DISABLE
        if refusal := self._not_dynamic(action, name):
            return refusal
        entry = self.roster.get(name)
        assert entry is not None
        record = await self.store.update_dynamic_server(name, actor=actor, enabled=enabled)
        if not enabled:
            self.roster.put(RosterEntry(entry.spec, Origin.DYNAMIC, Standing.DISABLED, None, record))
            await self.pool.stop([name])
            return self._announce(ServerChange(True, action, name, f"disabled {name!r}", ServerState.DISABLED))
        if record.status != "active":
            self.roster.put(RosterEntry(entry.spec, Origin.DYNAMIC, Standing.PENDING, entry.reason, record))
            return self._announce(
                ServerChange(True, action, name, f"enabled {name!r}; it still needs approval", ServerState.PENDING)
            )
        full = await self._revealed(name)
        self.roster.put(RosterEntry(full.spec, Origin.DYNAMIC, record=record))
        return await self._connect(action, full.spec)

    async def _approve(self, name: str, *, actor: str) -> ServerChange:
        action = ChangeAction.APPROVE
        entry = self.roster.get(name)
        if entry is None or entry.origin is not Origin.DYNAMIC or entry.standing is not Standing.PENDING:
            return self._refused(action, name, f"no server named {name!r} is waiting for approval")
        full = await self._revealed(name)
        admission = await admit(full.spec, self._policy(), guard=self._guard())
        if admission.decision is Verdict.DENY:  # the policy may have tightened since it was added
            return self._refused(action, name, f"no longer allowed by policy: {admission.reason}")
        if full.status == "active":  # held at start: stored as active under older rules, never approved
            await self.store.record_action(str(action), actor=actor, server=name)
            record = full
        else:
            record = await self.store.update_dynamic_server(name, actor=actor, status="active")
        if not record.enabled:
            self.roster.put(RosterEntry(entry.spec, Origin.DYNAMIC, Standing.DISABLED, None, record))
            return self._announce(
                ServerChange(True, action, name, f"approved {name!r}; it is disabled", ServerState.DISABLED)
            )
        self.roster.put(RosterEntry(full.spec, Origin.DYNAMIC, record=record))
        return await self._connect(action, full.spec)

    async def reload(self, name: str, *, actor: str, timeout_s: float) -> ServerChange:
        """Reconnect one running server (static or dynamic) and list what it offers again."""
        action = ChangeAction.RELOAD
        connection = self.pool.get(name)
        if connection is None:
            return self._refused(action, name, f"server {name!r} is not running")
        await self.store.record_action(str(action), actor=actor, server=name)
        await self.pool.reconnect([connection], timeout_s)
        return self._change_for(action, connection)

    # -- changes made elsewhere (another station, a one-shot CLI) --------------------------------------

    async def follow(self, name: str) -> None:
        """Make this station's view of stored server `name` what the store says now: added,
        changed, held or removed, connected or stopped to match. Idempotent."""
        async with self._lock(name):
            record = await self.store.get_dynamic_server(name)
            if self._shadow(record):
                return
            current = self.roster.get(name)
            if current is not None and current.origin is not Origin.DYNAMIC:
                self.roster.put(replace(current, shadowed=None))  # its stored twin was removed
                return
            if record is None:
                if current is not None:
                    self.roster.remove(name)
                    await self.pool.stop([name])
                    self._announce(
                        ServerChange(True, ChangeAction.REMOVE, name, f"removed {name!r}", ServerState.REMOVED)
                    )
                return
            entry, spec = await self._entry_for(record)
            self.roster.put(entry)
            running = self.pool.get(name)
            if running is not None and (spec is None or running.spec != spec):
                await self.pool.stop([name])
                running = None
            if spec is not None and running is None:
                running = self.launch(spec)  # connects in the background; the catalog follows it
            self.catalog.mark_dirty()
            state = ServerState(str(running.state)) if running is not None else ServerState(str(entry.standing))
            self._announce(ServerChange(True, ChangeAction.FOLLOW, name, f"followed the store's {name!r}", state))

    def follow_reload(self, name: str) -> None:
        """Another station reloaded `name`: reconnect this station's connection too (in the background)."""
        connection = self.pool.get(name)
        if connection is not None:
            connection.reconnect()

    # -- helpers -------------------------------------------------------------------------------------

    def _lock(self, name: str) -> anyio.Lock:
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = anyio.Lock()
        return lock

    async def _revealed(self, name: str) -> DynamicServer:
        full = await self.store.get_dynamic_server(name, reveal_secrets=True)
        if full is None:
            raise UsageError(f"the stored server {name!r} disappeared from the store")
        return full

    async def _connect(self, action: ChangeAction, spec: AnyServerSpec) -> ServerChange:
        if spec.name in self.pool:
            await self.pool.stop([spec.name])
        connection = self.launch(spec)
        with anyio.move_on_after(connection.startup_budget_s + CONNECT_GRACE_S):
            await connection.settled.wait()
            if action is ChangeAction.RELOAD and connection.is_dormant:  # a reload lists again: start it now
                await connection.start_for_request(connection.startup_budget_s)
        await self.catalog.verify_pins()
        return self._change_for(action, connection)

    def _change_for(self, action: ChangeAction, connection: ServerConnection) -> ServerChange:
        name = connection.name
        state = ServerState(str(connection.state))
        if connection.is_ready:
            tools = sum(1 for t in self.catalog.snapshot.tools.values() if t.server == name)
            return self._announce(ServerChange(True, action, name, f"connected {name!r}: {tools} tools", state, tools))
        if connection.is_dormant:
            tools = sum(1 for t in self.catalog.snapshot.tools.values() if t.server == name)
            message = f"{name!r} is lazy: {tools} tools from its cached catalog; it starts on its first request"
            return self._announce(ServerChange(True, action, name, message, state, tools))
        reason = connection.error or f"still {connection.state}"
        message = f"saved {name!r}, but it did not connect: {reason}; it is tried again at the next start"
        if action is ChangeAction.RELOAD:
            message = f"{name!r} did not come back: {reason}"
        return self._announce(ServerChange(True, action, name, message, state))

    def _not_dynamic(self, action: ChangeAction, name: str) -> ServerChange | None:
        entry = self.roster.get(name)
        if entry is not None and entry.origin is not Origin.DYNAMIC:
            return self._refused(action, name, f"{name!r} is a static server; change it in the config file")
        if entry is None:
            return self._refused(action, name, f"no dynamic server named {name!r}")
        return None

    def _refused(self, action: ChangeAction, name: str, reason: str, *, conflict: bool = False) -> ServerChange:
        logger.info("%s of server %r refused: %s", action, name, reason)  # the change says why, to whoever asked
        return self._announce(ServerChange(False, action, name, f"refused: {reason}", conflict=conflict))

    def _announce(self, change: ServerChange) -> ServerChange:
        self.events.publish(StationEvent("server", change.server, change.to_dict()))
        return change
