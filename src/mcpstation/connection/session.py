"""`Session`: one session of a connection, from spawn or connect to close.

It runs inside the connection's owner task: it enters the SDK `Client` (which spawns the
process or opens the HTTP session), lists what the server offers, tells its owner it is READY,
keeps the lists and the server's health watched until the session is ended, recycled or lost,
and on the way out collects the server's last stderr lines and ends every process it left
behind.

A session knows its connection only through `SessionOwner`: what it reads (the spec, the
settings, the subscriptions, how idle the server is) and what it reports (ready, a listing,
a failure, the end). `ServerConnection` is the owner in the station; a test can be another.

Keeping the lists current: handshake-era servers push `list_changed` notifications; 2026-07-28
servers push nothing, so a `subscriptions/listen` stream brings their changes. Either way a
change asks for a refresh; the refresh waits for a quiet moment (`REFRESH_DEBOUNCE_S` without a
new change, at most `REFRESH_MAX_DELAY_S`), so a storm of notifications costs a re-listing or
two, not one each. Refreshes run one at a time, and while changes keep coming right after each
one (a server whose every listing announces another), each waits twice as long after the last
as the one before, up to `REFRESH_MAX_DELAY_S`: such a server costs one listing per two seconds.

Starting takes one of the pool's start slots (`SessionSupport.start_slots`), from before the
spawn until the first listing is in: a large fleet starts a few servers at a time instead of
all at once, and a server's start-up budget only runs once it has its slot. A stdio server that
only waits meanwhile lends its slot to the next one (`_start_slot`).
"""

from __future__ import annotations

import logging
import math
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Set
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from anyio import CapacityLimiter
from anyio.abc import TaskGroup, TaskStatus
from mcp.client import Client
from mcp.client.session import LoggingFnT
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.config.models import AnyServerSpec, StationSettings, StdioServerSpec, StreamableHttpServerSpec
from mcpstation.connection import _processes
from mcpstation.connection._end_watch import EndWatch
from mcpstation.connection._errors import describe_failure, forgot_session
from mcpstation.connection._launch import resolve_command
from mcpstation.connection._stall import stall_after_s, stall_note
from mcpstation.connection._start_slot import StartSlot
from mcpstation.connection._stderr import StderrSink
from mcpstation.connection.budgets import call_timeout_s, startup_budget_s
from mcpstation.connection.discovery import KINDS, Discovered, discover
from mcpstation.connection.early import EarlyStarts
from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
from mcpstation.connection.limits import InboundLimits
from mcpstation.connection.listing import start_mode
from mcpstation.connection.log_levels import PYTHON_LEVELS
from mcpstation.connection.operations import Subscribe
from mcpstation.connection.snapshot import SessionInfo
from mcpstation.connection.stats import CloseReason, TransportStats
from mcpstation.connection.transports import (
    HttpNotes,
    RequestGuard,
    Streams,
    TransportContext,
    command_not_found,
    open_sse_fallback,
    open_transport,
)
from mcpstation.errors import ServerStartError

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="mcpstation", version="0.1.0")
STDERR_SETTLE_S = 0.5  # time to collect a dead server's last stderr lines
STALL_LOOK_S = 0.25  # how often a stalled start is looked at again, to see it write
REFRESH_DEBOUNCE_S = 0.2  # a refresh waits until the server has been quiet this long...
REFRESH_MAX_DELAY_S = 2.0  # ...but never longer than this after the first change it serves
RESOURCE_KINDS = frozenset({"resources", "templates"})

Precheck = Callable[[AnyServerSpec], Awaitable[str | None]]
"""Asked before every connect; a reason refuses the connect (runtime-added URLs are judged again)."""


class ServerEvents(Protocol):
    """Who hears what a server says besides its answers: stderr, log messages, resource updates."""

    def stderr_line(self, server: str, line: str) -> None: ...

    def server_log(self, server: str, params: types.LoggingMessageNotificationParams) -> None: ...

    def resource_updated(self, server: str, uri: str) -> None: ...


