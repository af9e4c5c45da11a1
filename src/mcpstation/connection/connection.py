"""`ServerConnection`: one supervised owner task per server.

The owner task enters and leaves the SDK `Client` itself (anyio demands both happen in one
task), discovers what the server offers, keeps it current on `list_changed` or `listen`
events, and restarts the session with backoff when it dies. Other tasks only *use* the
client, concurrently, through `call_tool`, `get_prompt` and `read_resource`.
"""

from __future__ import annotations

import logging
import math
import random
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
import pydantic
from anyio.abc import TaskGroup, TaskStatus
from mcp.client import Client
from mcp.client.session import ProgressFnT
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.config.models import ServerSpec, StationSettings, StdioServerSpec
from mcpstation.connection import _processes
from mcpstation.connection._errors import describe_failure, translate_call_errors
from mcpstation.connection._stderr import StderrSink
from mcpstation.connection.discovery import walk_pages
from mcpstation.connection.hooks import NO_HOOKS, SessionHooks
from mcpstation.connection.listing import ServerListing
from mcpstation.connection.log_levels import PYTHON_LEVELS
from mcpstation.connection.state import ConnectionState
from mcpstation.connection.transports import RequestGuard, Streams, TransportContext, open_transport, resolve_command
from mcpstation.errors import ConnectionLost, RemoteError, ServerStartError, ServerUnavailable

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="mcpstation", version="0.1.0")
REFRESH_DEBOUNCE_S = 0.2  # list_changed notifications within this window cost one refresh
BACKOFF_JITTER = 0.2  # +/- fraction of each restart delay, so restarts of many servers spread out
STDERR_SETTLE_S = 0.5  # time to collect a dead server's last stderr lines
INTERACTIVE_SIGN_IN_S = 300.0  # connect budget for servers whose OAuth sign-in waits for a person
STABLE_SESSION_S = 30.0  # a session that lasted this long resets the consecutive-failure count
KINDS = ("tools", "prompts", "resources", "templates")

ChangeCallback = Callable[["ServerConnection"], None]


