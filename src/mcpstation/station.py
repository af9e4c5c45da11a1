"""`Station`: many MCP servers, one catalog, calls routed to the right server.

```python
async with Station.from_file("mcpstation.toml") as station:
    result = await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})
```
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.client.session import ProgressFnT

from mcpstation.calls import Caller, CallHandler, CallLayer, CallRequest, compose
from mcpstation.catalog import Catalog, CatalogPrompt, CatalogResource, CatalogTemplate, CatalogTool, ToolResult
from mcpstation.catalog.results import content_size
from mcpstation.config.loader import load_config
from mcpstation.config.models import ROLE_RANK, ServerSpec, StationConfig
from mcpstation.config.presets import fetch_guard_targets, resolve_presets
from mcpstation.connection import NO_HOOKS, ConnectionState, ServerConnection, SessionHooks
from mcpstation.errors import CallError, ServerError, ServerUnavailable, ToolNotFound, UsageError
from mcpstation.policy import UrlGuard, clean_text

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # bound on closing every session and process at shutdown


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as `status` shows it; never carries a secret."""

    name: str
    state: str
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "transport": self.transport,
            "target": self.target,
            "protocol_version": self.protocol_version,
            "server_name": self.server_name,
            "server_version": self.server_version,
            "tools": self.tools,
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


@dataclass(frozen=True, slots=True)
class StationStatus:
    servers: tuple[ServerStatus, ...]
    conflicts: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"servers": [s.to_dict() for s in self.servers], "conflicts": list(self.conflicts)}