class SessionOwner(Protocol):
    """The connection a session serves: what the session reads from it, and what it reports."""

    @property
    def spec(self) -> AnyServerSpec: ...

    @property
    def settings(self) -> StationSettings: ...

    @property
    def subscriptions(self) -> Set[str]:
        """Resource URIs to subscribe to again on a new session."""
        ...

    def idle_remaining_s(self) -> float | None:
        """How much longer the server may go unused; None while something holds it up."""
        ...

    async def activity_ended(self) -> None:
        """Return when the last open request ends or a subscription goes."""
        ...

    def session_ready(self, info: SessionInfo) -> None:
        """The session is up and its first listing is in (`listing_found` came first)."""
        ...

    def listing_found(self, discovered: Discovered, dropped: tuple[str, ...], *, full: bool) -> None:
        """A listing came in: every kind at start (`full`), the changed kinds on a refresh."""
        ...

    def session_failed(self, error: str) -> None:
        """Why the session could not start, or was lost."""
        ...

    def session_stalled(self, note: str | None) -> None:
        """The starting server has written nothing for a while (`note` says what it probably waits
        for); None: it wrote again, or answered."""
        ...

    def session_ending(self, *, idle: bool) -> None:
        """A ready session stops serving (`idle`: because the lazy server went unused)."""
        ...


@dataclass(frozen=True, slots=True)
class SessionSupport:
    """What a session is given besides its owner: host hooks, event sink, start slots, guards."""

    hooks: SessionHooks = NO_HOOKS
    events: ServerEvents | None = None
    precheck: Precheck | None = None
    request_guard: RequestGuard | None = None
    start_slots: CapacityLimiter | None = None
    early: EarlyStarts | None = None  # processes started before the station (`early.py`)


