"""`ServerConnection`: one server, owned by one supervised task for its whole life.

The owner task (`run`) loops over sessions: each session (`connection/session.py`) enters and
leaves the SDK `Client` in that same task, discovers what the server offers and keeps it
current; when a session dies, the loop restarts it with backoff and jitter, or opens the
circuit after too many failures in a row. The connection is the session's `SessionOwner`: it
hears the session's reports (ready, a listing, a failure, the end) and nothing else of it.
Other tasks only *use* the connection: `request(operation)` sends one upstream request over
the current session, and `snapshot()` reads its state.

A lazy server with a known listing (the catalog cache) starts IDLE: its listing serves the
catalog at once, and the first request starts it (`start_for_request`). After `idle_stop_s`
without requests (never while one is in flight or a resource subscription is open) it is stopped
again and goes back to IDLE with the listing it last had.
"""

from __future__ import annotations

import enum
import logging
import math
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol, TypeVar

import anyio
import mcp_types as types
from anyio import CapacityLimiter
from mcp.client import Client
from mcp.shared.dispatcher import ProgressFnT

from mcpstation.config.models import AnyServerSpec, StationSettings
from mcpstation.connection._errors import forgot_session, translate_call_errors
from mcpstation.connection.budgets import call_timeout_s, idle_stop_s, startup_budget_s
from mcpstation.connection.discovery import Discovered
from mcpstation.connection.early import EarlyStarts
from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
from mcpstation.connection.known import KnownListing
from mcpstation.connection.listing import ServerListing, start_mode
from mcpstation.connection.operations import Operation
from mcpstation.connection.progress import OrderedProgress
from mcpstation.connection.session import Precheck, ServerEvents, Session, SessionSupport
from mcpstation.connection.snapshot import NO_SESSION, ConnectionSnapshot, SessionInfo
from mcpstation.connection.state import ConnectionState
from mcpstation.connection.transports import RequestGuard
from mcpstation.errors import ConnectionLost, ServerUnavailable

logger = logging.getLogger(__name__)

BACKOFF_JITTER = 0.2  # +/- fraction of each restart delay, so restarts of many servers spread out
STABLE_SESSION_S = 30.0  # a session that lasted this long resets the consecutive-failure count
REMOTE_TRANSPORTS = frozenset({"streamable_http", "sse", "websocket"})  # where a request may be sent again

T = TypeVar("T")

__all__ = ["ConnectionObserver", "Precheck", "ServerConnection"]


class ConnectionObserver(ServerEvents, Protocol):
    """Who owns the connection and hears what happens in it (the station's pool)."""

    def connection_changed(self, connection: ServerConnection) -> None:
        """Its state or listing changed."""
        ...


_DORMANT_STATES = frozenset({ConnectionState.IDLE, ConnectionState.STARTING, ConnectionState.STOPPING})


class _Intent(enum.Enum):
    """What the owner task is asked to do next."""

    RUN = "run"
    RECONNECT = "reconnect"
    STOP = "stop"


