"""`Station`: many MCP servers, one catalog, every request through one pipeline.

```python
async with Station.from_file("mcpstation.toml") as station:
    result = await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})
```

The station is a facade over parts with one job each: the roster (every known server),
the pool (their connections), the live catalog (what they offer, merged), the dynamic servers
(changes at run time, persisted first), the follower (changes other processes made to the
store), and the pipeline (every request, every face). It owns their lifecycle; everything else
here is a one-line delegation.

Long because it is the facade: the lifecycle, and one documented delegation per public method to
the part that does the work (roster, pool, live catalog, dynamic servers, follower, pipeline, status).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from mcp.shared.dispatcher import ProgressFnT

from mcpstation.catalog import (
    Catalog,
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    CompletionResult,
    PromptResult,
    ResourceResult,
    SearchHit,
    SubscriptionResult,
    ToolResult,
)
from mcpstation.catalog.search import DEFAULT_LIMIT
from mcpstation.catalog_cache import CatalogCache
from mcpstation.config.loader import load_config
from mcpstation.config.models import AnyServerSpec, ServerSpec, StationConfig, StdioServerSpec
from mcpstation.config.presets import needs_url_guard
from mcpstation.connection import ConnectionState, ServerConnection, SessionHooks
from mcpstation.dynamic import ChangeAction, DynamicServers, ServerChange
from mcpstation.errors import ServerUnavailable, UsageError
from mcpstation.events import EventHub
from mcpstation.follower import ChangeFollower
from mcpstation.host import Host
from mcpstation.live_catalog import LiveCatalog
from mcpstation.management import MANAGEMENT_SERVER, MANAGEMENT_TOOLS, management_spec
from mcpstation.pinning import ToolPins
from mcpstation.pipeline import (
    META_TOOLS,
    AuditTrail,
    Bounds,
    Caller,
    Layer,
    Pipeline,
    Router,
    ToolSurface,
    UrlGuardLayer,
    Visibility,
    assemble,
)
from mcpstation.pipeline.request import CompletionRef
from mcpstation.policy import UrlGuard, classify_command
from mcpstation.pool import ConnectionPool
from mcpstation.roster import Origin, RosterEntry, ServerRoster, Standing
from mcpstation.status import ReloadReport, ServerStatus, StationStatus, station_status
from mcpstation.store import Store

logger = logging.getLogger(__name__)

SURFACE_LINE_WAIT_S = 60.0  # the start-up surface line waits this long for the index to count the catalog
CACHE_SAVE_S = 5.0  # bound on keeping the last listings in the catalog cache at shutdown


class Station:
    """One supervised connection per server, one merged catalog, one front door.

    `hooks` answers servers' requests (roots, sampling, elicitation, logging); by default a
    `Host` built from `config.host`, with no sampling or elicitation handler (requests are
    declined). `store` enables servers managed at run time, tool pinning and the audit trail.

    Use it as an async context manager (in one task): entering starts every enabled server
    concurrently and returns when all have settled or the overall start-up deadline passes;
    leaving stops them all, processes included, and writes the last audit records.
    """

    def __init__(
        self,
        config: StationConfig,
        *,
        hooks: SessionHooks | None = None,
        store: Store | None = None,
        on_change: Callable[[Station], None] | None = None,
    ) -> None:
        self.config = config
        self.hooks = hooks if hooks is not None else Host.from_config(config, store=store)
        self.store = store
        self.events = EventHub()
        self.roster = ServerRoster()
        self.pool = ConnectionPool(config.station, hooks=self.hooks, events=self.events, on_change=self._changed)
        mode = config.policy.tool_pinning
        pins = ToolPins(store, mode) if store is not None and mode != "off" else None
        self.catalog_cache = CatalogCache(store) if store is not None else None
        if self.catalog_cache is not None:
            self.pool.recall = self.catalog_cache.recall
        self.live_catalog = LiveCatalog(
            self.roster,
            self.pool,
            lambda: self.config.station,
            events=self.events,
            pins=pins,
            cache=self.catalog_cache,
            owned=self._owned,
        )
        self._url_guard = UrlGuard.from_policy(config.policy)
        self.dynamic = (
            DynamicServers(
                store,
                self.roster,
                self.pool,
                self.live_catalog,
                policy=lambda: self.config.policy,
                guard=lambda: self._url_guard,
                events=self.events,
            )
            if store is not None
            else None
        )
        self.follower = (
            ChangeFollower(store, self.dynamic, catalog=self.live_catalog, pins=pins)
            if store is not None and self.dynamic is not None
            else None
        )
        self._audit = AuditTrail(store, upstream_of=self._upstream_of) if store is not None else None
        self._caller_layers: list[Layer] = []
        self._guarded: dict[str, tuple[AnyServerSpec, bool]] = {}
        self.visibility = Visibility(self.roster.spec)
        self.requests = self._compose()
        self._on_change = on_change
        self._task_group: TaskGroup | None = None
        self._accepting = False

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Station:
        """A station for the config file at `path` (TOML, JSON or YAML; format detected)."""
        return cls(load_config(path))

    # -- the pipeline ------------------------------------------------------------------------------

    def _compose(self) -> Pipeline:
        """The one place the request path is put together (order: see `pipeline.assemble`)."""
        guarded = {entry.name for entry in self.roster if needs_url_guard(entry.spec)}
        guarded |= {spec.name for spec in self.config.servers if needs_url_guard(spec)}
        handler = assemble(
            route=Router(self.pool.get, self._offline_reason),
            visibility=self.visibility,
            bounds=Bounds(lambda: self.config.station, self._server_cap),
            audit=self._audit,
            caller_layers=self._caller_layers,
            url_guard=UrlGuardLayer(self._url_guard, self._is_guarded) if guarded or self.dynamic else None,
        )
        return Pipeline(
            catalog=lambda: self.catalog,
            visibility=self.visibility,
            handler=handler,
            owner_hint=self.live_catalog.owner_hint,
            offline_reason=self._offline_reason,
            surface=ToolSurface(
                settings=lambda: self.config.station,
                spec_of=self.roster.spec,
                visibility=self.visibility,
                index=self.live_catalog.index,
            ),
        )

    def add_layer(self, layer: Layer) -> None:
        """Wrap every later request in `layer` (metrics, tracing): inside visibility and audit,
        outside the URL guard, the bounds and the route."""
        self._caller_layers.append(layer)
        self.requests = self._compose()

    def _is_guarded(self, server: str) -> bool:
        spec = self.roster.spec(server)
        if spec is None:
            return False
        cached = self._guarded.get(server)
        if cached is None or cached[0] is not spec:  # judged once per spec, not per request
            cached = (spec, needs_url_guard(spec))
            self._guarded[server] = cached
        return cached[1]

    def _upstream_of(self, server: str) -> str | None:
        """What a request to `server` reaches, and as whom: `token-exchange https://jira.example/mcp`."""
        spec = self.roster.spec(server)
        if spec is None:
            return None
        url: str | None = getattr(spec, "url", None)
        where = url.split("?", 1)[0] if url else getattr(spec, "command", None) or spec.transport
        return f"{spec.auth.upstream} {where}"

    def _server_cap(self, server: str) -> int | None:
        spec = self.roster.spec(server)
        return spec.max_result_bytes if spec is not None else None

    def _offline_reason(self, server: str) -> str | None:
        """Why `server` cannot answer now, for the LLM and the person; None when it can."""
        entry = self.roster.get(server)
        if entry is None:
            return f"server {server!r} is not in this station"
        if not entry.active:
            why = f": {entry.reason}" if entry.reason else ""
            return f"server {server!r} is not running ({entry.standing}{why})"
        connection = self.pool.get(server)
        if connection is None:
            return f"server {server!r} is not running"
        if connection.is_ready:
            return None
        if connection.state is ConnectionState.STARTING and not connection.listing.tools:
            return f"server {server!r} is still starting; its tools are not known yet"
        detail = f": {connection.error}" if connection.error else ""
        unknown = "" if connection.listing.tools else "; its tools are unknown because it never started"
        return f"server {server!r} is not running ({connection.state}{detail}){unknown}"

    def _owned(self) -> dict[str, str]:
        """Tool names only the host's own server may take: the management tools, and the tool
        search meta-tools, which no server lists (the pipeline answers them)."""
        owned = dict.fromkeys(META_TOOLS, MANAGEMENT_SERVER)
        if MANAGEMENT_SERVER in self.roster:
            owned.update(dict.fromkeys(MANAGEMENT_TOOLS, MANAGEMENT_SERVER))
        return owned

    # -- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise UsageError("this Station is already running")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self.pool.bind(task_group)
        task_group.start_soon(self.live_catalog.watch, name="mcpstation catalog watcher")
        try:
            await self._start()
        except BaseException:
            try:
                await self._shutdown()
            finally:
                self._task_group = None
                self.pool.bind(None)
                task_group.cancel_scope.cancel()
                await task_group.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task_group = self._task_group
        assert task_group is not None
        try:
            await self._shutdown()
        finally:
            self._task_group = None
            self.pool.bind(None)
            task_group.cancel_scope.cancel()  # the catalog watcher; everything else has ended
            # Hand the group only a cancellation, so the caller's exception reaches them as itself
            # rather than inside an ExceptionGroup.
            if exc is not None and isinstance(exc, anyio.get_cancelled_exc_class()):
                await task_group.__aexit__(exc_type, exc, tb)
            else:
                await task_group.__aexit__(None, None, None)

    async def _start(self) -> None:
        assert self._task_group is not None
        started = time.perf_counter()
        if self.store is not None and self.config.station.management_tools:
            self.roster.put(RosterEntry(management_spec(self), Origin.HOST))
        self._put_static(self.config)
        self._warn_about_static_commands()
        if self.catalog_cache is not None:
            await self.catalog_cache.load()
        for entry in self.roster.active():
            if self._should_run(entry.spec):
                self.pool.launch(entry.spec)
        if self._audit is not None:
            self._task_group.start_soon(self._audit.run, name="mcpstation audit writer")
        if self.dynamic is not None and self.follower is not None:
            await self.follower.mark_start()  # before loading: a change made meanwhile is followed too
            for spec in await self.dynamic.load():
                self.dynamic.launch(spec)
            self._task_group.start_soon(self.follower.run, name="mcpstation change follower")
        self.requests = self._compose()
        self._accepting = True
        deadline = self.config.station.startup_timeout_s
        await self.pool.wait_settled(self.pool.connections.values(), deadline)
        await self.live_catalog.verify_pins()
        connections = self.pool.connections.values()
        pending = [c.name for c in connections if c.state is ConnectionState.STARTING and not c.is_dormant]
        if pending:
            logger.warning(
                "start-up deadline of %g s passed; still connecting in the background: %s",
                deadline,
                ", ".join(repr(name) for name in pending),
            )
        logger.info(
            "station up: %d of %d servers ready, %d idle until asked, %d tools (%.2f s)",
            sum(1 for c in connections if c.is_ready),
            len(connections),
            sum(1 for c in connections if c.state is ConnectionState.IDLE),
            len(self.catalog.tools),
            time.perf_counter() - started,
        )
        self._task_group.start_soon(self._announce_surface, name="mcpstation surface line")

    async def _announce_surface(self) -> None:
        """The start-up line of what the catalog costs a model, once the index has counted it (the
        library caller's surface: every tool)."""
        await self.live_catalog.index.wait_current(SURFACE_LINE_WAIT_S)
        totals = self.requests.surface_totals(Caller.library())
        if totals is not None:
            logger.info("%s", totals.line())

    def _should_run(self, spec: AnyServerSpec) -> bool:
        return spec.enabled and (self.config.enabled or spec.name == MANAGEMENT_SERVER)

    def _put_static(self, config: StationConfig, hidden: dict[str, RosterEntry] | None = None) -> None:
        """The config's servers as static entries, in config order; `hidden` are stored servers they shadow."""
        for position, spec in enumerate(config.servers):
            previous = self.roster.get(spec.name)
            shadowed = (hidden or {}).get(spec.name) or (previous.shadowed if previous is not None else None)
            standing = Standing.ACTIVE if spec.enabled else Standing.DISABLED
            self.roster.put(RosterEntry(spec, Origin.STATIC, standing, shadowed=shadowed), position=position)

    def _warn_about_static_commands(self) -> None:
        """Static servers are the operator's own choice: risky commands only get a warning."""
        for entry in self.roster.of(Origin.STATIC):
            spec = entry.spec
            if isinstance(spec, StdioServerSpec) and spec.enabled:
                env = {key: value.get_secret_value() for key, value in spec.env.items()}
                verdict = classify_command(
                    spec.command, spec.args, env, allowed_packages=self.config.policy.allowed_packages, cwd=spec.cwd
                )
                if verdict.verdict == "deny":
                    logger.warning(
                        "static server %r: %s (allowed: static config is trusted)", spec.name, verdict.reason
                    )

    async def _shutdown(self) -> None:
        """Stop taking requests, stop every server (bounded), then write the last audit records.

        Shielded: a caller that gives up (a deadline, Ctrl-C) still gets its processes ended and
        its audit written; each step has its own bound.
        """
        self._accepting = False
        with anyio.CancelScope(shield=True):
            if self.follower is not None:
                await self.follower.stop()
            with anyio.move_on_after(CACHE_SAVE_S):
                await self.live_catalog.save_listings()
            await self.pool.shutdown()
            if self._audit is not None:
                await self._audit.close()

    def _changed(self, connection: ServerConnection) -> None:
        self.live_catalog.mark_dirty(connection)

    def _require_running(self) -> None:
        if self._task_group is None or not self._accepting:
            raise UsageError("the station is not running: use `async with Station(...) as station:`")

    # -- reload ------------------------------------------------------------------------------------

    async def reload(self, config: StationConfig) -> ReloadReport:
        """Apply a new config: start added servers, stop removed ones, restart changed ones.

        Unchanged servers keep their sessions and their requests in flight. Returns once the
        started servers have settled or the start-up deadline passed.
        """
        self._require_running()
        before = self._runnable_static(self.config)
        after = self._runnable_static(config)
        removed = [name for name in before if name not in after]
        added = [name for name in after if name not in before]
        changed = [name for name in after if name in before and after[name] != before[name]]
        unchanged = [name for name in after if name not in added and name not in changed]
        self.config = config
        self._url_guard = UrlGuard.from_policy(config.policy)
        self.pool.apply_settings(config.station, keep=unchanged)
        shadowed = self._apply_static(config)
        await self.pool.stop([*removed, *changed, *shadowed])
        self.requests = self._compose()
        launched = [self.pool.launch(after[name]) for name in after if name in added or name in changed]
        self.live_catalog.mark_dirty()
        await self.pool.wait_settled(launched, config.station.startup_timeout_s)
        await self.live_catalog.verify_pins()
        report = ReloadReport(tuple(added), tuple(removed), tuple(changed), tuple(unchanged))
        logger.info("reloaded: %s", report)
        if self._on_change is not None:
            self._on_change(self)
        return report

    def _runnable_static(self, config: StationConfig) -> dict[str, AnyServerSpec]:
        if not config.enabled:
            return {}
        return {spec.name: spec for spec in config.servers if spec.enabled}

    def _apply_static(self, config: StationConfig) -> list[str]:
        """Put the new static entries in the roster; returns the dynamic servers they now shadow."""
        names = {spec.name for spec in config.servers}
        for entry in self.roster.of(Origin.STATIC):
            if entry.name not in names:
                self.roster.remove(entry.name)
                if entry.shadowed is not None:  # the stored server it hid comes back at the next start
                    reason = "was shadowed by a static server until the last reload; it connects at the next start"
                    self.roster.put(entry.shadowed.held(Standing.SHADOWED, reason))
        hidden: dict[str, RosterEntry] = {}
        for dynamic in self.roster.of(Origin.DYNAMIC):
            if dynamic.name in names:
                self.roster.remove(dynamic.name)
                reason = f"shadowed by the static server {dynamic.name!r} (static config wins)"
                hidden[dynamic.name] = dynamic.held(Standing.SHADOWED, reason)
        self._put_static(config, hidden)
        return list(hidden)

    # -- what the station offers -------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The current snapshot; hold on to it for a consistent view across several lookups."""
        return self.live_catalog.snapshot

    @property
    def tools(self) -> list[CatalogTool]:
        return list(self.catalog.tools.values())

    @property
    def prompts(self) -> list[CatalogPrompt]:
        return list(self.catalog.prompts.values())

    @property
    def resources(self) -> list[CatalogResource]:
        return list(self.catalog.resources.values())

    @property
    def templates(self) -> list[CatalogTemplate]:
        return list(self.catalog.templates.values())

    def tools_for(self, caller: Caller) -> list[CatalogTool]:
        """The tools `caller`'s model is handed: every tool it may see, or, with tool search on for it,
        the pinned ones and `mcp_search_tools` / `mcp_call_tool` (`pipeline/surface.py`)."""
        return self.requests.tools_for(caller)

    def visible_tools(self, caller: Caller) -> list[CatalogTool]:
        """Every tool `caller` may see and call (each can be called by name, whatever its surface)."""
        return self.requests.visible_tools(caller)

    async def search_tools(
        self, query: str, *, limit: int = DEFAULT_LIMIT, server: str | None = None, caller: Caller | None = None
    ) -> list[SearchHit]:
        """The best tools for `query` (any language) among what `caller` may see, best first.

        Raises:
            UsageError: the station is not running, or `limit` is out of range.
        """
        self._require_running()
        return await self.requests.search_tools(query, caller=caller or Caller.library(), limit=limit, server=server)

    def tool_tokens(self, tool: CatalogTool) -> int:
        """Estimated schema tokens of one catalog tool (o200k_base, as `catalog/tokens.py` counts)."""
        return self.live_catalog.index.tokens_of(tool)

    def prompts_for(self, caller: Caller) -> list[CatalogPrompt]:
        return self.requests.prompts_for(caller)

    def resources_for(self, caller: Caller) -> list[CatalogResource]:
        return self.requests.resources_for(caller)

    def templates_for(self, caller: Caller) -> list[CatalogTemplate]:
        return self.requests.templates_for(caller)

    @property
    def connections(self) -> dict[str, ServerConnection]:
        return dict(self.pool.connections)

    def connection(self, name: str) -> ServerConnection:
        connection = self.pool.get(name)
        if connection is None:
            known = ", ".join(repr(n) for n in self.pool.connections) or "none"
            raise ServerUnavailable(f"no server {name!r} in this station (servers: {known})", server=name)
        return connection

    def status(self) -> StationStatus:
        """Every server, and the LLM surface of the library caller (every tool) with its token estimates."""
        catalog = self.catalog
        pins = self.live_catalog.pins
        return station_status(
            self.roster,
            self.pool,
            catalog,
            tokens=self.live_catalog.index.tokens_by_server(catalog.tools.values()),
            surface=self.requests.surface_totals(Caller.library()),
            extra_warnings=pins.warnings if pins is not None else None,
        )

    def list_servers(self) -> list[ServerStatus]:
        """Every server, static and dynamic, with origin, state and counts (same as `status()`)."""
        return list(self.status().servers)

    # -- requests (the library face: `Caller.library()` unless told otherwise) -----------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
        caller: Caller | None = None,
    ) -> ToolResult:
        """Call a tool by its public name; every failure comes back as a `ToolResult` with its `outcome`.

        Raises:
            UsageError: the station is not running (programming misuse).
        """
        self._require_running()
        return await self.requests.call_tool(
            name, arguments, caller=caller or Caller.library(), timeout_s=timeout_s, progress=progress
        )

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout_s: float | None = None,
        caller: Caller | None = None,
    ) -> PromptResult:
        """Get a prompt by its public name, filled with `arguments`."""
        self._require_running()
        return await self.requests.get_prompt(name, arguments, caller=caller or Caller.library(), timeout_s=timeout_s)

    async def read_resource(
        self, uri: str, *, timeout_s: float | None = None, caller: Caller | None = None
    ) -> ResourceResult:
        """Read a resource, routed to the server that lists it or whose template matches it."""
        self._require_running()
        return await self.requests.read_resource(uri, caller=caller or Caller.library(), timeout_s=timeout_s)

    async def complete(
        self,
        ref: CompletionRef,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
        *,
        caller: Caller | None = None,
    ) -> CompletionResult:
        """Complete a prompt (by public name) or template (by URI template) argument at its owner."""
        self._require_running()
        return await self.requests.complete(ref, argument, context_arguments, caller=caller or Caller.library())

    async def subscribe_resource(self, uri: str, *, caller: Caller | None = None) -> SubscriptionResult:
        """Be told (as `resource` events) when `uri` changes; routed to the server that owns it."""
        self._require_running()
        return await self.requests.subscribe(uri, caller=caller or Caller.library())

    async def unsubscribe_resource(self, uri: str, *, caller: Caller | None = None) -> SubscriptionResult:
        self._require_running()
        return await self.requests.unsubscribe(uri, caller=caller or Caller.library())

    async def reconnect(self, name: str | None = None, *, failed_only: bool = False) -> list[str]:
        """Reconnect one server, or every server (only the failed ones with `failed_only`).

        Returns the names asked to reconnect; waits until each has settled again.
        """
        self._require_running()
        targets = [self.connection(name)] if name is not None else list(self.pool.connections.values())
        if failed_only:
            targets = [c for c in targets if c.state in (ConnectionState.FAILED, ConnectionState.BACKING_OFF)]
        await self.pool.reconnect(targets, self.config.station.startup_timeout_s)
        return [c.name for c in targets]

    async def approve_tool(self, server: str, tool: str, *, actor: str = "library") -> bool:
        """Approve a tool's current definition after it changed (tool pinning). False if unknown."""
        pins = self.live_catalog.pins
        connection = self.pool.get(server)
        if pins is None or connection is None:
            return False
        definition = next((t for t in connection.listing.tools if t.name == tool), None)
        if definition is None:
            return False
        await pins.approve(server, definition, actor=actor)
        self.live_catalog.mark_dirty()
        return True

    # -- servers managed at run time ------------------------------------------------------------------

    def _require_dynamic(self) -> DynamicServers:
        self._require_running()
        if self.dynamic is None:
            raise UsageError("servers can be managed at run time only with a store: Station(config, store=...)")
        return self.dynamic

    async def add_server(self, spec: ServerSpec | dict[str, Any], *, actor: str = "library") -> ServerChange:
        """Add a server at run time: admitted by policy, persisted first, then connected.

        A command the classifier wants confirmed is saved as pending until `approve_server`. A
        server that fails to connect stays saved and is tried again at the next start.

        Raises:
            UsageError: no store, or `spec` is not a valid server entry.
        """
        return await self._require_dynamic().add(spec, actor=actor)

    async def remove_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """Remove a dynamic server: deleted from the store, disconnected, its tools gone."""
        return await self._require_dynamic().remove(name, actor=actor)

    async def enable_server(self, name: str, *, actor: str = "library") -> ServerChange:
        return await self._require_dynamic().set_enabled(name, True, actor=actor)

    async def disable_server(self, name: str, *, actor: str = "library") -> ServerChange:
        return await self._require_dynamic().set_enabled(name, False, actor=actor)

    async def approve_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """An operator approves a pending server; it connects now."""
        return await self._require_dynamic().approve(name, actor=actor)

    async def reload_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """Reconnect one server (static or dynamic) and re-list what it offers."""
        self._require_running()
        if self.dynamic is not None:
            return await self.dynamic.reload(name, actor=actor, timeout_s=self.config.station.startup_timeout_s)
        connection = self.pool.get(name)
        if connection is None:
            return ServerChange(False, ChangeAction.RELOAD, name, f"refused: server {name!r} is not running")
        await self.reconnect(name)
        ok = connection.is_ready
        message = f"reconnected {name!r}" if ok else f"{name!r} did not come back: {connection.error}"
        return ServerChange(ok, ChangeAction.RELOAD, name, message)
