"""`ConnectionPool`: the running connections, each a supervised task of the station's task group.

The pool launches and stops connections, waits for them to settle, reconnects them, and stops
them all at shutdown within a bound. It is also what every connection reports to: state
changes go to the live catalog and out as events, a server's stderr lines and log messages go
out as `log` events of *this* station only, resource updates as `resource` events.

Every connection it launches shares one bound on start-ups (`[station] max_concurrent_starts`),
so a fleet of a hundred servers spawns a few at a time rather than all at once. A lazy server
the catalog cache knows (`recall`) is launched IDLE with its known listing; the pool's
`StartPlan` says what happens to an eager one the cache knows.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcpstation.config.models import AnyServerSpec, StationSettings
from mcpstation.connection import ConnectionState, KnownListing, ServerConnection, SessionHooks, start_mode
from mcpstation.connection.connection import Precheck
from mcpstation.connection.early import EarlyStarts
from mcpstation.connection.transports import RequestGuard
from mcpstation.errors import UsageError
from mcpstation.events import EventHub, StationEvent

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # bound on closing sessions and processes (at shutdown, and per stop)


class StartPlan(enum.Enum):
    """How the servers the catalog cache knows start when a station starts (`Station(start=...)`).
    A server it does not know starts at once, and the station's entry waits for it, whatever the
    plan; a server launched later (a reload, a change at run time) is launched as SETTLED says."""

    SETTLED = "settled"
    """An eager server starts at once and the station's entry waits for it; a lazy one waits IDLE."""
    BACKGROUND = "background"
    """An eager server starts at once, its cached listing serving meanwhile, and nobody waits for
    it: a request for it waits (bounded) until it is ready. A lazy one waits IDLE."""
    ON_DEMAND = "on_demand"
    """Every server waits IDLE, its cached listing serving, until a request needs it, even when
    the listing is older than its server's cache hint (a short-lived station: the CLI's one-shot)."""


class ConnectionPool:
    """The connections by server name; launched into the task group `bind` was given."""

    def __init__(
        self,
        settings: StationSettings,
        *,
        hooks: SessionHooks,
        events: EventHub,
        on_change: Callable[[ServerConnection], None],
    ) -> None:
        self.settings = settings
        self.hooks = hooks
        self.events = events
        self._on_change = on_change
        self._connections: dict[str, ServerConnection] = {}
        self._task_group: TaskGroup | None = None
        self.start_slots = anyio.CapacityLimiter(settings.concurrent_starts)
        self.recall: Callable[[AnyServerSpec], KnownListing | None] | None = None  # the catalog cache's lookup
        self.early: EarlyStarts | None = None  # processes started before the station, for their first session
        self.plan = StartPlan.SETTLED

    def bind(self, task_group: TaskGroup | None) -> None:
        self._task_group = task_group

    # -- lookups ----------------------------------------------------------------------------------

    def get(self, name: str) -> ServerConnection | None:
        return self._connections.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._connections

    @property
    def connections(self) -> Mapping[str, ServerConnection]:
        return dict(self._connections)

    def ready(self) -> list[ServerConnection]:
        return [c for c in self._connections.values() if c.state is ConnectionState.READY]

    def offering(self) -> list[ServerConnection]:
        """The connections whose listing belongs in the catalog: ready, or lazy and dormant."""
        return [c for c in self._connections.values() if c.offers_listing]

    # -- lifecycle --------------------------------------------------------------------------------

    def launch(
        self,
        spec: AnyServerSpec,
        *,
        precheck: Precheck | None = None,
        request_guard: RequestGuard | None = None,
    ) -> ServerConnection:
        """Start a connection's owner task; returns at once (wait on `settled`).

        A server whose listing the cache knows starts as the `plan` says; any other starts now.
        """
        if self._task_group is None:
            raise UsageError("the station is not running: use `async with Station(...) as station:`")
        known = self._known(spec)
        connection = ServerConnection(
            spec,
            self.settings,
            hooks=self.hooks,
            early=self.early,
            observer=self,
            precheck=precheck,
            request_guard=request_guard,
            start_slots=self.start_slots,
            known=known,
        )
        self._connections[spec.name] = connection
        if known is not None:  # its cached listing belongs in the catalog from now on
            self._on_change(connection)
        self._task_group.start_soon(connection.run, name=f"mcpstation server {spec.name!r}")
        return connection

    def _known(self, spec: AnyServerSpec) -> KnownListing | None:
        """The cached listing `spec`'s connection starts with, as the plan and its start mode say."""
        lazy = start_mode(spec, self.settings) == "lazy"
        if self.recall is None or (not lazy and self.plan is StartPlan.SETTLED):
            return None
        known = self.recall(spec)
        if known is None:
            return None
        if self.plan is StartPlan.ON_DEMAND:
            return replace(known, stale=False)
        if not lazy:  # BACKGROUND: start at once, as a stale listing does, the cached one serving meanwhile
            return replace(known, stale=True)
        return known

    async def stop(self, names: Iterable[str]) -> None:
        """Stop these connections (processes included) and forget them; bounded by `STOP_TIMEOUT_S`."""
        stopping = [c for name in names if (c := self._connections.pop(name, None)) is not None]
        for connection in stopping:
            connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S):
            for connection in stopping:
                await connection.wait_stopped()
        for connection in stopping:
            self._on_change(connection)

    async def wait_settled(self, connections: Iterable[ServerConnection], timeout_s: float) -> None:
        """Return once each has a first outcome, or `timeout_s` passed."""
        with anyio.move_on_after(timeout_s):
            for connection in connections:
                await connection.settled.wait()

    async def reconnect(self, connections: list[ServerConnection], timeout_s: float) -> None:
        for connection in connections:
            connection.reconnect()
        with anyio.move_on_after(timeout_s):
            for connection in connections:
                await connection.wait_settled_after_reconnect()

    def apply_settings(self, settings: StationSettings, *, keep: Iterable[str]) -> None:
        """New station settings for the connections that stay (the others are restarted anyway)."""
        self.settings = settings
        self.start_slots.total_tokens = settings.concurrent_starts
        for name in keep:
            connection = self._connections.get(name)
            if connection is not None:
                connection.settings = settings

    async def shutdown(self) -> None:
        """Stop every connection concurrently; past the bound, their tasks are cancelled."""
        connections = list(self._connections.values())
        for connection in connections:
            connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S) as scope:
            for connection in connections:
                await connection.wait_stopped()
        if scope.cancelled_caught and self._task_group is not None:
            logger.warning("servers did not stop within %g s; cancelling their tasks", STOP_TIMEOUT_S)
            self._task_group.cancel_scope.cancel()

    # -- what connections report (ConnectionObserver) ---------------------------------------------

    def connection_changed(self, connection: ServerConnection) -> None:
        self._on_change(connection)
        if self.events.has_subscribers:
            data = {"state": str(connection.state), "error": connection.error, "tools": len(connection.listing.tools)}
            self.events.publish(StationEvent("state", connection.name, data))

    def stderr_line(self, server: str, line: str) -> None:
        if self.events.has_subscribers:
            self.events.publish(StationEvent("log", server, {"level": "stderr", "message": line}))

    def server_log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        if self.events.has_subscribers:
            data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
            self.events.publish(StationEvent("log", server, {"level": params.level, "message": data}))

    def resource_updated(self, server: str, uri: str) -> None:
        self.events.publish(StationEvent("resource", server, {"uri": uri}))