class Station:
    """The orchestrator: one supervised connection per server, one merged catalog.

    Use it as an async context manager (in one task): entering starts every enabled server
    concurrently and returns when all have settled or the overall start-up deadline passes;
    leaving stops them all, processes included.
    """

    def __init__(
        self,
        config: StationConfig,
        *,
        hooks: SessionHooks = NO_HOOKS,
        on_change: Callable[[Station], None] | None = None,
    ) -> None:
        self.config = resolve_presets(config)
        self.hooks = hooks
        self._url_guard = UrlGuard.from_policy(self.config.policy)
        self._fetch_servers = fetch_guard_targets(self.config)
        self._specs_by_name = {spec.name: spec for spec in self.config.servers}
        self._connections: dict[str, ServerConnection] = {}
        self._catalog = Catalog()
        self._catalog_dirty = False
        self._task_group: TaskGroup | None = None
        self._accepting = False
        self._on_change = on_change
        self._reported_conflicts: set[tuple[str, str, str]] = set()
        self._extra_layers: list[CallLayer] = []
        self._call_path: CallHandler = self._build_call_path()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Station:
        """A station for the config file at `path` (TOML, JSON or YAML; format detected)."""
        return cls(load_config(path))

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise UsageError("this Station is already running")
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            await self._start_all()
        except BaseException:
            await self._shutdown()
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._task_group is not None
        try:
            await self._shutdown()
        finally:
            task_group, self._task_group = self._task_group, None
            # Our own tasks have stopped; hand the group only a cancellation, so the caller's
            # exception reaches them as itself rather than inside an ExceptionGroup.
            if exc is not None and isinstance(exc, anyio.get_cancelled_exc_class()):
                await task_group.__aexit__(exc_type, exc, tb)
            else:
                await task_group.__aexit__(None, None, None)

    async def _start_all(self) -> None:
        for spec in self._active_specs(self.config).values():
            self._launch(spec)
        self._accepting = True
        started = time.perf_counter()
        deadline = self.config.station.startup_timeout_s
        with anyio.move_on_after(deadline):
            for connection in list(self._connections.values()):
                await connection.settled.wait()
        pending = [c.name for c in self._connections.values() if c.state is ConnectionState.STARTING]
        if pending:
            logger.warning(
                "start-up deadline of %g s passed; still connecting in the background: %s",
                deadline,
                ", ".join(repr(name) for name in pending),
            )
        ready = sum(1 for c in self._connections.values() if c.is_ready)
        logger.info(
            "station up: %d of %d servers ready, %d tools (%.2f s)",
            ready,
            len(self._connections),
            len(self.catalog.tools),
            time.perf_counter() - started,
        )

    def _launch(self, spec: ServerSpec) -> ServerConnection:
        assert self._task_group is not None
        connection = ServerConnection(spec, self.config.station, on_change=self._connection_changed, hooks=self.hooks)
        self._connections[spec.name] = connection
        self._task_group.start_soon(connection.run, name=f"mcpstation server {spec.name!r}")
        return connection

    async def _shutdown(self) -> None:
        """Stop taking calls, then close every session and process concurrently, bounded."""
        self._accepting = False
        for connection in self._connections.values():
            connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S) as scope:
            for connection in list(self._connections.values()):
                await connection.wait_stopped()
        if scope.cancelled_caught and self._task_group is not None:
            logger.warning("servers did not stop within %g s; cancelling their tasks", STOP_TIMEOUT_S)
            self._task_group.cancel_scope.cancel()

    def _connection_changed(self, connection: ServerConnection) -> None:
        # Rebuilt on the next read: a burst of changes (twenty servers coming up) costs one merge.
        self._catalog_dirty = True
        if self._on_change is not None:
            self._on_change(self)

    async def reload(self, config: StationConfig) -> ReloadReport:
        """Apply a new config: start added servers, stop removed ones, restart changed ones.

        Unchanged servers keep their sessions and their calls in flight. Returns once the
        started servers have settled or the start-up deadline passed.
        """
        self._require_running()
        config = resolve_presets(config)
        before = self._active_specs(self.config)
        after = self._active_specs(config)
        removed = [name for name in before if name not in after]
        added = [name for name in after if name not in before]
        changed = [name for name in after if name in before and after[name] != before[name]]
        self.config = config
        self._url_guard = UrlGuard.from_policy(config.policy)
        self._fetch_servers = fetch_guard_targets(config)
        self._specs_by_name = {spec.name: spec for spec in config.servers}
        for name, connection in self._connections.items():
            if name not in removed and name not in changed:
                connection.settings = config.station
        stopping = [self._connections.pop(name) for name in (*removed, *changed) if name in self._connections]
        for connection in stopping:
            connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S):
            for connection in stopping:
                await connection.wait_stopped()
        launched = [self._launch(after[name]) for name in after if name in added or name in changed]
        self._rebuild_catalog()
        with anyio.move_on_after(config.station.startup_timeout_s):
            for connection in launched:
                await connection.settled.wait()
        report = ReloadReport(
            added=tuple(added),
            removed=tuple(removed),
            changed=tuple(changed),
            unchanged=tuple(name for name in after if name not in added and name not in changed),
        )
        logger.info("reloaded: %s", report)
        if self._on_change is not None:
            self._on_change(self)
        return report

    def _active_specs(self, config: StationConfig) -> dict[str, ServerSpec]:
        if not config.enabled:
            return {}
        return {spec.name: spec for spec in config.servers if spec.enabled}

    def _rebuild_catalog(self) -> None:
        """Merge every ready server's listing in config order and swap the catalog atomically."""
        order = [spec.name for spec in self.config.servers]
        ranked = sorted(
            self._connections.values(), key=lambda c: order.index(c.name) if c.name in order else len(order)
        )
        listings = [c.listing for c in ranked if c.state is ConnectionState.READY]
        settings = self.config.station
        clean = functools.partial(clean_text, max_chars=settings.max_description_chars)
        catalog = Catalog.build(listings, naming=settings.naming, reserved=settings.reserved_names, clean=clean)
        for conflict in catalog.conflicts:
            key = (conflict.kind, conflict.name, conflict.server)
            if key not in self._reported_conflicts:
                self._reported_conflicts.add(key)
                logger.warning("%s", conflict)
        self._catalog = catalog
        self._catalog_dirty = False

    # -- what the station offers --------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The current snapshot; hold on to it for a consistent view across several lookups."""
        if self._catalog_dirty:
            self._rebuild_catalog()
        return self._catalog

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

    @property
    def connections(self) -> dict[str, ServerConnection]:
        return dict(self._connections)

    def connection(self, name: str) -> ServerConnection:
        try:
            return self._connections[name]
        except KeyError:
            known = ", ".join(repr(n) for n in self._connections) or "none"
            raise ServerUnavailable(f"no server {name!r} in this station (servers: {known})", server=name) from None

    def status(self) -> StationStatus:
        servers = []
        for spec in self.config.servers:
            connection = self._connections.get(spec.name)
            servers.append(_server_status(spec, connection))
        return StationStatus(servers=tuple(servers), conflicts=tuple(c.to_dict() for c in self.catalog.conflicts))

    # -- calls ------------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        progress: ProgressFnT | None = None,
        caller: Caller | None = None,
    ) -> ToolResult:
        """Call a tool by its public name; every failure comes back as `ToolResult(ok=False)`.

        Raises:
            UsageError: the station is not running (programming misuse).
        """
        self._require_running()
        catalog = self.catalog
        entry = catalog.tools.get(name)
        if entry is None:
            return ToolResult.failure(name, str(ToolNotFound(name, catalog.suggest(name))))
        request = CallRequest(entry, arguments or {}, caller or Caller(), timeout_s, progress)
        return await self._call_path(request)

    def _build_call_path(self) -> CallHandler:
        """The layers every tool call passes, outermost first; the innermost talks to the server."""
        layers: list[CallLayer] = [self._visibility, *self._extra_layers, self._guard_urls, self._bounded]
        return compose(self._send_call, layers)

    async def _send_call(self, request: CallRequest) -> ToolResult:
        entry = request.entry
        started = time.perf_counter()
        connection = self._connections.get(entry.server)
        if connection is None:
            return ToolResult.failure(
                entry.name, f"server {entry.server!r} is not running", server=entry.server, tool=entry.tool
            )
        try:
            raw = await connection.call_tool(
                entry.tool, request.arguments, timeout_s=request.timeout_s, progress=request.progress
            )
        except (CallError, ServerError) as exc:
            return ToolResult.failure(
                entry.name, str(exc), server=entry.server, tool=entry.tool, duration_s=time.perf_counter() - started
            )
        return ToolResult.from_sdk(
            raw, name=entry.name, server=entry.server, tool=entry.tool, duration_s=time.perf_counter() - started
        )

    def _visibility(self, handler: CallHandler) -> CallHandler:
        """A tool the caller's role may not see does not exist for that caller."""

        async def visible_only(request: CallRequest) -> ToolResult:
            if not self.is_visible(request.entry, request.caller):
                return ToolResult.failure(request.name, str(ToolNotFound(request.name)))
            return await handler(request)

        return visible_only

    def is_visible(self, entry: CatalogTool, caller: Caller) -> bool:
        """Whether `caller`'s role reaches the tool's minimum role (per tool, else per server)."""
        spec = self._specs_by_name.get(entry.server)
        if spec is None:
            return False
        required = spec.min_role
        for pattern, role in spec.tool_roles.items():
            if fnmatch.fnmatchcase(entry.tool, pattern):
                required = role
                break
        return ROLE_RANK.get(caller.role, 0) >= ROLE_RANK[required]

    def tools_for(self, caller: Caller) -> list[CatalogTool]:
        """The tools `caller` may see and call."""
        return [tool for tool in self.catalog.tools.values() if self.is_visible(tool, caller)]

    def _guard_urls(self, handler: CallHandler) -> CallHandler:
        """Fetch-like tools may only reach public addresses: refuse a URL argument the guard rejects."""

        async def guarded(request: CallRequest) -> ToolResult:
            if request.entry.server in self._fetch_servers:
                verdict = await self._url_guard.check_arguments(request.arguments)
                if verdict is not None and not verdict.allowed:
                    logger.warning("refused %s: %s", request.name, verdict.reason)
                    return request.refuse(verdict.refusal())
            return await handler(request)

        return guarded

    def _bounded(self, handler: CallHandler) -> CallHandler:
        """Fail results over the hard cap; cut those over `max_result_bytes`, head and tail kept."""

        async def bounded(request: CallRequest) -> ToolResult:
            result = await handler(request)
            settings = self.config.station
            size = content_size(result.content)
            if size > settings.hard_max_result_bytes:
                return ToolResult.failure(
                    result.name,
                    f"the result of {result.tool!r} is {size} bytes, over the hard cap of "
                    f"{settings.hard_max_result_bytes} bytes; ask for less (a narrower query, a page, a range)",
                    server=result.server,
                    tool=result.tool,
                    duration_s=result.duration_s,
                )
            connection = self._connections.get(request.entry.server)
            spec_cap = connection.spec.max_result_bytes if connection is not None else None
            return result.capped(spec_cap or settings.max_result_bytes, size=size)

        return bounded

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> types.CompleteResult:
        """Complete a prompt or template argument, routed to the server that owns it.

        A prompt reference uses the prompt's public name; a template reference its URI template.

        Raises:
            ToolNotFound, ServerUnavailable, ConnectionLost, CallTimeout, RemoteError.
        """
        self._require_running()
        catalog = self.catalog
        if isinstance(ref, types.PromptReference):
            prompt = catalog.prompts.get(ref.name)
            if prompt is None:
                raise ToolNotFound(ref.name, catalog.suggest(ref.name, "prompt"), kind="prompt")
            server, target = prompt.server, types.PromptReference(type="ref/prompt", name=prompt.prompt)
        else:
            template = catalog.templates.get(ref.uri)
            if template is None:
                raise ToolNotFound(ref.uri, kind="resource template")
            server, target = template.server, ref
        return await self.connection(server).complete(target, argument, context_arguments)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, timeout_s: float | None = None
    ) -> types.GetPromptResult:
        """Get a prompt by its public name.

        Raises:
            ToolNotFound, ServerUnavailable, ConnectionLost, CallTimeout, RemoteError.
        """
        self._require_running()
        catalog = self.catalog
        entry = catalog.prompts.get(name)
        if entry is None:
            raise ToolNotFound(name, catalog.suggest(name, "prompt"), kind="prompt")
        return await self.connection(entry.server).get_prompt(entry.prompt, arguments, timeout_s=timeout_s)

    async def read_resource(self, uri: str, *, timeout_s: float | None = None) -> types.ReadResourceResult:
        """Read a resource, routed to the server that lists it or whose template matches it.

        Raises:
            ToolNotFound, ServerUnavailable, ConnectionLost, CallTimeout, RemoteError.
        """
        self._require_running()
        owner = self.catalog.resource_owner(uri)
        if owner is None:
            raise ToolNotFound(uri, kind="resource or template matching")
        return await self.connection(owner).read_resource(uri, timeout_s=timeout_s)

    async def reconnect(self, name: str | None = None, *, failed_only: bool = False) -> list[str]:
        """Reconnect one server, or every server (only the failed ones with `failed_only`).

        Returns the names asked to reconnect; waits until each has settled again.
        """
        self._require_running()
        targets = [self.connection(name)] if name is not None else list(self._connections.values())
        if failed_only:
            targets = [c for c in targets if c.state in (ConnectionState.FAILED, ConnectionState.BACKING_OFF)]
        for connection in targets:
            connection.reconnect()
        with anyio.move_on_after(self.config.station.startup_timeout_s):
            for connection in targets:
                await connection.wait_settled_after_reconnect()
        return [c.name for c in targets]

    def _require_running(self) -> None:
        if self._task_group is None or not self._accepting:
            raise UsageError("the station is not running: use `async with Station(...) as station:`")