class _InboundWatch:
    """Wraps a transport's read stream: notices the end of the connection and paces floods.

    Responses to our own requests pass straight through. Everything else a server sends on its
    own (notifications, requests, unreadable lines) draws from a token bucket; when a server
    floods, reading from it pauses, so the flood costs that server's stream only (its pipe fills
    and it blocks), never the event loop every other server shares.
    """

    def __init__(self, stream: Any, on_eof: Callable[[], None], rate_per_s: float, burst: float) -> None:
        self._stream = stream
        self._on_eof = on_eof
        self._rate = rate_per_s
        self._burst = burst
        self._tokens = burst
        self._stamp = time.monotonic()

    async def __aenter__(self) -> _InboundWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> _InboundWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            self._on_eof()
            raise
        if not (isinstance(item, SessionMessage) and isinstance(item.message, _RESPONSES)):
            await self._pace()
        return item

    async def _pace(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now
        if self._tokens < 1:
            await anyio.sleep((1 - self._tokens) / self._rate)
            self._tokens = 1.0
            self._stamp = time.monotonic()
        self._tokens -= 1

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except anyio.EndOfStream:
            self._on_eof()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    def close(self) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_RESPONSES = (types.JSONRPCResponse, types.JSONRPCError)


class ServerConnection:
    """One server: its lifecycle state, its last listing, and the calls routed to it."""

    def __init__(
        self,
        spec: ServerSpec,
        settings: StationSettings,
        *,
        on_change: ChangeCallback | None = None,
        hooks: SessionHooks = NO_HOOKS,
        on_stderr: Callable[[str, str], None] | None = None,
        precheck: Callable[[ServerSpec], Awaitable[str | None]] | None = None,
        request_guard: RequestGuard | None = None,
        on_resource_updated: Callable[[str, str], None] | None = None,
    ) -> None:
        self.spec = spec
        self._request_guard = request_guard
        self._on_resource_updated = on_resource_updated
        self.subscriptions: set[str] = set()
        self._precheck = precheck
        self._on_stderr = on_stderr
        self.hooks = hooks
        self.settings = settings
        self.state = ConnectionState.STARTING
        self.error: str | None = None
        self.protocol_version: str | None = None
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.instructions: str | None = None
        self.pid: int | None = None
        self.startup_s: float | None = None
        self.listing = self._empty_listing()
        self.warnings: list[str] = []
        self.consecutive_failures = 0
        self.restarts = 0
        self._on_change = on_change
        self._client: Client | None = None
        self._sink: StderrSink | None = None
        self._last_stderr: list[str] = []
        self._settled = anyio.Event()
        self._stopped = anyio.Event()
        self._state_changed = anyio.Event()
        self._wake = anyio.Event()
        self._stop_requested = False
        self._reconnect_requested = False
        self._lost = False
        self._lost_reason: str | None = None
        self._connect_scope: anyio.CancelScope | None = None
        self._family: list[int] = []
        self._ready_at: float | None = None
        self._session_ready = False
        self._refresh_kinds: set[str] = set()
        self._refresh_wake = anyio.Event()

    # -- public view -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY and self._client is not None

    @property
    def settled(self) -> anyio.Event:
        """Set once the first start attempt has an outcome."""
        return self._settled

    async def wait_settled_after_reconnect(self) -> None:
        """Return once a reconnect has an outcome: READY, FAILED, BACKING_OFF or STOPPED."""
        seen_start = self.state is ConnectionState.STARTING
        while not (seen_start and self.state not in (ConnectionState.STARTING, ConnectionState.STOPPING)):
            await self._state_changed.wait()
            seen_start = seen_start or self.state is ConnectionState.STARTING

    async def wait_for_state(self, *states: ConnectionState) -> ConnectionState:
        """Return the state once the connection is in one of `states` (bound it with a timeout)."""
        while self.state not in states:
            await self._state_changed.wait()
        return self.state

    async def wait_stopped(self) -> None:
        """Return once the owner task has ended and its processes are gone."""
        await self._stopped.wait()

    @property
    def stderr_tail(self) -> list[str]:
        return self._sink.tail if self._sink is not None else list(self._last_stderr)

    @property
    def startup_budget_s(self) -> float:
        budget = self.spec.startup_timeout_s or self.settings.server_startup_timeout_s
        oauth = getattr(self.spec, "oauth", None)
        if oauth is not None and oauth.mode == "authorization_code":
            budget = max(budget, INTERACTIVE_SIGN_IN_S)  # a person may be signing in
        return budget

    @property
    def call_timeout_s(self) -> float:
        return self.spec.call_timeout_s or self.settings.call_timeout_s

    def __repr__(self) -> str:
        pid = f" pid={self.pid}" if self.pid else ""
        return (
            f"<ServerConnection {self.name!r} {self.spec.transport} {self.state!r}{pid} "
            f"tools={len(self.listing.tools)}>"
        )

    # -- control from other tasks --------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the owner task to close the session and end; returns at once."""
        self._stop_requested = True
        if self.state is ConnectionState.READY:
            self.state = ConnectionState.STOPPING
        if self._connect_scope is not None:
            self._connect_scope.cancel()
        self._wake.set()

    def reconnect(self) -> None:
        """Drop the session (if any) and connect again now, closing the circuit breaker."""
        self._reconnect_requested = True
        self.consecutive_failures = 0
        self._wake.set()

    def request_refresh(self, kinds: set[str]) -> None:
        """Re-list the given kinds soon; many requests within the debounce window cost one."""
        self._refresh_kinds |= kinds
        self._refresh_wake.set()

    # -- calls -------------------------------------------------------------------------------------

    def _require_client(self, what: str) -> Client:
        client = self._client
        if client is None or self.state is not ConnectionState.READY:
            reason = f" ({self.error})" if self.error else ""
            raise ServerUnavailable(
                f"server {self.name!r} is not connected (state {self.state}){reason}; cannot {what}",
                server=self.name,
            )
        return client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
    ) -> types.CallToolResult:
        """Send `tools/call`; a timeout cancels this request on the server and nothing else.

        Raises:
            ServerUnavailable, ConnectionLost, CallTimeout, RemoteError.
        """
        client = self._require_client(f"call {tool!r}")
        timeout = timeout_s or self.call_timeout_s
        try:
            with translate_call_errors(server=self.name, tool=tool, timeout_s=timeout):
                return await client.call_tool(tool, arguments, read_timeout_seconds=timeout, progress_callback=progress)
        except ConnectionLost as exc:
            self._session_lost(str(exc))
            raise

    async def get_prompt(
        self, prompt: str, arguments: dict[str, str] | None, *, timeout_s: float | None = None
    ) -> types.GetPromptResult:
        client = self._require_client(f"get prompt {prompt!r}")
        timeout = timeout_s or self.call_timeout_s
        try:
            with translate_call_errors(server=self.name, tool=prompt, timeout_s=timeout), anyio.fail_after(timeout):
                return await client.get_prompt(prompt, arguments)
        except ConnectionLost as exc:
            self._session_lost(str(exc))
            raise

    async def read_resource(self, uri: str, *, timeout_s: float | None = None) -> types.ReadResourceResult:
        client = self._require_client(f"read {uri!r}")
        timeout = timeout_s or self.call_timeout_s
        try:
            with translate_call_errors(server=self.name, tool=uri, timeout_s=timeout), anyio.fail_after(timeout):
                return await client.read_resource(uri)
        except ConnectionLost as exc:
            self._session_lost(str(exc))
            raise

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
        *,
        timeout_s: float | None = None,
    ) -> types.CompleteResult:
        client = self._require_client("complete an argument")
        timeout = timeout_s or self.call_timeout_s
        try:
            with translate_call_errors(server=self.name, tool="completion/complete", timeout_s=timeout):
                with anyio.fail_after(timeout):
                    return await client.complete(ref, argument, context_arguments)
        except ConnectionLost as exc:
            self._session_lost(str(exc))
            raise

    async def subscribe_resource(self, uri: str) -> None:
        """Ask the server for `resources/updated` notifications about `uri` (kept across reconnects).

        Raises:
            ServerUnavailable, RemoteError (a 2026-07-28 session: subscriptions need `protocol = "legacy"`).
        """
        client = self._require_client(f"subscribe to {uri!r}")
        if self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise RemoteError(
                f"server {self.name!r} speaks 2026-07-28; resource subscriptions through the station need "
                f'a handshake-era session: set protocol = "legacy" for it',
                tool="resources/subscribe",
                server=self.name,
            )
        with translate_call_errors(server=self.name, tool="resources/subscribe", timeout_s=self.call_timeout_s):
            with anyio.fail_after(self.call_timeout_s), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(uri)
        self.subscriptions.add(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        self.subscriptions.discard(uri)
        client = self._client
        if client is None or self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        with translate_call_errors(server=self.name, tool="resources/unsubscribe", timeout_s=self.call_timeout_s):
            with anyio.fail_after(self.call_timeout_s), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.unsubscribe_resource(uri)

    async def _resubscribe(self, client: Client) -> None:
        """A new session knows nothing of the old one's subscriptions: ask again."""
        for uri in sorted(self.subscriptions):
            try:
                with anyio.fail_after(self.call_timeout_s), warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.subscribe_resource(uri)
            except (MCPError, TimeoutError) as exc:
                logger.warning("server %r: could not subscribe again to %r: %s", self.name, uri, exc)

    def _session_lost(self, reason: str) -> None:
        """A request proved the session dead: let the owner task recycle it."""
        if self.state is ConnectionState.READY and not self._lost:
            self._lost_reason = reason
            self._lost = True
            self._wake.set()

    # -- the owner task ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Own the connection until `stop()`: connect, serve, restart with backoff, or fail."""
        ever_ready = False
        try:
            while not self._stop_requested:
                self._set_state(ConnectionState.STARTING)
                became_ready = await self._session_once()
                ever_ready = ever_ready or became_ready
                if self._stop_requested:
                    break
                if self._reconnect_requested:
                    self._reconnect_requested = False
                    continue
                if became_ready and self._ready_for_s() >= STABLE_SESSION_S:
                    self.consecutive_failures = 1  # it ran well for a while: a fresh run of failures
                else:
                    self.consecutive_failures += 1
                if not ever_ready or self.consecutive_failures >= self.settings.max_consecutive_failures:
                    self._set_state(ConnectionState.FAILED)
                    await self._wait_for(lambda: self._stop_requested or self._reconnect_requested)
                    self._reconnect_requested = False
                    continue
                delay = self._backoff_delay()
                self._set_state(ConnectionState.BACKING_OFF)
                logger.warning(
                    "server %r lost (%s); restarting in %.1f s (failure %d of %d)",
                    self.name,
                    self.error,
                    delay,
                    self.consecutive_failures,
                    self.settings.max_consecutive_failures,
                )
                await self._wait_for(lambda: self._stop_requested or self._reconnect_requested, delay)
                self._reconnect_requested = False
                self.restarts += 1
        finally:
            self._client = None
            self._set_state(ConnectionState.STOPPED)
            self._settled.set()
            self._stopped.set()

    def _ready_for_s(self) -> float:
        return 0.0 if self._ready_at is None else time.monotonic() - self._ready_at

    def _backoff_delay(self) -> float:
        settings = self.settings
        delay = min(
            settings.restart_backoff_max_s, settings.restart_backoff_s * 2 ** max(0, self.consecutive_failures - 1)
        )
        return delay * random.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER)

    async def _wait_for(self, condition: Callable[[], bool], timeout_s: float = math.inf) -> None:
        with anyio.move_on_after(timeout_s):
            while not condition():
                await self._wake.wait()
                self._wake = anyio.Event()

    async def _session_once(self) -> bool:
        """One session from spawn/connect to close; returns whether it became READY."""
        self._lost = False
        self._lost_reason = None
        self._session_ready = False
        started = time.perf_counter()
        sink = StderrSink(self.name, self._on_stderr) if isinstance(self.spec, StdioServerSpec) else None
        self._sink = sink
        drained = anyio.Event()
        try:
            async with anyio.create_task_group() as helpers:
                if sink is not None:
                    helpers.start_soon(self._drain, sink, drained)
                try:
                    await self._connect_and_serve(sink, started)
                except Exception as exc:  # boundary: one server's failure never reaches the station
                    self._record_failure(exc, ready=self._session_ready, started=started)
                finally:
                    self._client = None
                    if sink is not None:
                        await self._settle_stderr(sink, drained)
                    helpers.cancel_scope.cancel()
        finally:
            if sink is not None:
                self._last_stderr = sink.tail
                sink.close()
                self._sink = None
        if not self._session_ready and self.error is None and not self._stop_requested:
            self.error = "the session ended before it was ready"
        self._settled.set()
        return self._session_ready

    async def _connect_and_serve(self, sink: StderrSink | None, started: float) -> None:
        if isinstance(self.spec, StdioServerSpec) and resolve_command(self.spec) is None:
            raise FileNotFoundError(2, "command not found", self.spec.command)
        if self._precheck is not None and (refusal := await self._precheck(self.spec)) is not None:
            raise ServerStartError(f"refused before connecting: {refusal}", server=self.name)
        budget = self.startup_budget_s
        with anyio.CancelScope(deadline=anyio.current_time() + budget) as connect_scope:
            self._connect_scope = connect_scope
            if self._stop_requested:
                connect_scope.cancel()
            async with self._client_for(sink) as client, anyio.create_task_group() as watchers:
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    # Listen before listing, so no change between the two is missed.
                    await watchers.start(self._listen_loop, client)
                await self._discover(client)
                connect_scope.deadline = math.inf
                self._connect_scope = None
                self._mark_ready(client, sink, time.perf_counter() - started)
                try:
                    await self.hooks.session_started(self.spec, client)
                except MCPError as exc:
                    logger.warning("server %r: host set-up after connect failed: %s", self.name, exc)
                if self.subscriptions and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                    await self._resubscribe(client)
                try:
                    await self._serve(client, watchers)
                finally:
                    self.hooks.session_ended(self.spec, client)
                watchers.cancel_scope.cancel()
                self._family = self._process_family()
                if self._lost and not self._stop_requested:
                    self.error = self._lost_reason or "connection lost: the server went away"
                    if sink is not None and sink.last_line():
                        self.error += f" (stderr: {sink.last_line()!r})"
                self._client = None
                if self.state is ConnectionState.READY:
                    self._set_state(ConnectionState.STOPPING)
        self._connect_scope = None
        if connect_scope.cancelled_caught and not self._session_ready and not self._stop_requested:
            raise TimeoutError(f"did not start within {budget:g} s")

    async def _serve(self, client: Client, watchers: TaskGroup) -> None:
        """Keep the session current and healthy until it is stopped, recycled or lost."""
        watchers.start_soon(self._refresh_loop, client)
        if self.settings.health_interval_s > 0:
            watchers.start_soon(self._health_loop, client)
        await self._wait_for(lambda: self._stop_requested or self._reconnect_requested or self._lost)

    def _client_for(self, sink: StderrSink | None) -> Client:
        context = TransportContext(
            errlog=sink.file if sink is not None else None,
            auth=self.hooks.http_auth(self.spec),
            request_guard=self._request_guard,
        )
        transport = self._watched(open_transport(self.spec, context))
        kwargs: dict[str, Any] = {"logging_callback": self._on_log}
        kwargs.update(self.hooks.client_kwargs(self.spec))
        return Client(
            transport,
            mode=self.spec.sdk_mode,  # type: ignore[arg-type]
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
            cache=None,  # the catalog is our cache; stale SDK pages would only hide changes
            **kwargs,
        )

    @asynccontextmanager
    async def _watched(self, transport: AbstractAsyncContextManager[Streams]) -> AsyncIterator[Streams]:
        async with transport as (read, write):
            settings = self.settings
            yield (
                _InboundWatch(read, self._on_eof, settings.server_messages_per_s, settings.server_messages_burst),
                write,
            )

    def _on_eof(self) -> None:
        self._lost = True
        self._wake.set()

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
            family = set(self._family) | set(_processes.family(self.pid, sink.pipe_inode))
            stragglers = sorted(pid for pid in family if _processes.is_alive(pid))
            if stragglers:
                logger.warning("server %r left processes behind %s; terminating them", self.name, stragglers)
                await _processes.terminate(stragglers)
            self.pid = None
            self._family = []

    def _process_family(self) -> list[int]:
        """Everything the server started, found while it still runs (for the stop that follows)."""
        if self.pid is None:
            return []
        return _processes.family(self.pid, self._sink.pipe_inode if self._sink is not None else None)

    def _mark_ready(self, client: Client, sink: StderrSink | None, elapsed: float) -> None:
        self._client = client
        self.protocol_version = client.protocol_version
        info = client.server_info
        self.server_name = info.name if info else None
        self.server_version = info.version if info else None
        self.instructions = client.instructions
        if sink is not None:
            self.pid = _processes.server_pid(sink.pipe_inode)
        self.startup_s = elapsed
        self._ready_at = time.monotonic()
        self._session_ready = True
        self.error = None
        self._set_state(ConnectionState.READY)
        self._settled.set()
        lst = self.listing
        logger.info(
            "server %r ready: %s, %d tools, %d prompts, %d resources, %d templates (%.2f s)",
            self.name,
            self.protocol_version,
            len(lst.tools),
            len(lst.prompts),
            len(lst.resources),
            len(lst.templates),
            elapsed,
        )

    def _record_failure(self, exc: BaseException, *, ready: bool, started: float) -> None:
        reason = describe_failure(exc)
        tail = self._sink.tail if self._sink is not None else []
        if tail:
            reason += f" (stderr, last line: {tail[-1]!r})"
        self.error = reason if not ready else f"connection lost: {reason}"
        if not ready and not self._stop_requested:
            logger.warning(
                "server %r failed to start after %.2f s: %s [%s]",
                self.name,
                time.perf_counter() - started,
                reason,
                self.spec.target,
            )
        logger.debug("server %r failure detail", self.name, exc_info=exc)

    def _set_state(self, state: ConnectionState) -> None:
        if state is self.state:
            return
        self.state = state
        changed, self._state_changed = self._state_changed, anyio.Event()
        changed.set()
        if self._on_change is not None:
            self._on_change(self)

    def _empty_listing(self) -> ServerListing:
        return ServerListing(
            server=self.spec.name,
            namespace=self.spec.namespace,
            include_tools=self.spec.include_tools,
            exclude_tools=self.spec.exclude_tools,
        )

    # -- discovery and change ---------------------------------------------------------------------------

    async def _discover(self, client: Client, kinds: set[str] | None = None) -> None:
        """List the given kinds (all by default), every page, and swap in a new listing."""
        wanted = set(KINDS) if kinds is None else kinds
        capabilities = client.server_capabilities
        session = client.session
        # A version pin negotiates nothing: then every kind is tried and "method not found" is fine.
        unknown = session.initialize_result is None and session.discover_result is None
        offered = {
            "tools": unknown or capabilities.tools is not None,
            "prompts": unknown or capabilities.prompts is not None,
            "resources": unknown or capabilities.resources is not None,
            "templates": unknown or capabilities.resources is not None,
        }
        max_pages = self.settings.max_list_pages
        found: dict[str, tuple[Any, ...]] = {}
        warnings: list[str] = []

        async def gather(kind: str, fetch: Callable[[str | None], Awaitable[Any]], items: Callable[[Any], Any]) -> None:
            if kind not in wanted:
                return
            if not offered[kind]:
                found[kind] = ()
                return
            try:
                got, warning = await walk_pages(fetch, items, server=self.name, kind=kind, max_pages=max_pages)
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:
                    got, warning = [], None
                elif kind == "tools":
                    raise
                else:  # a server whose prompts or resources are broken still serves its tools
                    got, warning = [], f"server {self.name!r}: listing {kind} failed: {exc.error.message}"
            except pydantic.ValidationError as exc:
                if kind == "tools":
                    raise
                got = []
                warning = f"server {self.name!r}: listing {kind} failed: invalid result ({exc.error_count()} errors)"
            found[kind] = tuple(got)
            if warning:
                warnings.append(warning)

        await gather("tools", lambda c: client.list_tools(cursor=c), lambda p: p.tools)
        await gather("prompts", lambda c: client.list_prompts(cursor=c), lambda p: p.prompts)
        await gather("resources", lambda c: client.list_resources(cursor=c), lambda p: p.resources)
        await gather("templates", lambda c: client.list_resource_templates(cursor=c), lambda p: p.resource_templates)
        self.listing = replace(self.listing, **found)
        if kinds is None:
            self.warnings = warnings
        else:
            self.warnings = [w for w in self.warnings if not any(k in w for k in wanted)] + warnings

    async def _refresh_loop(self, client: Client) -> None:
        while True:
            await self._refresh_wake.wait()
            await anyio.sleep(REFRESH_DEBOUNCE_S)
            kinds, self._refresh_kinds = self._refresh_kinds, set()
            self._refresh_wake = anyio.Event()
            if not kinds:
                continue
            try:
                with anyio.fail_after(self.call_timeout_s):
                    await self._discover(client, kinds)
            except Exception as exc:  # boundary: a failed refresh keeps the previous listing
                logger.warning("server %r: refreshing %s failed: %s", self.name, sorted(kinds), describe_failure(exc))
                continue
            logger.info(
                "server %r lists changed (%s): %d tools", self.name, ", ".join(sorted(kinds)), len(self.listing.tools)
            )
            if self._on_change is not None:
                self._on_change(self)

    async def _health_loop(self, client: Client) -> None:
        """Ping (legacy) or discover (modern) periodically; a server that stops answering is recycled."""
        modern = self.protocol_version in MODERN_PROTOCOL_VERSIONS
        while True:
            await anyio.sleep(self.settings.health_interval_s)
            try:
                with anyio.fail_after(self.settings.health_timeout_s):
                    if modern:
                        await client.session.discover()
                    else:
                        await client.session.send_ping()  # the session's ping is not deprecated
            except MCPError as exc:
                if exc.code == types.METHOD_NOT_FOUND:
                    continue  # answering at all is healthy
                self._session_lost(f"health check failed: {describe_failure(exc)}")
                return
            except Exception as exc:  # boundary: any failure of the probe means an unhealthy server
                self._session_lost(f"health check failed: {describe_failure(exc) or 'no answer'}")
                return

    async def _listen_loop(self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
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
                        self.request_refresh({"resources", "templates"})
        except (ListenNotSupportedError, SubscriptionLost, MCPError) as exc:
            logger.debug("server %r: no change stream (%s)", self.name, exc)
            if not listening:
                task_status.started()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            logger.warning("server %r sent something unreadable: %s", self.name, str(message).splitlines()[0][:200])
        elif isinstance(message, types.ToolListChangedNotification):
            self.request_refresh({"tools"})
        elif isinstance(message, types.PromptListChangedNotification):
            self.request_refresh({"prompts"})
        elif isinstance(message, types.ResourceListChangedNotification):
            self.request_refresh({"resources", "templates"})
        elif isinstance(message, types.ResourceUpdatedNotification) and self._on_resource_updated is not None:
            self._on_resource_updated(self.name, str(message.params.uri))

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        level = PYTHON_LEVELS.get(params.level, logging.INFO)
        logging.getLogger(f"mcpstation.server.{self.name}").log(level, "%s", params.data)
