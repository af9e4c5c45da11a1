"""`Session`: one session of a connection, from spawn or connect to close.

It runs inside the connection's owner task: it enters the SDK `Client` (which spawns the
process or opens the HTTP session), lists what the server offers, marks the connection READY,
keeps the lists and the server's health watched (`connection/watch.py`) until the session is
stopped, recycled or lost, and on the way out collects the server's last stderr lines and ends
every process it left behind.

Starting takes one of the pool's start slots (`ServerConnection.start_slots`), from before the
spawn until the first listing is in: a large fleet starts a few servers at a time instead of
all at once, and a server's start-up budget only runs once it has its slot.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client import Client
from mcp.client.session import LoggingFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.config.models import StdioServerSpec
from mcpstation.connection import _processes
from mcpstation.connection._errors import describe_failure
from mcpstation.connection._inbound import CloseReason, InboundLimits, TransportStats
from mcpstation.connection._stderr import StderrSink
from mcpstation.connection.discovery import KINDS, discover
from mcpstation.connection.log_levels import PYTHON_LEVELS
from mcpstation.connection.operations import Subscribe
from mcpstation.connection.snapshot import SessionInfo
from mcpstation.connection.transports import (
    Streams,
    TransportContext,
    command_not_found,
    open_transport,
    resolve_command,
)
from mcpstation.connection.watch import health_loop, listen_loop, on_message, refresh_loop
from mcpstation.errors import ServerStartError

if TYPE_CHECKING:
    from mcpstation.connection.connection import ServerConnection

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="mcpstation", version="0.1.0")
STDERR_SETTLE_S = 0.5  # time to collect a dead server's last stderr lines


class Session:
    """One attempt to connect and serve; its flags die with it, so no session sees another's."""

    def __init__(self, connection: ServerConnection) -> None:
        self.connection = connection
        self.client: Client | None = None
        self.became_ready = False
        self.went_idle = False  # ended because a lazy server went unused, not by a failure
        self._sink: StderrSink | None = None
        self._lost_reason: str | None = None
        self._lost = False
        self._connect_scope: anyio.CancelScope | None = None
        self._family: list[int] = []
        self._ready_at: float | None = None
        self.refresh_kinds: set[str] = set()
        self.refresh_wake = anyio.Event()
        self.stats = TransportStats()  # what our transports skipped, dropped or cut in this session
        self._pid: int | None = None

    @property
    def name(self) -> str:
        return self.connection.name

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

    def lose(self, reason: str) -> None:
        """A request proved the session dead: let the owner task recycle it."""
        if self.became_ready and not self._lost:
            self._lost_reason = reason
            self._lost = True
            self.connection.wake()

    def cancel_connect(self) -> None:
        if self._connect_scope is not None:
            self._connect_scope.cancel()

    def request_refresh(self, kinds: set[str]) -> None:
        self.refresh_kinds |= kinds
        self.refresh_wake.set()

    # -- the session -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect and serve until stopped, recycled or lost; failures are recorded, never raised."""
        connection = self.connection
        started = time.perf_counter()
        sink = StderrSink(self.name, self._on_stderr) if isinstance(connection.spec, StdioServerSpec) else None
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
        if not self.became_ready and connection.error is None and not connection.stopping:
            connection.set_error("the session ended before it was ready")

    async def _connect_and_serve(self) -> None:
        connection = self.connection
        spec = connection.spec
        if isinstance(spec, StdioServerSpec) and resolve_command(spec) is None:
            raise command_not_found(spec)
        if connection.precheck is not None and (refusal := await connection.precheck(spec)) is not None:
            raise ServerStartError(f"refused before connecting: {refusal}", server=self.name)
        budget = connection.startup_budget_s
        slot = _StartSlot(connection.start_slots)
        with anyio.CancelScope() as connect_scope:
            self._connect_scope = connect_scope
            if connection.stopping:
                connect_scope.cancel()
            await slot.acquire()
            connect_scope.deadline = anyio.current_time() + budget
            try:
                await self._connect_in_slot(slot, connect_scope)
            finally:
                slot.release()
        self._connect_scope = None
        if connect_scope.cancelled_caught and not self.became_ready and not connection.stopping:
            raise TimeoutError(f"did not start within {budget:g} s")

    async def _connect_in_slot(self, slot: _StartSlot, connect_scope: anyio.CancelScope) -> None:
        """Spawn or connect, list everything, mark READY (handing the slot back), then serve."""
        connection = self.connection
        started = time.perf_counter()
        spec = connection.spec
        async with self._client() as client, anyio.create_task_group() as watchers:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                # Listen before listing, so no change between the two is missed.
                await watchers.start(listen_loop, self, client)
            discovered = await discover(
                client, server=self.name, kinds=set(KINDS), max_pages=connection.settings.max_list_pages
            )
            connection.update_listing(
                discovered.found, discovered.warnings + self.dropped_tools(), full=True, ttl_ms=discovered.ttl_ms
            )
            connect_scope.deadline = math.inf
            self._connect_scope = None
            slot.release()
            self._mark_ready(client, time.perf_counter() - started)
            try:
                await connection.hooks.session_started(spec, client)
            except MCPError as exc:
                logger.warning("server %r: host set-up after connect failed: %s", self.name, exc)
            if connection.subscriptions and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await self._resubscribe(client)
            try:
                await self._serve(client, watchers)
            finally:
                connection.hooks.session_ended(spec, client)
            watchers.cancel_scope.cancel()
            self._family = self._process_family()
            if self._lost and not connection.stopping:
                error = self._lost_reason or "connection lost: the server went away"
                if self._sink is not None and self._sink.last_line():
                    error += f" (stderr: {self._sink.last_line()!r})"
                connection.set_error(error)
            self.client = None
            connection.end_session_state()

    async def _serve(self, client: Client, watchers: TaskGroup) -> None:
        """Keep the session current and healthy until it is stopped, recycled or lost."""
        connection = self.connection
        watchers.start_soon(refresh_loop, self, client)
        if connection.settings.health_interval_s > 0:
            watchers.start_soon(health_loop, self, client)
        if connection.is_lazy:
            watchers.start_soon(self._idle_watch)
        await connection.wait_until(lambda: connection.recycling or self._lost or self.went_idle)

    async def _idle_watch(self) -> None:
        """End the session once a lazy server has gone `idle_stop_s` without requests."""
        connection = self.connection
        while True:
            remaining = connection.idle_remaining_s()
            if remaining is not None and remaining <= 0:
                connection.go_idle()
                self.went_idle = True
                connection.wake()
                return
            with anyio.move_on_after(math.inf if remaining is None else remaining):
                await connection.activity_ended()

    def _client(self) -> Client:
        connection = self.connection
        spec = connection.spec
        settings = connection.settings
        context = TransportContext(
            errlog=self._sink.file if self._sink is not None else None,
            auth=connection.hooks.http_auth(spec),
            request_guard=connection.request_guard,
            on_process=self._on_process,
            stats=self.stats,
            limits=InboundLimits(
                notifications_per_s=settings.server_messages_per_s,
                notification_burst=int(settings.server_messages_burst),
            ),
        )
        kwargs: dict[str, Any] = dict(connection.hooks.client_kwargs(spec))
        kwargs["logging_callback"] = self._logging_callback(kwargs.get("logging_callback"))

        async def handle(message: Any) -> None:
            await on_message(self, message)

        return Client(
            self._watched(open_transport(spec, context)),
            mode=spec.sdk_mode,
            client_info=CLIENT_INFO,
            message_handler=handle,
            cache=None,  # the catalog is our cache; stale SDK pages would only hide changes
            **kwargs,
        )

    def _logging_callback(self, hooked: LoggingFnT | None) -> LoggingFnT:
        """The host's logging callback (Python logging), then the owner's observer (events)."""
        observer = self.connection.observer
        name = self.name
        server_logger = logging.getLogger(f"mcpstation.server.{name}")

        async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
            if hooked is not None:
                await hooked(params)
            else:
                server_logger.log(PYTHON_LEVELS.get(params.level, logging.INFO), "%s", params.data)
            if observer is not None:
                observer.server_log(name, params)

        return logging_callback

    @asynccontextmanager
    async def _watched(self, transport: AbstractAsyncContextManager[Streams]) -> AsyncIterator[Streams]:
        async with transport as (read, write):
            yield _EndWatch(read, self._on_eof), write

    def _on_eof(self) -> None:
        if self._lost_reason is None and self.stats.closed is not None and self.stats.closed is not CloseReason.EOF:
            self._lost_reason = f"connection lost: {self.stats.closed_detail or self.stats.closed}"
        self._lost = True
        self.connection.wake()

    def _on_process(self, pid: int) -> None:
        self._pid = pid

    def _on_stderr(self, server: str, line: str) -> None:
        observer = self.connection.observer
        if observer is not None:
            observer.stderr_line(server, line)

    async def _resubscribe(self, client: Client) -> None:
        """A new session knows nothing of the old one's subscriptions: ask again."""
        timeout = self.connection.call_timeout_s
        for uri in sorted(self.connection.subscriptions):
            try:
                await Subscribe(uri).send(client, timeout_s=timeout, progress=None, meta=None)
            except (MCPError, TimeoutError) as exc:
                logger.warning("server %r: could not subscribe again to %r: %s", self.name, uri, exc)

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
            family = set(self._family) | set(_processes.family(self.connection.pid, sink.pipe_inode))
            stragglers = sorted(pid for pid in family if _processes.is_alive(pid))
            if stragglers:
                logger.warning("server %r left processes behind %s; terminating them", self.name, stragglers)
                await _processes.terminate(stragglers)
            self.connection.forget_pid()
            self._family = []

    def _process_family(self) -> list[int]:
        """Everything the server started, found while it still runs (for the stop that follows)."""
        pid = self.connection.pid
        if pid is None:
            return []
        return _processes.family(pid, self._sink.pipe_inode if self._sink is not None else None)

    def _mark_ready(self, client: Client, elapsed: float) -> None:
        self.client = client
        info = client.server_info
        pid = self._pid
        if pid is None and self._sink is not None:
            pid = _processes.server_pid(self._sink.pipe_inode)
        self._ready_at = time.monotonic()
        self.became_ready = True
        self.connection.mark_ready(
            SessionInfo(
                protocol_version=client.protocol_version,
                server_name=info.name if info else None,
                server_version=info.version if info else None,
                instructions=client.instructions,
                pid=pid,
                startup_s=elapsed,
            )
        )

    def _record_failure(self, exc: BaseException, *, started: float) -> None:
        connection = self.connection
        reason = describe_failure(exc)
        tail = self.stderr_tail
        if tail:
            reason += f" (stderr, last line: {tail[-1]!r})"
        connection.set_error(reason if not self.became_ready else f"connection lost: {reason}")
        if not self.became_ready and not connection.stopping:
            logger.warning(
                "server %r failed to start after %.2f s: %s [%s]",
                self.name,
                time.perf_counter() - started,
                reason,
                connection.spec.target,
            )
        logger.debug("server %r failure detail", self.name, exc_info=exc)


class _StartSlot:
    """One of the pool's start slots, held by the owner task from spawn to READY; released once."""

    def __init__(self, slots: anyio.CapacityLimiter | None) -> None:
        self._slots = slots
        self._held = False

    async def acquire(self) -> None:
        if self._slots is not None:
            await self._slots.acquire()
            self._held = True

    def release(self) -> None:
        if self._held and self._slots is not None:
            self._held = False
            self._slots.release()


class _EndWatch:
    """A transport's read stream that tells the session when the server's side has ended."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    async def __aenter__(self) -> _EndWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._on_end()
            raise

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except anyio.EndOfStream:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def close(self) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
