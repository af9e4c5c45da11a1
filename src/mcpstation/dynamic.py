"""`DynamicServers`: servers added, removed, enabled, disabled and approved at run time.

Every change is admitted by policy, written to the store first, then applied to the roster and
the pool; a change the store refused is not applied. Whatever face asked (library, CLI, HTTP
API, the LLM's management tools) gets the same `ServerChange`, so a refusal reads the same
everywhere. Static config always wins over a stored server of the same name.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import anyio
from pydantic import TypeAdapter, ValidationError

from mcpstation.config.models import AnyServerSpec, InProcessServerSpec, PolicySettings, ServerSpec, StdioServerSpec
from mcpstation.connection import ServerConnection
from mcpstation.errors import UsageError
from mcpstation.events import EventHub, StationEvent
from mcpstation.live_catalog import LiveCatalog
from mcpstation.policy import UrlGuard
from mcpstation.policy.admission import admit
from mcpstation.policy.commands import Verdict
from mcpstation.policy.oauth_guard import oauth_request_guard
from mcpstation.pool import ConnectionPool
from mcpstation.roster import Origin, RosterEntry, ServerRoster, Standing
from mcpstation.status import ServerState
from mcpstation.store import DynamicServer, Store

logger = logging.getLogger(__name__)

CONNECT_GRACE_S = 5.0  # beyond a server's own start-up budget, how long a change waits for it
APPROVAL_LOOKBACK = 1000  # management actions of one server searched for its approval

_SPEC_ADAPTER: TypeAdapter[ServerSpec] = TypeAdapter(ServerSpec)


class ChangeAction(enum.StrEnum):
    ADD = "add"
    REMOVE = "remove"
    ENABLE = "enable"
    DISABLE = "disable"
    RELOAD = "reload"
    APPROVE = "approve"


@dataclass(frozen=True, slots=True)
class ServerChange:
    """The outcome of one management action, in words an LLM or a person can act on."""

    ok: bool
    action: ChangeAction
    server: str
    message: str
    state: ServerState | None = None
    tools: int = 0

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
        }


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

    # -- start-up ----------------------------------------------------------------------------------

    async def load(self) -> list[AnyServerSpec]:
        """Put every stored server in the roster; return those to connect now. The others are kept
        and reported, never deleted (a policy change may allow them again)."""
        launch: list[AnyServerSpec] = []
        for record in await self.store.list_dynamic_servers():
            entry = RosterEntry(record.spec, Origin.DYNAMIC, record=record)
            if (static := self.roster.get(record.name)) is not None and static.origin is not Origin.DYNAMIC:
                reason = f"shadowed by the static server {record.name!r} (static config wins)"
                logger.warning("dynamic server %r not started: %s", record.name, reason)
                shadowed = entry.held(Standing.SHADOWED, reason)
                self.roster.put(replace(static, shadowed=shadowed))
                continue
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
                    launch.append(full.spec)
            if entry.reason:
                logger.warning("dynamic server %r not started: %s", record.name, entry.reason)
            self.roster.put(entry)
        return launch

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
        """Admitted by policy, persisted first, then connected; a `confirm` verdict waits as pending."""
        spec = parse_spec(spec)
        name = spec.name
        action = ChangeAction.ADD
        existing = self.roster.get(name)
        if existing is not None and existing.origin is not Origin.DYNAMIC:
            return self._refused(
                action, name, f"a static server is named {name!r}; static config wins, pick another name"
            )
        if existing is not None:
            return self._refused(action, name, f"a dynamic server named {name!r} exists; remove it first")
        admission = await admit(spec, self._policy(), guard=self._guard())
        if admission.decision is Verdict.DENY:
            return self._refused(action, name, admission.reason)
        pending = admission.decision is Verdict.CONFIRM
        record = await self.store.add_dynamic_server(
            spec,
            actor=actor,
            status="pending_approval" if pending else "active",
            note=admission.reason if pending else None,
        )
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

    async def remove(self, name: str, *, actor: str) -> ServerChange:
        """Deleted from the store, disconnected, its tools gone."""
        action = ChangeAction.REMOVE
        if refusal := self._not_dynamic(action, name):
            return refusal
        await self.store.remove_dynamic_server(name, actor=actor)
        self.roster.remove(name)
        await self.pool.stop([name])
        return self._announce(ServerChange(True, action, name, f"removed {name!r}", ServerState.REMOVED))

    async def set_enabled(self, name: str, enabled: bool, *, actor: str) -> ServerChange:
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

    async def approve(self, name: str, *, actor: str) -> ServerChange:
        """An operator approves a pending server; it connects now."""
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

    # -- helpers -------------------------------------------------------------------------------------

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

    def _refused(self, action: ChangeAction, name: str, reason: str) -> ServerChange:
        logger.warning("%s of server %r refused: %s", action, name, reason)
        return self._announce(ServerChange(False, action, name, f"refused: {reason}"))

    def _announce(self, change: ServerChange) -> ServerChange:
        self.events.publish(StationEvent("server", change.server, change.to_dict()))
        return change