class ServerConnection:
    """One server: its lifecycle state, its last listing, and the requests routed to it."""

    def __init__(
        self,
        spec: AnyServerSpec,
        settings: StationSettings,
        *,
        hooks: SessionHooks = NO_HOOKS,
        observer: ConnectionObserver | None = None,
        precheck: Precheck | None = None,
        request_guard: RequestGuard | None = None,
        start_slots: CapacityLimiter | None = None,
        known: KnownListing | None = None,
        early: EarlyStarts | None = None,
    ) -> None:
        """`start_slots` bounds how many connections are starting at once (shared by a pool);
        `known` makes a lazy server start IDLE with that listing; a session adopts the process
        `early` started for the server, if any."""
        self.spec = spec
        self.settings = settings
        self.observer = observer
        self.subscriptions: set[str] = set()  # URIs to subscribe to again on every new session
        self._support = SessionSupport(
            hooks=hooks,
            events=observer,
            precheck=precheck,
            request_guard=request_guard,
            start_slots=start_slots,
            early=early,
        )
        self._state = ConnectionState.STARTING
        self._error: str | None = None
        self._info = NO_SESSION
        self._listing = ServerListing(
            server=spec.name,
            namespace=spec.namespace,
            naming=spec.naming,
            include_tools=spec.include_tools,
            exclude_tools=spec.exclude_tools,
        )
        self._warnings: tuple[str, ...] = ()
        self._restarts = 0
        self._failures = 0
        self._intent = _Intent.RUN
        self._session: Session | None = None
        self._last_stderr: tuple[str, ...] = ()
        self._stall_note: str | None = None  # what `session_stalled` last said
        self._last_transport_warnings: tuple[str, ...] = ()
        self._settled = anyio.Event()
        self._stopped = anyio.Event()
        self._state_changed = anyio.Event()
        self._wake = anyio.Event()
        self._ttl_ms: int | None = None  # the server's cache hint for its last listing, when it gave one
        self._live_listing = False  # the listing came from a session of this connection
        self._dormant = False  # a lazy server between runs whose known listing serves the catalog
        self._wanted = False  # a request asked a dormant server to start
        self._in_flight = 0
        self._last_used = 0.0
        self._activity = anyio.Event()
        self._activity_watched = False  # someone waits in `activity_ended`
        if known is not None:
            self._listing = replace(
                self._listing,
                tools=known.tools,
                prompts=known.prompts,
                resources=known.resources,
                templates=known.templates,
            )
            self._info = known.info
            self._dormant = True
            self._wanted = known.stale
            self._settled.set()  # its catalog is known: nobody waits for it to start

    # -- what readers see ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def is_ready(self) -> bool:
        return self._state is ConnectionState.READY and self._session is not None and self._session.client is not None

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def listing(self) -> ServerListing:
        return self._listing

    @property
    def info(self) -> SessionInfo:
        """What the last ready session learnt: protocol version, server identity, pid."""
        return self._info

    @property
    def pid(self) -> int | None:
        return self._info.pid

    @property
    def protocol_version(self) -> str | None:
        return self._info.protocol_version

    @property
    def server_name(self) -> str | None:
        return self._info.server_name

    @property
    def restarts(self) -> int:
        return self._restarts

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        session = self._session
        return session.stderr_tail if session is not None else self._last_stderr

    @property
    def warnings(self) -> tuple[str, ...]:
        """What went wrong without failing: listings cut short, tools dropped, floods, unreadable lines,
        a transport fallen back to."""
        session = self._session
        transport = tuple(session.stats.warnings(self.name)) if session is not None else self._last_transport_warnings
        return self._fallback_warning() + self._warnings + transport

    def _fallback_warning(self) -> tuple[str, ...]:
        spoken = self._info.transport
        if spoken is None or spoken == self.spec.transport:
            return ()
        return (
            f"server {self.name!r} answers only the older HTTP+SSE transport: connected over SSE "
            f'(type = "sse" in its entry skips the first try)',
        )

    def snapshot(self) -> ConnectionSnapshot:
        return ConnectionSnapshot(
            name=self.name,
            transport=self.spec.transport,
            state=self._state,
            error=self._error,
            session=self._info,
            listing=self._listing,
            warnings=self.warnings,
            restarts=self._restarts,
            stderr_tail=self.stderr_tail,
        )

    @property
    def is_lazy(self) -> bool:
        return start_mode(self.spec, self.settings) == "lazy"

    @property
    def is_dormant(self) -> bool:
        """A lazy server between runs (IDLE, or starting or stopping around an idle spell): its
        known listing stands for it, and a request starts it."""
        return self._dormant and self._state in _DORMANT_STATES

    @property
    def offers_listing(self) -> bool:
        """Whether its listing belongs in the catalog: it is ready, or dormant."""
        return self._state is ConnectionState.READY or self.is_dormant

    @property
    def live_listing(self) -> bool:
        """Whether the listing came from a session of this connection (not only from the cache)."""
        return self._live_listing

    @property
    def ttl_ms(self) -> int | None:
        """How long the server said its last listing may be cached, if it said."""
        return self._ttl_ms

    @property
    def idle_stop_s(self) -> float:
        return idle_stop_s(self.spec, self.settings)

    @property
    def settled(self) -> anyio.Event:
        """Set once the first start attempt has an outcome."""
        return self._settled

    @property
    def startup_budget_s(self) -> float:
        return startup_budget_s(self.spec, self.settings)

    @property
    def call_timeout_s(self) -> float:
        return call_timeout_s(self.spec, self.settings)

    def __repr__(self) -> str:
        pid = f" pid={self.pid}" if self.pid else ""
        tools = len(self._listing.tools)
        return f"<ServerConnection {self.name!r} {self.spec.transport} {self._state!r}{pid} tools={tools}>"

    async def wait_for_state(self, *states: ConnectionState) -> ConnectionState:
        """Return the state once the connection is in one of `states` (bound it with a timeout)."""
        while self._state not in states:
            await self._state_changed.wait()
        return self._state

    async def wait_settled_after_reconnect(self) -> None:
        """Return once a reconnect has an outcome: READY, FAILED, BACKING_OFF or STOPPED."""
        seen_start = self._state is ConnectionState.STARTING
        while not (seen_start and self._state not in (ConnectionState.STARTING, ConnectionState.STOPPING)):
            await self._state_changed.wait()
            seen_start = seen_start or self._state is ConnectionState.STARTING

    async def wait_stopped(self) -> None:
        """Return once the owner task has ended and its processes are gone."""
        await self._stopped.wait()

    # -- control from other tasks ------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the owner task to close the session and end; returns at once."""
        self._intent = _Intent.STOP
        if self._state is ConnectionState.READY:
            self._set_state(ConnectionState.STOPPING)
        if self._session is not None:
            self._session.end(stopping=True)
        self._wake.set()

    def reconnect(self) -> None:
        """Drop the session (if any) and connect again now, closing the circuit breaker."""
        if self._intent is not _Intent.STOP:
            self._intent = _Intent.RECONNECT
            if self._session is not None:
                self._session.end(stopping=False)
        self._failures = 0
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._intent is _Intent.STOP

    def request_refresh(self, kinds: set[str]) -> None:
        """Re-list the given kinds soon; many requests within the debounce window cost one."""
        if self._session is not None:
            self._session.request_refresh(kinds)

    # -- lazy start and idle stop -------------------------------------------------------------------

    async def start_for_request(self, timeout_s: float) -> bool:
        """Start a dormant server for a request (once for all who ask) and wait until it is READY.

        Returns whether it is ready; False when it is not dormant, or did not come up within
        `timeout_s` (then it keeps starting for the next request).
        """
        if self.is_ready:
            return True
        if not self.is_dormant:
            return False
        if not self._wanted:
            logger.info("server %r starting for a request", self.name)
        self._wanted = True
        self._wake.set()
        settled = (ConnectionState.READY, ConnectionState.BACKING_OFF, ConnectionState.FAILED, ConnectionState.STOPPED)
        with anyio.move_on_after(timeout_s):
            await self.wait_for_state(*settled)
        return self.is_ready

    def idle_remaining_s(self) -> float | None:
        """How much longer a ready lazy server may go without requests before it is stopped; None
        while something holds it up (a request in flight or a resource subscription)."""
        if self._in_flight or self.subscriptions:
            return None
        return self.idle_stop_s - (anyio.current_time() - self._last_used)

    async def activity_ended(self) -> None:
        """Return when the last open request ends or a subscription goes."""
        self._activity_watched = True
        await self._activity.wait()

    def _note_activity_ended(self) -> None:
        if not self._activity_watched:
            return  # nobody waits: no new event per request (the idle watch waits only on lazy servers)
        self._activity_watched = False
        ended, self._activity = self._activity, anyio.Event()
        ended.set()

    # -- requests ----------------------------------------------------------------------------------

    async def request(
        self,
        operation: Operation[T],
        *,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> T:
        """Send one request over the current session; a timeout cancels it on the server, nothing else.

        A remote server that forgot the session gets a new one at once; the request is sent again
        on it if it never reached the server (its own answer said the session was unknown) or is
        safe to repeat (everything but a tool call), within the same timeout.

        Raises:
            ServerUnavailable, ConnectionLost, CallTimeout, RemoteError, MessageTooLarge, InvalidResult.
        """
        timeout = timeout_s or self.call_timeout_s
        deadline = anyio.current_time() + timeout
        again = self.spec.transport in REMOTE_TRANSPORTS  # one more try is allowed
        budget = timeout
        while True:
            session, client = self._ready_session(operation)
            try:
                return await self._send(session, client, operation, budget, progress, meta)
            except ConnectionLost as exc:
                forgotten = forgot_session(exc)
                session.lose(str(exc), forgotten=forgotten)
                if not (again and (forgotten or operation.repeatable) and await self._renewed(session, deadline)):
                    raise
            again = False
            budget = deadline - anyio.current_time()
            logger.info("server %r has a new session; sending %r again", self.name, operation.target)

    def _ready_session(self, operation: Operation[T]) -> tuple[Session, Client]:
        session = self._session
        client = session.client if session is not None else None
        if session is None or client is None or self._state is not ConnectionState.READY:
            reason = f" ({self._error})" if self._error else ""
            raise ServerUnavailable(
                f"server {self.name!r} is not connected (state {self._state}){reason}; "
                f"cannot send {operation.target!r}",
                server=self.name,
            )
        return session, client

    async def _send(
        self,
        session: Session,
        client: Client,
        operation: Operation[T],
        budget_s: float,
        progress: ProgressFnT | None,
        meta: types.RequestParamsMeta | None,
    ) -> T:
        ordered = OrderedProgress(progress) if progress is not None else None
        self._in_flight += 1
        self._last_used = anyio.current_time()
        try:
            with translate_call_errors(server=self.name, tool=operation.target, timeout_s=budget_s):
                result = await operation.send(client, timeout_s=budget_s, progress=ordered, meta=meta)
        finally:
            self._in_flight -= 1
            self._last_used = anyio.current_time()
            if not self._in_flight:
                self._note_activity_ended()
        operation.applied(self.subscriptions)  # before the idle watch looks again
        if ordered is not None:
            await ordered.settled()
        return result

    async def _renewed(self, lost: Session, deadline: float) -> bool:
        """Wait (until `deadline`) for a session after `lost` to be READY; False if it failed or stopped."""
        with anyio.move_on_after(deadline - anyio.current_time()):
            while not (self._session is not lost and self.is_ready):
                if self._state in (ConnectionState.FAILED, ConnectionState.STOPPED) or self.stopping:
                    return False
                await self._state_changed.wait()
        return self._session is not lost and self.is_ready

    # -- the owner task ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Own the connection until `stop()`: connect, serve, restart with backoff, or fail."""
        ever_ready = False
        try:
            while self._intent is not _Intent.STOP:
                if self._dormant and not self._wanted and self._intent is _Intent.RUN:
                    self._set_state(ConnectionState.IDLE)
                    self._settled.set()
                    await self._wait_until(lambda: self._wanted or self._intent is not _Intent.RUN)
                    if self.stopping:
                        break
                self._wanted = False
                self._intent = _Intent.RUN
                self._set_state(ConnectionState.STARTING)
                session = Session(self, self._support)
                self._session = session
                try:
                    await session.run()
                finally:
                    self._session = None
                    self._last_stderr = session.stderr_tail
                    self._last_transport_warnings = tuple(session.stats.warnings(self.name))
                    self._info = replace(self._info, pid=None)  # its processes are gone
                if not session.went_idle:
                    self._dormant = False  # a failed start or a lost session: its listing no longer stands
                if session.forgotten and not self.stopping:
                    logger.warning("server %r forgot its session (did it restart?); opening a new one", self.name)
                became_ready = session.became_ready
                ever_ready = ever_ready or became_ready
                self._settled.set()
                if self._intent is _Intent.STOP:
                    break
                if self._intent is _Intent.RECONNECT or session.went_idle:
                    continue
                if became_ready and session.ready_for_s() >= STABLE_SESSION_S:
                    self._failures = 1  # it ran well for a while: a fresh run of failures
                else:
                    self._failures += 1
                if not ever_ready or self._failures >= self.settings.max_consecutive_failures:
                    self._set_state(ConnectionState.FAILED)
                    await self._wait_for_intent()
                    continue
                if session.forgotten and self._failures == 1:
                    self._restarts += 1  # the spec's answer to a forgotten session: a new one at once
                    continue
                delay = self._backoff_delay()
                self._set_state(ConnectionState.BACKING_OFF)
                logger.warning(
                    "server %r lost (%s); restarting in %.1f s (failure %d of %d)",
                    self.name,
                    self._error,
                    delay,
                    self._failures,
                    self.settings.max_consecutive_failures,
                )
                await self._wait_for_intent(delay)
                self._restarts += 1
        finally:
            self._set_state(ConnectionState.STOPPED)
            self._settled.set()
            self._stopped.set()

    def _backoff_delay(self) -> float:
        settings = self.settings
        delay: float = min(
            settings.restart_backoff_max_s, settings.restart_backoff_s * 2.0 ** max(0, self._failures - 1)
        )
        return delay * random.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER)

    async def _wait_for_intent(self, timeout_s: float = math.inf) -> None:
        """Sleep until stop or reconnect is asked, or `timeout_s` passed."""
        await self._wait_until(lambda: self._intent is not _Intent.RUN, timeout_s)

    async def _wait_until(self, condition: Callable[[], bool], timeout_s: float = math.inf) -> None:
        """Sleep until `condition()` holds (checked whenever the connection is woken), or `timeout_s` passed."""
        with anyio.move_on_after(timeout_s):
            while not condition():
                await self._wake.wait()
                self._wake = anyio.Event()

    # -- what sessions report (SessionOwner) -----------------------------------------------------------

    def session_ready(self, info: SessionInfo) -> None:
        fell_back = info.transport not in (self.spec.transport, self._info.transport)
        self._info = info
        if fell_back:
            logger.warning("%s", "; ".join(self._fallback_warning()))  # said once; `status` keeps saying it
        self._error = None
        self._last_used = anyio.current_time()
        self._set_state(ConnectionState.READY)
        self._settled.set()
        listing = self._listing
        logger.info(
            "server %r ready: %s, %d tools, %d prompts, %d resources, %d templates (%.2f s)",
            self.name,
            info.protocol_version,
            len(listing.tools),
            len(listing.prompts),
            len(listing.resources),
            len(listing.templates),
            info.startup_s or 0.0,
        )

    def listing_found(self, discovered: Discovered, dropped: tuple[str, ...], *, full: bool) -> None:
        """Swap in the listed kinds; `full` replaces every warning, else only those of the kinds listed.

        A refresh of a ready session is announced to the observer; a start's listing is announced
        with READY.
        """
        found = discovered.found
        warnings = discovered.warnings + dropped
        self._listing = replace(self._listing, **found)  # type: ignore[arg-type]
        self._live_listing = True
        if discovered.ttl_ms is not None or full:
            self._ttl_ms = discovered.ttl_ms
        if full:
            self._warnings = warnings
            return
        kept = tuple(w for w in self._warnings if not any(kind in w for kind in found))
        self._warnings = kept + warnings
        logger.info(
            "server %r lists changed (%s): %d tools", self.name, ", ".join(sorted(found)), len(self._listing.tools)
        )
        if self.observer is not None:
            self.observer.connection_changed(self)

    def session_failed(self, error: str) -> None:
        self._error = error

    def session_stalled(self, note: str | None) -> None:
        """While it starts, `status` shows why it is quiet in its error; a note no longer true goes."""
        if note is not None:
            self._stall_note = self._error = note
        elif self._error is not None and self._error == self._stall_note:
            self._error = None
        if self.observer is not None:
            self.observer.connection_changed(self)

    def session_ending(self, *, idle: bool) -> None:
        if idle:
            self._dormant = True  # its listing stays in the catalog while it stops
            logger.info(
                "server %r unused for %g s; stopping it (its catalog stays, the next request starts it)",
                self.name,
                self.idle_stop_s,
            )
        if self._state is ConnectionState.READY:
            self._set_state(ConnectionState.STOPPING)

    def _set_state(self, state: ConnectionState) -> None:
        if state is self._state:
            return
        self._state = state
        changed, self._state_changed = self._state_changed, anyio.Event()
        changed.set()
        if self.observer is not None:
            self.observer.connection_changed(self)