def _server_status(spec: ServerSpec, connection: ServerConnection | None) -> ServerStatus:
    if connection is None:
        state = "DISABLED" if not spec.enabled else "STOPPED"
        return ServerStatus(
            name=spec.name,
            state=state,
            transport=spec.transport,
            target=_redacted_target(spec),
            protocol_version=None,
            server_name=None,
            server_version=None,
            tools=0,
            prompts=0,
            resources=0,
            templates=0,
            error=None,
            pid=None,
            startup_s=None,
            restarts=0,
            stderr_tail=(),
            warnings=(),
        )
    listing = connection.listing
    return ServerStatus(
        name=spec.name,
        state=str(connection.state),
        transport=spec.transport,
        target=_redacted_target(spec),
        protocol_version=connection.protocol_version,
        server_name=connection.server_name,
        server_version=connection.server_version,
        tools=len(listing.tools),
        prompts=len(listing.prompts),
        resources=len(listing.resources),
        templates=len(listing.templates),
        error=connection.error,
        pid=connection.pid,
        startup_s=connection.startup_s,
        restarts=connection.restarts,
        stderr_tail=tuple(connection.stderr_tail),
        warnings=tuple(connection.warnings),
        instructions=clean_text(connection.instructions, max_chars=2000) if connection.instructions else None,
    )


def _redacted_target(spec: ServerSpec) -> str:
    """The command line or URL with any userinfo or query secrets left out."""
    target = spec.target
    if "://" in target and "@" in target.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = target.split("://", 1)
        target = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return target


def describe_servers(statuses: Sequence[ServerStatus]) -> str:
    """A one-line summary: how many servers are in which state."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status.state] = counts.get(status.state, 0) + 1
    return ", ".join(f"{n} {state.lower()}" for state, n in sorted(counts.items()))