class Session:
    """One attempt to connect and serve; its flags die with it, so no session sees another's."""

    def __init__(self, owner: SessionOwner, support: SessionSupport | None = None) -> None:
        self.owner = owner
        self.support = support if support is not None else SessionSupport()
        self.client: Client | None = None
        self.became_ready = False
        self.went_idle = False  # ended because a lazy server went unused, not by a failure
        self.forgotten = False  # ended because the remote server no longer knows the session
        self.stats = TransportStats()  # what our transports skipped, dropped or cut in this session
        self._sink: StderrSink | None = None
        self._lost_reason: str | None = None
        self._lost = False
        self._stopping = False  # the owner asked the session to end for good
        self._done = anyio.Event()  # ending, lost or idle: stop serving
        self._failed = False  # a failure was reported to the owner
        self._connect_scope: anyio.CancelScope | None = None
        self._family: list[int] = []
        self._ready_at: float | None = None
        self._spawned_pid: int | None = None
        self._early_process: subprocess.Popen[bytes] | None = None  # adopted by the transport, not spawned
        self._spawned_at: float | None = None
        self._handshaken = False  # the server answered `initialize`
        self._stall_watch: anyio.CancelScope | None = None
        self._stall_ended = False
        self._stalled = False
        self._server_pid: int | None = None
        self._refresh_kinds: set[str] = set()
        self._refresh_wake = anyio.Event()
        self._transport: str | None = None  # the transport it fell back to, if it did

    @property
    def name(self) -> str:
        return self.owner.spec.name

    @property
    def lost(self) -> bool:
        return self._lost

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        return tuple(self._sink.tail) if self._sink is not None else ()

    def dropped_tools(self) -> tuple[str, ...]:
        """The tool definitions our transport left out of the listings since last asked, described."""
        return tuple(dropped.describe(self.name) for dropped in self.stats.take_dropped_tools())

    def ready_for_s(self) -> float:
        return 0.0 if self._ready_at is None else time.monotonic() - self._ready_at

    # -- from other tasks --------------------------------------------------------------------------

    def end(self, *, stopping: bool) -> None:
        """Stop serving soon (`stopping`: the connection ends, so a start in progress is abandoned)."""
        self._stopping = self._stopping or stopping
        if stopping and self._connect_scope is not None:
            self._connect_scope.cancel()
        self._done.set()

    def lose(self, reason: str, *, forgotten: bool = False) -> None:
        """A request proved the session dead (`forgotten`: the server no longer knows it): end it
        so the owner can open another."""
        if self.became_ready and not self._lost:
            self._lost_reason = reason
            self._lost = True
            self.forgotten = forgotten
            self._done.set()

    def request_refresh(self, kinds: set[str]) -> None:
        """Re-list `kinds` soon; many requests within the debounce window cost one."""
        self._refresh_kinds |= kinds
        self._refresh_wake.set()

    # -- the session -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and serve until ended or lost; failures are reported to the owner, never raised."""
        started = time.perf_counter()
        early = self.support.early.take(self.owner.spec) if self.support.early is not None else None
        if early is not None:  # its stderr has waited in the early sink
            sink: StderrSink | None = early.sink
            early.sink.tell(self._on_stderr)
            self._early_process = early.process
        else:
            sink = StderrSink(self.name, self._on_stderr) if isinstance(self.owner.spec, StdioServerSpec) else None
        self._sink = sink
        drained = anyio.Event()
        try:
            async with anyio.create_task_group() as helpers:
                if sink is not None:
                    helpers.start_soon(self._drain, sink, drained)
                try:
                    await self._connect_and_serve()
                except Exception as exc:  # boundary: one server's failure never reaches the station
                    self._record_failure(exc, started=started)
                finally:
                    self.client = None
                    if sink is not None:
                        await self._settle_stderr(sink, drained)
                    helpers.cancel_scope.cancel()
        finally:
            if sink is not None:
                sink.close()
        if not self.became_ready and not self._failed and not self._stopping:
            self._fail("the session ended before it was ready")

    async def _connect_and_serve(self) -> None:
        spec = self.owner.spec
        precheck = self.support.precheck
        if isinstance(spec, StdioServerSpec) and resolve_command(spec) is None:
            raise command_not_found(spec)
        if precheck is not None and (refusal := await precheck(spec)) is not None:
            raise ServerStartError(f"refused before connecting: {refusal}", server=self.name)
        budget = startup_budget_s(spec, self.owner.settings)
        slot = StartSlot(self.support.start_slots)
        with anyio.CancelScope() as connect_scope:
            self._connect_scope = connect_scope
            if self._stopping:
                connect_scope.cancel()
            await slot.acquire()
            connect_scope.deadline = anyio.current_time() + budget
            async with anyio.create_task_group() as lender:
                if isinstance(spec, StdioServerSpec):
                    lender.start_soon(slot.lend_while_idle, self.name, lambda: self._spawned_pid)
                    lender.start_soon(self._watch_for_stall, spec, stall_after_s(budget))
                try:
                    await self._connect_in_slot(slot, connect_scope)
                finally:
                    slot.release()
                    self._end_stall_watch()
        self._connect_scope = None
        if connect_scope.cancelled_caught and not self.became_ready and not self._stopping:
            quiet = self._quiet_s(at=connect_scope.deadline)  # not counting the time its process took to end
            if isinstance(spec, StdioServerSpec) and not self._handshaken and quiet >= stall_after_s(budget):
                raise TimeoutError(f"did not start within {budget:g} s ({stall_note(spec, quiet)})")
            raise TimeoutError(f"did not start within {budget:g} s")

    async def _connect_in_slot(self, slot: StartSlot, connect_scope: anyio.CancelScope) -> None:
        """Connect and serve; a streamable HTTP server that refused our first request as an
        HTTP+SSE-only server does is tried again over SSE."""
        spec = self.owner.spec
        notes = HttpNotes() if isinstance(spec, StreamableHttpServerSpec) else None
        try:
            await self._serve_over(self._client(notes), slot, connect_scope)
        except Exception:  # boundary: any failure to start may be an older transport's refusal
            if self.became_ready or notes is None or not notes.suggests_sse or self._stopping:
                raise
            assert isinstance(spec, StreamableHttpServerSpec)
            logger.debug(
                "server %r refused streamable HTTP with HTTP %s; trying HTTP+SSE",
                self.name,
                notes.refused_before_session,
            )
            self._transport = "sse"
            await self._serve_over(self._client(None, sse=spec), slot, connect_scope)

    async def _serve_over(self, connecting: Client, slot: StartSlot, connect_scope: anyio.CancelScope) -> None:
        """Spawn or connect, list everything, report READY (handing the slot back), then serve."""
        owner = self.owner
        started = time.perf_counter()
        spec = owner.spec
        hooks = self.support.hooks
        async with connecting as client, anyio.create_task_group() as watchers:
            self._handshaken = True
            self._end_stall_watch()
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                # Listen before listing, so no change between the two is missed.
                await watchers.start(self._listen, client)
            discovered = await discover(
                client, server=self.name, kinds=set(KINDS), max_pages=owner.settings.max_list_pages
            )
            owner.listing_found(discovered, self.dropped_tools(), full=True)
            connect_scope.deadline = math.inf
            self._connect_scope = None
            slot.release()
            self._mark_ready(client, time.perf_counter() - started)
            try:
                await hooks.session_started(spec, client)
            except MCPError as exc:
                logger.warning("server %r: host set-up after connect failed: %s", self.name, exc)
            if owner.subscriptions and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await self._resubscribe(client)
            try:
                await self._serve(client, watchers)
            finally:
                hooks.session_ended(spec, client)
            watchers.cancel_scope.cancel()
            self._family = self._process_family()
            if self._lost and not self._stopping:
                error = self._lost_reason or "connection lost: the server went away"
                telling = self._sink.telling_line() if self._sink is not None else None
                if telling:
                    error += f" (stderr: {telling!r})"
                self._fail(error)
            self.client = None
            owner.session_ending(idle=self.went_idle)

    async def _serve(self, client: Client, watchers: TaskGroup) -> None:
        """Keep the session current and healthy until it is ended, lost or idle."""
        settings = self.owner.settings
        watchers.start_soon(self._refresh, client)
        if settings.health_interval_s > 0:
            watchers.start_soon(self._check_health, client)
        if start_mode(self.owner.spec, settings) == "lazy":
            watchers.start_soon(self._idle_watch)
        await self._done.wait()

    # -- watching a ready session --------------------------------------------------------------------

    async def _refresh(self, client: Client) -> None:
        """Re-list what changed, debounced; a failed refresh keeps the previous listing."""
        owner = self.owner
        spacing = 0.0
        last_done = anyio.current_time()  # the start's listing counts as the first
        while True:
            await self._refresh_wake.wait()
            await self._quiet_moment()
            spacing = await self._space_out(spacing, last_done)
            kinds, self._refresh_kinds = self._refresh_kinds, set()
            if not kinds:
                continue
            settings = owner.settings
            try:
                with anyio.fail_after(call_timeout_s(owner.spec, settings)):
                    discovered = await discover(
                        client, server=self.name, kinds=kinds, max_pages=settings.max_list_pages
                    )
            except Exception as exc:  # boundary: a failed refresh keeps the previous listing
                if forgot_session(exc):
                    self.lose("connection lost: the server forgot the session", forgotten=True)
                    return
                logger.warning("server %r: refreshing %s failed: %s", self.name, sorted(kinds), describe_failure(exc))
                continue
            finally:
                last_done = anyio.current_time()
            owner.listing_found(discovered, self.dropped_tools(), full=False)

    async def _space_out(self, spacing: float, last_done: float) -> float:
        """Wait out the spacing a refresh owes the one before it; return the new spacing.

        A change that comes soon after the last refresh (within `REFRESH_MAX_DELAY_S` plus the
        current spacing) doubles the spacing, from `REFRESH_DEBOUNCE_S` up to `REFRESH_MAX_DELAY_S`;
        a change after a calm spell resets it.
        """
        now = anyio.current_time()
        if now - last_done >= REFRESH_MAX_DELAY_S + spacing:
            return 0.0
        spacing = min(REFRESH_MAX_DELAY_S, max(REFRESH_DEBOUNCE_S, 2 * spacing))
        await anyio.sleep(max(0.0, last_done + spacing - now))
        return spacing

    async def _quiet_moment(self) -> None:
        """Wait until no change has come for `REFRESH_DEBOUNCE_S`, or `REFRESH_MAX_DELAY_S` has passed."""
        deadline = anyio.current_time() + REFRESH_MAX_DELAY_S
        while True:
            self._refresh_wake = anyio.Event()
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                return
            with anyio.move_on_after(min(REFRESH_DEBOUNCE_S, remaining)):
                await self._refresh_wake.wait()
                continue
            return

    async def _check_health(self, client: Client) -> None:
        """Ping (legacy) or discover (modern) periodically; a server that stops answering is lost."""
        settings = self.owner.settings
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        while True:
            await anyio.sleep(settings.health_interval_s)
            try:
                with anyio.fail_after(settings.health_timeout_s):
                    if modern:
                        await client.session.discover()
                    else:
                        await client.session.send_ping()  # the session's ping is not deprecated
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:
                    continue  # answering at all is healthy
                if forgot_session(exc):
                    self.lose("connection lost: the server forgot the session", forgotten=True)
                else:
                    self.lose(f"health check failed: {describe_failure(exc)}")
                return
            except Exception as exc:  # boundary: any failure of the probe means an unhealthy server
                self.lose(f"health check failed: {describe_failure(exc) or 'no answer'}")
                return

    async def _listen(self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Modern servers push nothing; a `subscriptions/listen` stream brings their changes."""
        listening = False
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as sub:
                task_status.started()
                listening = True
                async for event in sub:
                    if isinstance(event, ToolsListChanged):
                        self.request_refresh({"tools"})
                    elif isinstance(event, PromptsListChanged):
                        self.request_refresh({"prompts"})
                    elif isinstance(event, ResourcesListChanged):
                        self.request_refresh(set(RESOURCE_KINDS))
        except (ListenNotSupportedError, SubscriptionLost, MCPError) as exc:
            logger.debug("server %r: no change stream (%s)", self.name, exc)
            if not listening:
                task_status.started()

    async def _on_message(self, message: Any) -> None:
        """The SDK's message handler: change notifications, resource updates, unreadable lines."""
        if isinstance(message, Exception):
            logger.warning("server %r sent something unreadable: %s", self.name, str(message).splitlines()[0][:200])
        elif isinstance(message, types.ToolListChangedNotification):
            self.request_refresh({"tools"})
        elif isinstance(message, types.PromptListChangedNotification):
            self.request_refresh({"prompts"})
        elif isinstance(message, types.ResourceListChangedNotification):
            self.request_refresh(set(RESOURCE_KINDS))
        elif isinstance(message, types.ResourceUpdatedNotification):
            events = self.support.events
            if events is not None:
                events.resource_updated(self.name, str(message.params.uri))

    async def _idle_watch(self) -> None:
        """End the session once a lazy server has gone `idle_stop_s` without requests."""
        owner = self.owner
        while True:
            remaining = owner.idle_remaining_s()
            if remaining is not None and remaining <= 0:
                self.went_idle = True
                self._done.set()
                return
            with anyio.move_on_after(math.inf if remaining is None else remaining):
                await owner.activity_ended()

    # -- the SDK client and its transport -------------------------------------------------------------

    def _client(self, notes: HttpNotes | None, *, sse: StreamableHttpServerSpec | None = None) -> Client:
        """The SDK client over the spec's transport (over HTTP+SSE for `sse`), not yet entered."""
        spec = self.owner.spec
        settings = self.owner.settings
        hooks = self.support.hooks
        context = TransportContext(
            errlog=self._sink.file if self._sink is not None else None,
            auth=hooks.http_auth(spec),
            request_guard=self.support.request_guard,
            on_process=self._on_process,
            process=self._early_process,
            stats=self.stats,
            limits=InboundLimits(
                notifications_per_s=settings.server_messages_per_s,
                notification_burst=int(settings.server_messages_burst),
            ),
            http_notes=notes,
        )
        self._early_process = None  # the transport has it now
        transport = open_sse_fallback(sse, context) if sse is not None else open_transport(spec, context)
        kwargs: dict[str, Any] = dict(hooks.client_kwargs(spec))
        kwargs["logging_callback"] = self._logging_callback(kwargs.get("logging_callback"))
        return Client(
            self._watched(transport),
            mode=spec.sdk_mode,
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
            cache=None,  # the catalog is our cache; stale SDK pages would only hide changes
            **kwargs,
        )

    def _logging_callback(self, hooked: LoggingFnT | None) -> LoggingFnT:
        """The host's logging callback (Python logging), then the event sink."""
        events = self.support.events
        name = self.name
        server_logger = logging.getLogger(f"mcpstation.server.{name}")

        async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
            if hooked is not None:
                await hooked(params)
            else:
                server_logger.log(PYTHON_LEVELS.get(params.level, logging.INFO), "%s", params.data)
            if events is not None:
                events.server_log(name, params)

        return logging_callback

    @asynccontextmanager
    async def _watched(self, transport: AbstractAsyncContextManager[Streams]) -> AsyncIterator[Streams]:
        async with transport as (read, write):
            yield EndWatch(read, self._on_eof), write

    def _on_eof(self) -> None:
        if self._lost_reason is None and self.stats.closed is not None and self.stats.closed is not CloseReason.EOF:
            self._lost_reason = f"connection lost: {self.stats.closed_detail or self.stats.closed}"
        self._lost = True
        self._done.set()

    def _on_process(self, pid: int) -> None:
        self._spawned_pid = pid
        self._spawned_at = anyio.current_time()

    # -- a start gone quiet ---------------------------------------------------------------------------

    def _quiet_s(self, at: float | None = None) -> float:
        """How long, at `at` (default: now), the spawned server had written nothing on stderr (0 before it spawned)."""
        if self._spawned_at is None:
            return 0.0
        last = self._sink.last_output_at if self._sink is not None else None
        now = anyio.current_time() if at is None else min(at, anyio.current_time())
        return max(0.0, now - max(self._spawned_at, last or self._spawned_at))

    async def _watch_for_stall(self, spec: StdioServerSpec, after_s: float) -> None:
        """Until the handshake: report the start as stalled while the server writes nothing for `after_s`."""
        with anyio.CancelScope() as self._stall_watch:
            while not (self._handshaken or self._stall_ended):
                quiet = self._quiet_s()
                if self._spawned_at is not None and quiet >= after_s and not self._stalled:
                    self._stalled = True
                    note = stall_note(spec, quiet)
                    logger.warning("server %r %s", self.name, note)
                    self.owner.session_stalled(note)
                elif quiet < after_s and self._stalled:
                    self._stalled = False
                    logger.info("server %r writes again while starting", self.name)
                    self.owner.session_stalled(None)
                wait = STALL_LOOK_S if self._stalled or self._spawned_at is None else after_s - quiet
                await anyio.sleep(max(STALL_LOOK_S, wait))

    def _end_stall_watch(self) -> None:
        self._stall_ended = True
        if self._stall_watch is not None:
            self._stall_watch.cancel()
        if self._stalled:
            self._stalled = False
            self.owner.session_stalled(None)

    def _on_stderr(self, server: str, line: str) -> None:
        events = self.support.events
        if events is not None:
            events.stderr_line(server, line)

    async def _resubscribe(self, client: Client) -> None:
        """A new session knows nothing of the old one's subscriptions: ask again."""
        timeout = call_timeout_s(self.owner.spec, self.owner.settings)
        for uri in sorted(self.owner.subscriptions):
            try:
                await Subscribe(uri).send(client, timeout_s=timeout, progress=None, meta=None)
            except (MCPError, TimeoutError) as exc:
                logger.warning("server %r: could not subscribe again to %r: %s", self.name, uri, exc)

    # -- the process and its stderr -----------------------------------------------------------------

    async def _drain(self, sink: StderrSink, drained: anyio.Event) -> None:
        try:
            await sink.drain()
        finally:
            drained.set()

    async def _settle_stderr(self, sink: StderrSink, drained: anyio.Event) -> None:
        """After the SDK closed the process: read its last words, then end whatever it left behind."""
        with anyio.CancelScope(shield=True):
            sink.close_write_end()
            with anyio.move_on_after(STDERR_SETTLE_S):
                await drained.wait()
            family = set(self._family) | set(_processes.family(self._server_pid, sink.pipe_inode))
            stragglers = sorted(pid for pid in family if _processes.is_alive(pid))
            if stragglers:
                logger.warning("server %r left processes behind %s; terminating them", self.name, stragglers)
                await _processes.terminate(stragglers)
            self._family = []

    def _process_family(self) -> list[int]:
        """Everything the server started, found while it still runs (for the stop that follows)."""
        pid = self._server_pid
        if pid is None:
            return []
        return _processes.family(pid, self._sink.pipe_inode if self._sink is not None else None)

    # -- reporting --------------------------------------------------------------------------------------

    def _mark_ready(self, client: Client, elapsed: float) -> None:
        self.client = client
        info = client.server_info
        pid = self._spawned_pid
        if pid is None and self._sink is not None:
            pid = _processes.server_pid(self._sink.pipe_inode)
        self._server_pid = pid
        self._ready_at = time.monotonic()
        self.became_ready = True
        resources = client.server_capabilities.resources
        self.owner.session_ready(
            SessionInfo(
                protocol_version=client.protocol_version,
                server_name=info.name if info else None,
                server_version=info.version if info else None,
                instructions=client.instructions,
                pid=pid,
                startup_s=elapsed,
                transport=self._transport or self.owner.spec.transport,
                offers_resources=resources is not None,
                # A 2026-07-28 session listens rather than subscribes: the station cannot subscribe there.
                can_subscribe=bool(resources is not None and resources.subscribe)
                and client.protocol_version not in MODERN_PROTOCOL_VERSIONS,
                offers_prompts=client.server_capabilities.prompts is not None,
                offers_completions=client.server_capabilities.completions is not None,
            )
        )

    def _fail(self, error: str) -> None:
        self._failed = True
        self.owner.session_failed(error)

    def _record_failure(self, exc: BaseException, *, started: float) -> None:
        reason = describe_failure(exc)
        telling = self._sink.telling_line() if self._sink is not None else None
        if telling:
            reason += f" (stderr: {telling!r})"
        self._fail(reason if not self.became_ready else f"connection lost: {reason}")
        if not self.became_ready and not self._stopping:
            logger.warning(
                "server %r failed to start after %.2f s: %s [%s]",
                self.name,
                time.perf_counter() - started,
                reason,
                self.owner.spec.target,
            )
        logger.debug("server %r failure detail", self.name, exc_info=exc)
