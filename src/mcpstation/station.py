"""`Station`: many MCP servers, one catalog, every request through one pipeline.

```python
async with Station.from_file("mcpstation.toml") as station:
    result = await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})
```

The station is a facade over parts with one job each: the roster (every known server),
the pool (their connections), the live catalog (what they offer, merged), the dynamic servers
(changes at run time, persisted first), the follower (changes other processes made to the
store), and the pipeline (every request, every face). It owns their lifecycle; everything else
here is a one-line delegation to the part whose rule it is.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

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
from mcpstation.codemode import CodeRunner, CodeToolBuilder, SandboxWorkers
from mcpstation.config.models import AnyServerSpec, Role, ServerSpec, StationConfig, StdioServerSpec
from mcpstation.confirmations import ANSWER_ACTION, Answered, PendingQuestion, PendingQuestions
from mcpstation.connection import ConnectionState, ServerConnection, SessionHooks
from mcpstation.connection.early import EarlyStarts
from mcpstation.connection.snapshot import SessionInfo
from mcpstation.dynamic import ChangeAction, DynamicServers, ServerChange
from mcpstation.errors import IdentityProblem, ServerUnavailable, UpstreamIdentityError, UsageError
from mcpstation.events import EventHub, StationEvent
from mcpstation.follower import ChangeFollower
from mcpstation.host import Host
from mcpstation.host.oauth.exchange import UpstreamTokenError, UpstreamTokens
from mcpstation.host.oauth.upstream_hooks import SharedIdentityHooks
from mcpstation.host.oauth.user_grants import Connection as GrantConnection
from mcpstation.host.oauth.user_grants import UserGrants
from mcpstation.host.oauth.user_records import is_user_oauth
from mcpstation.live_catalog import LiveCatalog
from mcpstation.management import MANAGEMENT_SERVER, MANAGEMENT_TOOLS, management_spec
from mcpstation.pinning import ToolPins
from mcpstation.pipeline import (
    HOST_TOOLS,
    ArgumentCheck,
    Ask,
    AuditTrail,
    Bounds,
    Caller,
    ConfirmTier,
    Layer,
    Offer,
    Pipeline,
    PromptOwners,
    RequestKind,
    Router,
    StoreGate,
    ToolSurface,
    UriOwners,
    UrlGuardLayer,
    Visibility,
    assemble,
    needs_url_guard,
)
from mcpstation.pipeline.kinds import CompletionRef
from mcpstation.policy import UrlGuard, classify_command
from mcpstation.pool import ConnectionPool, StartPlan
from mcpstation.roster import Origin, RosterEntry, ServerRoster
from mcpstation.status import ReloadReport, ServerStatus, StationStatus, offline_reason, station_status
from mcpstation.user_pool import UserConnections

if TYPE_CHECKING:
    from mcpstation.host.oauth.sealing import Sealer
    from mcpstation.store import Store

logger = logging.getLogger(__name__)

LIBRARY_CALLER = Caller.library()  # the library face's caller, when a request names none (frozen, shared)
SURFACE_LINE_WAIT_S = 60.0  # the start-up surface line waits this long for the catalog's tokens to be counted
CACHE_SAVE_S = 5.0  # bound on keeping the last listings in the catalog cache at shutdown
STANDING_NOTICE = {"standing": True}
"""`extra` of a log line that holds at every start while the config stays as it is: a face may say it once."""


class Station:
    """One supervised connection per server, one merged catalog, one front door.

    `hooks` answers servers' requests (roots, sampling, elicitation, logging); by default a
    `Host` built from `config.host`, with no sampling or elicitation handler (requests are
    declined). `store` enables servers managed at run time, tool pinning and the audit trail.

    Use it as an async context manager (in one task): entering starts every enabled server
    concurrently and returns when all have settled or the overall start-up deadline passes;
    leaving stops them all, processes included, and writes the last audit records. `start` says
    how the servers whose listing the catalog cache knows start instead (`StartPlan`): in the
    background, their cached listings serving at once (a gateway), or only when a request needs
    them (a one-shot command). `early` holds servers' processes started before the station
    (`connection.early`): each server's first session adopts its own.
    """

    def __init__(
        self,
        config: StationConfig,
        *,
        hooks: SessionHooks | None = None,
        store: Store | None = None,
        on_change: Callable[[Station], None] | None = None,
        start: StartPlan = StartPlan.SETTLED,
        early: EarlyStarts | None = None,
    ) -> None:
        self.config = config
        self.hooks = hooks if hooks is not None else Host.from_config(config, store=store)
        self.store = store
        self.events = EventHub()
        self.roster = ServerRoster()
        self.upstream_tokens = UpstreamTokens()
        self.pool = ConnectionPool(
            config.station,
            hooks=SharedIdentityHooks(self.hooks, self.upstream_tokens),
            events=self.events,
            on_change=self._changed,
        )
        self.pool.early = early
        self.user_grants = UserGrants(store, self._sealer, lambda: self.config.auth.public_url)
        self.user_connections = UserConnections(
            self.roster.spec, lambda: self.config.station, self.hooks, self.upstream_tokens, self.user_grants
        )
        self._sealer_made: Sealer | None = None
        self._start_plan = start
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
            ChangeFollower(store, self.dynamic, catalog=self.live_catalog, pins=pins, users=self.user_connections)
            if store is not None and self.dynamic is not None
            else None
        )
        self._audit = AuditTrail(store, upstream_of=self._upstream_of) if store is not None else None
        self._upstreams: dict[str, tuple[AnyServerSpec, str]] = {}  # server -> (its spec, `_upstream_of` it)
        self.store_gate = StoreGate(store) if store is not None else None
        self._caller_layers: list[Layer] = []
        self._arguments = ArgumentCheck(lambda: self.catalog)
        self._offline_reason = partial(offline_reason, self.roster, self.pool)
        self.visibility = Visibility(self.roster.spec)
        self._code_tool = CodeToolBuilder(lambda: self.config.code_mode)
        self._sandboxes = SandboxWorkers(lambda: self.config.code_mode.workers)
        self._code_runner = CodeRunner(lambda: self.requests, lambda: self.config.code_mode, self._sandboxes)
        self._confirm = ConfirmTier(lambda: self.config.policy)
        self.confirmations = PendingQuestions(self.events)  # confirm-tier questions the HTTP API waits on
        self.uri_owners = UriOwners(lambda: self.catalog, self._offering)
        self.prompt_owners = PromptOwners(lambda: self.catalog, self._offering, self.live_catalog.name_prefixes)
        self.events.add_listener(self._learn_owner)
        self.requests = self._compose()
        self._on_change = on_change
        self._exit_stack: AsyncExitStack | None = None
        self._task_group: TaskGroup | None = None
        self._accepting = False

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Station:
        """A station for the config file at `path` (TOML, JSON or YAML; format detected)."""
        from mcpstation.config.loader import load_config  # the file formats load only when a file is read

        return cls(load_config(path))

    # -- the pipeline ------------------------------------------------------------------------------

    def _compose(self) -> Pipeline:
        """The one place the request path is put together (order: see `pipeline.assemble`)."""
        specs = [*(entry.spec for entry in self.roster), *self.config.servers]
        guarded = self.dynamic is not None or any(needs_url_guard(spec) for spec in specs)
        handler = assemble(
            route=Router(
                self.pool.get,
                self._offline_reason,
                answers={RequestKind.RUN_CODE: self._code_runner},
                per_user=self.user_connections,
            ),
            visibility=self.visibility,
            bounds=Bounds(lambda: self.config.station, self._server_cap),
            audit=self._audit,
            store_gate=self.store_gate,
            caller_layers=self._caller_layers,
            arguments=self._arguments,
            url_guard=UrlGuardLayer(self._url_guard, self.roster.spec) if guarded else None,
            confirm=self._confirm,
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
                code_tool=self._code_tool,
            ),
            uri_owners=self.uri_owners,
            prompt_owners=self.prompt_owners,
            confirm=self._confirm,
        )

    def _offering(self, offer: Offer) -> list[str]:
        """The servers ready to take a request whose capabilities `offer` it."""
        ready = [(name, c.info) for name, c in self.pool.connections.items() if c.is_ready]
        return [name for name, info in ready if _offers(info, offer)]

    def _learn_owner(self, event: StationEvent) -> None:
        """A server's update notification names a URI it owns (`pipeline/uri_owner.py`)."""
        if event.kind == "resource" and event.server is not None:
            self.uri_owners.remember(str(event.data.get("uri")), event.server)

    def add_layer(self, layer: Layer) -> None:
        """Wrap every later request in `layer` (metrics, tracing): inside visibility and audit,
        outside the argument check, the URL guard, the bounds and the route."""
        self._caller_layers.append(layer)
        self.requests = self._compose()

    def _upstream_of(self, server: str) -> str | None:
        """What a request to `server` reaches, and as whom: `token-exchange https://jira.example/mcp`
        (in every audit record: worked out once per spec object, as a change brings a new one)."""
        spec = self.roster.spec(server)
        if spec is None:
            return None
        known = self._upstreams.get(server)
        if known is None or known[0] is not spec:
            url: str | None = getattr(spec, "url", None)
            where = url.split("?", 1)[0] if url else getattr(spec, "command", None) or spec.transport
            known = self._upstreams[server] = (spec, f"{spec.auth.upstream} {where}")
        return known[1]

    def _sealer(self) -> Sealer:
        """The key sealing users' upstream grants (`[auth] token_key`, else a key file beside the store).

        Raises:
            ValueError: no key can be had (a PostgreSQL store without `auth.token_key`).
        """
        if self._sealer_made is None:
            from mcpstation.host.oauth.sealing import Sealer  # cryptography loads only for user-oauth servers

            store = self.store
            file = store.database_file if store is not None else None
            in_memory = store is not None and file is None and store.dialect == "sqlite"
            self._sealer_made = Sealer.from_settings(self.config.auth.token_key, file, in_memory=in_memory)
        return self._sealer_made

    def _server_cap(self, server: str) -> int | None:
        spec = self.roster.spec(server)
        return spec.max_result_bytes if spec is not None else None

    def _owned(self) -> dict[str, str]:
        """Tool names only the host's own server may take: the management tools, and the tool
        search and code mode meta-tools, which no server lists (the pipeline answers them)."""
        owned = dict.fromkeys(HOST_TOOLS, MANAGEMENT_SERVER)
        if MANAGEMENT_SERVER in self.roster:
            owned.update(dict.fromkeys(MANAGEMENT_TOOLS, MANAGEMENT_SERVER))
        return owned

    # -- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._exit_stack is not None:
            raise UsageError("this Station is already running")
        stack = AsyncExitStack()
        task_group = await stack.enter_async_context(anyio.create_task_group())
        stack.push_async_callback(self._close, task_group)
        self._exit_stack, self._task_group = stack, task_group
        self.pool.bind(task_group)
        self.user_connections.bind(task_group)
        self._sandboxes.bind(task_group)
        self.user_grants.bind(task_group)
        task_group.start_soon(self.live_catalog.watch, name="mcpstation catalog watcher")
        task_group.start_soon(self.user_connections.close_idle, name="mcpstation per-user connections")
        try:
            await self._start()
        except BaseException:
            await self._leave(None)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._leave(exc if isinstance(exc, anyio.get_cancelled_exc_class()) else None)

    async def _leave(self, cancelled: BaseException | None) -> None:
        """Unwind the exit stack: shut down, then leave the task group. The group is handed only a
        cancellation, so a caller's own exception reaches them as itself, not inside an ExceptionGroup."""
        stack, self._exit_stack = self._exit_stack, None
        assert stack is not None
        if cancelled is None:
            await stack.aclose()
        else:
            await stack.__aexit__(type(cancelled), cancelled, cancelled.__traceback__)

    async def _close(self, task_group: TaskGroup) -> None:
        try:
            await self._shutdown()
        finally:
            self._task_group = None
            self.pool.bind(None)
            self.user_connections.bind(None)
            self._sandboxes.bind(None)
            self.user_grants.bind(None)
            task_group.cancel_scope.cancel()  # the catalog watcher and the idle closer; everything else has ended

    async def _start(self) -> None:
        assert self._task_group is not None
        started = time.perf_counter()
        if self.store is not None and self.config.station.management_tools:
            self.roster.put(RosterEntry(management_spec(self), Origin.HOST))
        self.roster.put_static(self.config.servers)
        self._warn_about_static_commands()
        if self.catalog_cache is not None:
            await self.catalog_cache.load()
        self.pool.plan = self._start_plan  # for the launches of the start-up only
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
        self.pool.plan = StartPlan.SETTLED  # a server launched later (a reload, a change) is waited for
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
            "station up: %d of %d servers ready, %d starting with their cached catalog, %d idle until asked, "
            "%d tools (%.2f s)",
            sum(1 for c in connections if c.is_ready),
            len(connections),
            sum(1 for c in connections if c.state is ConnectionState.STARTING and c.is_dormant),
            sum(1 for c in connections if c.state is ConnectionState.IDLE),
            len(self.catalog.tools),
            time.perf_counter() - started,
        )
        self._task_group.start_soon(self._announce_surface, name="mcpstation surface line")

    async def _announce_surface(self) -> None:
        """The start-up line of what the catalog costs a model, once its tokens are counted (the
        library caller's surface: every tool)."""
        await self.live_catalog.index.wait_counted(SURFACE_LINE_WAIT_S)
        totals = self.requests.surface_totals(LIBRARY_CALLER)
        if totals is not None:
            logger.info("%s", totals.line())

    def _should_run(self, spec: AnyServerSpec) -> bool:
        return spec.enabled and (self.config.enabled or spec.name == MANAGEMENT_SERVER)

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
                        "static server %r: %s (allowed: static config is trusted)",
                        spec.name,
                        verdict.reason,
                        extra=STANDING_NOTICE,
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
            await self.user_connections.shutdown()
            await self.pool.shutdown()
            await self._sandboxes.aclose()
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
        shadowed = self.roster.apply_static(config.servers)
        self.user_connections.close_server([*removed, *changed, *shadowed])
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
        return {spec.name: spec for spec in config.servers if spec.enabled and spec.unsupported is None}

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
        return await self.requests.search_tools(query, caller=caller or LIBRARY_CALLER, limit=limit, server=server)

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

    def status(self, caller: Caller = LIBRARY_CALLER) -> StationStatus:
        """Every server, and the LLM surface of `caller` with its token estimates. An admin (the
        library caller is one) sees every server; anyone else only those their visibility reaches,
        without their stderr (`StationStatus.seen_by`)."""
        catalog = self.catalog
        pins = self.live_catalog.pins
        status = station_status(
            self.roster,
            self.pool,
            catalog,
            tokens=self.live_catalog.index.tokens_by_server(catalog.tools.values()),
            surface=self.requests.surface_totals(caller),
            extra_warnings=pins.warnings if pins is not None else None,
        )
        if caller.role is Role.ADMIN:
            return status
        return status.seen_by(lambda server: self.requests.visibility.can_see(caller, server))

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
        ask: Ask | None = None,
    ) -> ToolResult:
        """Call a tool by its public name; every failure comes back as a `ToolResult` with its `outcome`.

        `ask` is how the caller confirms a call of a tool in `[policy] confirm_tools` (without it
        such a call is refused).

        Raises:
            UsageError: the station is not running (programming misuse).
        """
        self._require_running()
        return await self.requests.call_tool(
            name, arguments, caller=caller or LIBRARY_CALLER, timeout_s=timeout_s, progress=progress, ask=ask
        )

    async def run_code(
        self, code: str, *, timeout_s: float | None = None, caller: Caller | None = None, ask: Ask | None = None
    ) -> ToolResult:
        """Run a code-mode script (docs/code-mode.md) whose tool calls are `caller`'s own requests; the
        answer's `structured` says `ok`, the `value`, the `output`, the `calls` made and any `limit`.

        Works whatever `[station] code_mode` says: the setting decides what a model is handed, and
        the library is the program that decides for itself.
        """
        self._require_running()
        return await self.requests.run_code(code, caller=caller or LIBRARY_CALLER, timeout_s=timeout_s, ask=ask)

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
        return await self.requests.get_prompt(name, arguments, caller=caller or LIBRARY_CALLER, timeout_s=timeout_s)

    async def read_resource(
        self, uri: str, *, timeout_s: float | None = None, caller: Caller | None = None
    ) -> ResourceResult:
        """Read a resource, routed to the server that lists it or whose template matches it."""
        self._require_running()
        return await self.requests.read_resource(uri, caller=caller or LIBRARY_CALLER, timeout_s=timeout_s)

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
        return await self.requests.complete(ref, argument, context_arguments, caller=caller or LIBRARY_CALLER)

    async def subscribe_resource(self, uri: str, *, caller: Caller | None = None) -> SubscriptionResult:
        """Be told (as `resource` events) when `uri` changes; routed to the server that owns it."""
        self._require_running()
        return await self.requests.subscribe(uri, caller=caller or LIBRARY_CALLER)

    async def unsubscribe_resource(self, uri: str, *, caller: Caller | None = None) -> SubscriptionResult:
        self._require_running()
        return await self.requests.unsubscribe(uri, caller=caller or LIBRARY_CALLER)

    async def reconnect(
        self, name: str | None = None, *, failed_only: bool = False, actor: str | None = None
    ) -> list[str]:
        """Reconnect one server, or every server (only the failed ones with `failed_only`).

        Returns the names asked to reconnect; waits until each has settled again. With `actor`
        (someone asked: a person, a token) each is recorded as a management action first.
        """
        self._require_running()
        targets = [self.connection(name)] if name is not None else list(self.pool.connections.values())
        if failed_only:
            targets = [c for c in targets if c.state in (ConnectionState.FAILED, ConnectionState.BACKING_OFF)]
        if actor is not None and self.store is not None:
            for target in targets:
                await self.store.record_action("reconnect", actor=actor, server=target.name)
        await self.pool.reconnect(targets, self.config.station.startup_timeout_s)
        return [c.name for c in targets]

    # -- each user's own authorizations of user-oauth upstreams (every face: a Caller, then these) ---

    def _own_user(self, caller: Caller, server: str | None = None) -> tuple[tuple[str, str], AnyServerSpec | None]:
        """The signed-in caller's user key, and `server`'s spec if it is a user-oauth server they reach.

        Raises:
            UpstreamIdentityError: the caller did not sign in with an identity provider.
            ServerUnavailable: `server` is not a user-oauth server this caller reaches.
        """
        principal = caller.principal
        if principal is None or not principal.from_identity_provider:
            raise UpstreamIdentityError(
                "only a user signed in with the organisation's identity provider has upstream authorizations",
                IdentityProblem.NOT_SIGNED_IN,
                tool=server or "",
                server=server,
            )
        if server is None:
            return principal.key, None
        spec = self.roster.spec(server)
        if spec is None or not is_user_oauth(spec) or not self.visibility.reaches(caller, server):
            raise ServerUnavailable(
                f"no server {server!r} that {principal.subject!r} authorizes (user-oauth)", server=server
            )
        return principal.key, spec

    async def upstream_authorizations(self, caller: Caller) -> list[GrantConnection]:
        """The caller's own authorizations of user-oauth servers."""
        user, _ = self._own_user(caller)
        return await self.user_grants.connections(user)

    async def authorize_upstream(self, caller: Caller, server: str) -> str:
        """Where the caller authorizes `server` (a user-oauth server): a sign-in started (or in progress).

        Raises:
            UpstreamIdentityError: not signed in, or the sign-in could not start.
            ServerUnavailable: no such user-oauth server for this caller.
        """
        self._require_running()
        user, spec = self._own_user(caller, server)
        assert spec is not None
        try:
            return await self.user_grants.authorization_url(user, spec)
        except UpstreamTokenError as exc:
            raise UpstreamIdentityError(str(exc), IdentityProblem.NO_TOKEN, tool="", server=server) from exc

    async def revoke_upstream(self, caller: Caller, server: str) -> bool:
        """Forget the caller's authorization of `server` and close their connection to it; whether
        there was one. A server gone from the config (or out of the caller's reach now) still has its
        record forgotten: it is the caller's own."""
        user, _ = self._own_user(caller)
        spec = self.roster.spec(server)
        self.user_connections.close_user(user, server)
        try:
            if spec is not None and is_user_oauth(spec):
                revoked = await self.user_grants.revoke(user, spec)
            else:
                revoked = await self.user_grants.forget_record(user, server)
        except UpstreamTokenError as exc:
            raise UpstreamIdentityError(str(exc), IdentityProblem.NO_TOKEN, tool="", server=server) from exc
        if revoked and self.store is not None:
            await self.store.record_action("revoke-authorization", actor=caller.actor, server=server)
        return revoked

    # -- confirm-tier questions waiting for an answer over the HTTP API (`confirmations.py`) ----------

    async def answer_confirmation(
        self, caller: Caller, question_id: str, *, approve: bool
    ) -> tuple[PendingQuestion, Answered] | None:
        """Answer a question waiting in `confirmations` that `caller` may answer (theirs, or any for an
        admin): what the waiting call did with it, audited as an action once taken; None when there
        is no such question for this caller."""
        answered = await self.confirmations.answer(caller, question_id, approve=approve)
        if answered is None:
            return None
        pending, fate = answered
        if fate is Answered.TAKEN and self.store is not None:
            question = pending.question
            detail = {"tool": question.name, "caller": question.caller.actor, "approved": approve}
            with anyio.CancelScope(shield=True):  # it took effect: its record is written even if the answerer left
                await self.store.record_action(ANSWER_ACTION, actor=caller.actor, server=question.server, detail=detail)
        return answered

    async def complete_authorization(
        self, state: str, code: str | None, iss: str | None, error: str | None
    ) -> tuple[tuple[str, str], str]:
        """A browser came back to `/oauth/callback`: the user and server it authorized.

        Raises:
            UnknownSignIn: no sign-in in progress here has that state.
            UpstreamTokenError: the authorization server said no, or the code exchange failed.
        """
        return await self.user_grants.complete(state, code, iss, error)

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


def _offers(info: SessionInfo, offer: Offer) -> bool:
    """Whether a session's capabilities offer what a request needs (`pipeline.uri_owner.Offer`)."""
    match offer:
        case Offer.RESOURCES:
            return info.offers_resources
        case Offer.SUBSCRIBE:
            return info.can_subscribe
        case Offer.PROMPTS:
            return info.offers_prompts
        case Offer.COMPLETIONS:
            return info.offers_completions
