"""`Station`: many MCP servers, one catalog, calls routed to the right server.

```python
async with Station.from_file("mcpstation.toml") as station:
    result = await station.call_tool("mcp_demo_add", {"a": 2, "b": 3})
```
"""

from __future__ import annotations

import dataclasses
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
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ProgressFnT

from mcpstation.adapters import MANAGEMENT_SERVER, management_tools, run_management_tool
from mcpstation.calls import Caller, CallHandler, CallLayer, CallRequest, compose
from mcpstation.catalog import Catalog, CatalogPrompt, CatalogResource, CatalogTemplate, CatalogTool, ToolResult
from mcpstation.catalog.results import content_size
from mcpstation.config.loader import load_config
from mcpstation.config.models import ROLE_RANK, ServerSpec, StationConfig, StdioServerSpec
from mcpstation.config.presets import fetch_guard_targets, resolve_presets
from mcpstation.connection import ConnectionState, ServerConnection, SessionHooks
from mcpstation.dynamic import ChangeAction, DynamicEntry, ServerChange, parse_spec
from mcpstation.errors import CallError, ServerError, ServerUnavailable, ToolNotFound, UsageError
from mcpstation.events import EventHub, ServerLogBridge, StationEvent
from mcpstation.host import Host
from mcpstation.pinning import ToolPins
from mcpstation.policy import UrlGuard, classify_command, clean_text
from mcpstation.policy.admission import admit
from mcpstation.policy.oauth_guard import oauth_request_guard
from mcpstation.store import Store

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # bound on closing every session and process at shutdown
CATALOG_EVENT_DELAY_S = 0.05  # changes this close together make one catalog event
AUDIT_QUEUE_SIZE = 10_000  # audit records waiting to be written; beyond this a record is dropped, logged


def _changed_kinds(before: Catalog, after: Catalog) -> list[str]:
    """Which lists differ between two catalogs (names and definitions)."""
    changed = []
    if {n: t.definition for n, t in before.tools.items()} != {n: t.definition for n, t in after.tools.items()}:
        changed.append("tools")
    if {n: (p.server, p.description) for n, p in before.prompts.items()} != {
        n: (p.server, p.description) for n, p in after.prompts.items()
    }:
        changed.append("prompts")
    if set(before.resources) != set(after.resources) or set(before.templates) != set(after.templates):
        changed.append("resources")
    return changed


def _outcome(result: ToolResult) -> str:
    if result.ok:
        return "ok"
    error = result.error or ""
    if error.startswith("refused") or (result.structured or {}).get("success") is False:
        return "refused"
    if "did not answer within" in error:
        return "timeout"
    return "error"


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
    origin: str = "static"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin,
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

    `hooks` answers servers' requests (roots, sampling, elicitation, logging); by default a
    `Host` built from `config.host`, with no sampling or elicitation handler (requests are
    declined). `store` enables servers managed at run time and the audit trail.

    Use it as an async context manager (in one task): entering starts every enabled server
    concurrently and returns when all have settled or the overall start-up deadline passes;
    leaving stops them all, processes included.
    """

    def __init__(
        self,
        config: StationConfig,
        *,
        hooks: SessionHooks | None = None,
        store: Store | None = None,
        on_change: Callable[[Station], None] | None = None,
    ) -> None:
        self.config = resolve_presets(config)
        self.hooks = hooks if hooks is not None else Host.from_config(self.config, store=store)
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
        self.events = EventHub()
        self._log_bridge = ServerLogBridge(self.events)
        self._catalog_wake = anyio.Event()
        self._watcher_scope = anyio.CancelScope()
        self.store = store
        mode = self.config.policy.tool_pinning
        self._pins = ToolPins(store, mode) if store is not None and mode != "off" else None
        self._dynamic: dict[str, DynamicEntry] = {}
        self._audit_send: MemoryObjectSendStream[dict[str, Any]] | None = None
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
        self._task_group.start_soon(self._watch_catalog, name="mcpstation catalog watcher")
        logging.getLogger("mcpstation.server").addHandler(self._log_bridge)
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
        self._warn_about_static_commands()
        for spec in self._active_specs(self.config).values():
            self._launch(spec)
        if self.store is not None:
            self._start_audit_writer()
            self._call_path = self._build_call_path()
            for spec in await self._load_dynamic():
                self._launch(spec)
        self._accepting = True
        started = time.perf_counter()
        deadline = self.config.station.startup_timeout_s
        with anyio.move_on_after(deadline):
            for connection in list(self._connections.values()):
                await connection.settled.wait()
        await self._verify_pins()
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

    async def _recheck_dynamic(self, spec: ServerSpec) -> str | None:
        """A runtime-added URL is judged again at every connect: its DNS answer may have changed."""
        admission = await admit(spec, self.config.policy, guard=self._url_guard)
        return None if admission.decision == "allow" else admission.reason

    def _warn_about_static_commands(self) -> None:
        """Static servers are the operator's own choice: risky commands only get a warning."""
        for spec in self._active_specs(self.config).values():
            if isinstance(spec, StdioServerSpec):
                env = {key: value.get_secret_value() for key, value in spec.env.items()}
                verdict = classify_command(
                    spec.command, spec.args, env, allowed_packages=self.config.policy.allowed_packages, cwd=spec.cwd
                )
                if verdict.verdict == "deny":
                    logger.warning(
                        "static server %r: %s (allowed: static config is trusted)", spec.name, verdict.reason
                    )

    async def _load_dynamic(self) -> list[ServerSpec]:
        """Stored dynamic servers to connect now; the others are kept and reported, never deleted."""
        assert self.store is not None
        static = {spec.name for spec in self.config.servers}
        launch: list[ServerSpec] = []
        for record in await self.store.list_dynamic_servers():
            entry = DynamicEntry(record)
            if record.name in static:
                entry = DynamicEntry(
                    record, f"shadowed by the static server {record.name!r} (static config wins)", "SHADOWED"
                )
            elif record.status != "active":
                entry = DynamicEntry(record, f"waiting for approval: {record.note or 'needs an operator'}", "PENDING")
            elif not record.enabled:
                entry = DynamicEntry(record, None, "DISABLED")
            else:
                full = await self.store.get_dynamic_server(record.name, reveal_secrets=True)
                assert full is not None
                admission = await admit(full.spec, self.config.policy, guard=self._url_guard)
                if admission.decision == "deny":
                    entry = DynamicEntry(record, f"no longer allowed by policy: {admission.reason}", "REFUSED")
                else:
                    launch.append(full.spec)
            if entry.held:
                logger.warning("dynamic server %r not started: %s", record.name, entry.held)
            self._dynamic[record.name] = entry
        self._refresh_specs()
        return launch

    def _refresh_specs(self) -> None:
        self._specs_by_name = {spec.name: spec for spec in self.config.servers}
        for name, entry in self._dynamic.items():
            self._specs_by_name.setdefault(name, entry.record.spec)

    def _launch(self, spec: ServerSpec) -> ServerConnection:
        assert self._task_group is not None
        # Servers an agent added: judged again at connect, and their OAuth requests guarded too.
        remote_dynamic = spec.name in self._dynamic and not isinstance(spec, StdioServerSpec)
        connection = ServerConnection(
            spec,
            self.config.station,
            on_change=self._connection_changed,
            hooks=self.hooks,
            on_stderr=self._on_stderr,
            precheck=self._recheck_dynamic if remote_dynamic else None,
            request_guard=oauth_request_guard(spec.url, self._url_guard, server=spec.name) if remote_dynamic else None,
            on_resource_updated=self._on_resource_updated,
        )
        self._connections[spec.name] = connection
        self._task_group.start_soon(connection.run, name=f"mcpstation server {spec.name!r}")
        return connection

    async def _shutdown(self) -> None:
        """Stop taking calls, then close every session and process concurrently, bounded."""
        self._accepting = False
        logging.getLogger("mcpstation.server").removeHandler(self._log_bridge)
        self._watcher_scope.cancel()
        if self._audit_send is not None:
            self._audit_send.close()  # the writer drains what is queued, then ends
        for connection in self._connections.values():
            connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S) as scope:
            for connection in list(self._connections.values()):
                await connection.wait_stopped()
        if scope.cancelled_caught and self._task_group is not None:
            logger.warning("servers did not stop within %g s; cancelling their tasks", STOP_TIMEOUT_S)
            self._task_group.cancel_scope.cancel()

    def _connection_changed(self, connection: ServerConnection) -> None:
        # Rebuilt on the next read, or by the catalog watcher: a burst of changes costs one merge.
        self._catalog_dirty = True
        self._catalog_wake.set()
        if self.events.has_subscribers:
            data = {"state": str(connection.state), "error": connection.error, "tools": len(connection.listing.tools)}
            self.events.publish(StationEvent("state", connection.name, data))

    async def _verify_pins(self) -> None:
        """Check new tool definitions against their pins, then publish what passes."""
        if self._pins is None:
            return
        ready = [c.listing for c in self._connections.values() if c.state is ConnectionState.READY]
        await self._pins.verify(ready)
        self._catalog_dirty = True

    async def approve_tool(self, server: str, tool: str, *, actor: str = "library") -> bool:
        """Approve a tool's current definition after it changed (tool pinning). False if unknown."""
        if self._pins is None:
            return False
        connection = self._connections.get(server)
        definition = next((t for t in connection.listing.tools if t.name == tool), None) if connection else None
        if definition is None:
            return False
        await self._pins.approve(server, definition, actor=actor)
        self._catalog_dirty = True
        return True

    def _on_resource_updated(self, server: str, uri: str) -> None:
        self.events.publish(StationEvent("resource", server, {"uri": uri}))

    async def subscribe_resource(self, uri: str) -> None:
        """Be told (as `resource` events) when `uri` changes; routed to the server that owns it.

        Raises:
            ToolNotFound, ServerUnavailable, CallTimeout, RemoteError.
        """
        self._require_running()
        owner = self.catalog.resource_owner(uri)
        if owner is None:
            raise ToolNotFound(uri, kind="resource or template matching")
        await self.connection(owner).subscribe_resource(uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        self._require_running()
        owner = self.catalog.resource_owner(uri)
        if owner is not None and owner in self._connections:
            await self._connections[owner].unsubscribe_resource(uri)

    def _on_stderr(self, server: str, line: str) -> None:
        if self.events.has_subscribers:
            self.events.publish(StationEvent("log", server, {"level": "stderr", "message": line}))

    async def _watch_catalog(self) -> None:
        """Publish `catalog` events (which kinds changed) shortly after servers change."""
        with self._watcher_scope:
            await self._publish_catalog_changes()

    async def _publish_catalog_changes(self) -> None:
        before = self.catalog
        while True:
            await self._catalog_wake.wait()
            self._catalog_wake = anyio.Event()
            await anyio.sleep(CATALOG_EVENT_DELAY_S)
            await self._verify_pins()
            after = self.catalog
            changed = _changed_kinds(before, after)
            if changed:
                counts = {"tools": len(after.tools), "prompts": len(after.prompts), "resources": len(after.resources)}
                self.events.publish(StationEvent("catalog", None, {"changed": changed, **counts}))
            before = after
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
        self._call_path = self._build_call_path()
        self._refresh_specs()
        for name, connection in self._connections.items():
            if name not in removed and name not in changed:
                connection.settings = config.station
        shadowed = [name for name in added if name in self._dynamic]
        for name in shadowed:
            entry = self._dynamic[name]
            self._dynamic[name] = DynamicEntry(entry.record, f"shadowed by the static server {name!r}", "SHADOWED")
        stopping = [
            self._connections.pop(name) for name in (*removed, *changed, *shadowed) if name in self._connections
        ]
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
        await self._verify_pins()
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
        host_tools = management_tools() if settings.management_tools and self.store is not None else ()
        hidden = self._pins.hidden_reason if self._pins is not None else None
        catalog = Catalog.build(
            listings,
            naming=settings.naming,
            reserved=settings.reserved_names,
            clean=clean,
            host_tools=host_tools,
            hidden=hidden,
        )
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
        servers = [_server_status(spec, self._connections.get(spec.name)) for spec in self.config.servers]
        for name, entry in self._dynamic.items():
            connection = self._connections.get(name) if entry.held_state is None else None
            status = _server_status(entry.record.spec, connection, origin="dynamic")
            if connection is None and entry.held_state is not None:
                status = dataclasses.replace(status, state=entry.held_state, error=entry.held)
            servers.append(status)
        return StationStatus(servers=tuple(servers), conflicts=tuple(c.to_dict() for c in self.catalog.conflicts))

    # -- servers managed at run time ------------------------------------------------------------------

    async def add_server(self, spec: ServerSpec | dict[str, Any], *, actor: str = "library") -> ServerChange:
        """Add a server at run time: admitted by policy, persisted first, then connected.

        A command the classifier wants confirmed is saved as pending until `approve_server`. A
        server that fails to connect stays saved and is tried again at the next start.

        Raises:
            UsageError: no store, or `spec` is not a valid server entry.
        """
        store = self._require_store()
        spec = parse_spec(spec)
        name = spec.name
        if name in {s.name for s in self.config.servers}:
            return self._refused(
                "add", name, f"a static server is named {name!r}; static config wins, pick another name"
            )
        if name in self._dynamic:
            return self._refused("add", name, f"a dynamic server named {name!r} exists; remove it first")
        admission = await admit(spec, self.config.policy, guard=self._url_guard)
        if admission.decision == "deny":
            return self._refused("add", name, admission.reason)
        pending = admission.decision == "confirm"
        record = await store.add_dynamic_server(
            spec,
            actor=actor,
            status="pending_approval" if pending else "active",
            note=admission.reason if pending else None,
        )
        if pending:
            self._dynamic[name] = DynamicEntry(record, f"waiting for approval: {admission.reason}", "PENDING")
            self._refresh_specs()
            return self._announce(ServerChange(
                True, "add", name,
                f"saved {name!r} as pending, not connected: waiting for a person: "
                f"`mcpstation servers approve {name}` ({admission.reason})",
                "PENDING",
            ))  # fmt: skip
        self._dynamic[name] = DynamicEntry(record)
        self._refresh_specs()
        return await self._connect_dynamic("add", spec)

    async def remove_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """Remove a dynamic server: deleted from the store, disconnected, its tools gone."""
        store = self._require_store()
        if refusal := self._static_refusal("remove", name):
            return refusal
        if name not in self._dynamic:
            return self._refused("remove", name, f"no dynamic server named {name!r}")
        await store.remove_dynamic_server(name, actor=actor)
        del self._dynamic[name]
        await self._stop_connection(name)
        self._refresh_specs()
        return self._announce(ServerChange(True, "remove", name, f"removed {name!r}", "REMOVED"))

    async def enable_server(self, name: str, *, actor: str = "library") -> ServerChange:
        return await self._set_enabled(name, True, actor)

    async def disable_server(self, name: str, *, actor: str = "library") -> ServerChange:
        return await self._set_enabled(name, False, actor)

    async def approve_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """An operator approves a pending server; it connects now."""
        store = self._require_store()
        entry = self._dynamic.get(name)
        if entry is None or entry.record.status == "active":
            return self._refused("approve", name, f"no server named {name!r} is waiting for approval")
        record = await store.update_dynamic_server(name, actor=actor, status="active")
        self._dynamic[name] = DynamicEntry(record, None, None if record.enabled else "DISABLED")
        if not record.enabled:
            return self._announce(ServerChange(True, "approve", name, f"approved {name!r}; it is disabled", "DISABLED"))
        full = await store.get_dynamic_server(name, reveal_secrets=True)
        assert full is not None
        return await self._connect_dynamic("approve", full.spec)

    async def reload_server(self, name: str, *, actor: str = "library") -> ServerChange:
        """Reconnect one server (static or dynamic) and re-list what it offers."""
        if name not in self._connections:
            return self._refused("reload", name, f"server {name!r} is not running")
        if self.store is not None:
            await self.store.record_action("reload", actor=actor, server=name)
        await self.reconnect(name)
        return self._change_for("reload", self._connections[name])

    def list_servers(self) -> list[ServerStatus]:
        """Every server, static and dynamic, with origin, state and counts (same as `status()`)."""
        return list(self.status().servers)

    async def _set_enabled(self, name: str, enabled: bool, actor: str) -> ServerChange:
        store = self._require_store()
        action: ChangeAction = "enable" if enabled else "disable"
        if refusal := self._static_refusal(action, name):
            return refusal
        entry = self._dynamic.get(name)
        if entry is None:
            return self._refused(action, name, f"no dynamic server named {name!r}")
        record = await store.update_dynamic_server(name, actor=actor, enabled=enabled)
        if not enabled:
            self._dynamic[name] = DynamicEntry(record, None, "DISABLED")
            await self._stop_connection(name)
            return self._announce(ServerChange(True, action, name, f"disabled {name!r}", "DISABLED"))
        if record.status != "active":
            self._dynamic[name] = DynamicEntry(record, entry.held, "PENDING")
            return self._announce(
                ServerChange(True, action, name, f"enabled {name!r}; it still needs approval", "PENDING")
            )
        self._dynamic[name] = DynamicEntry(record)
        full = await store.get_dynamic_server(name, reveal_secrets=True)
        assert full is not None
        return await self._connect_dynamic(action, full.spec)

    async def _connect_dynamic(self, action: ChangeAction, spec: ServerSpec) -> ServerChange:
        if spec.name in self._connections:
            await self._stop_connection(spec.name)
        connection = self._launch(spec)
        with anyio.move_on_after(connection.startup_budget_s + 5):
            await connection.settled.wait()
        await self._verify_pins()
        return self._change_for(action, connection)

    def _change_for(self, action: ChangeAction, connection: ServerConnection) -> ServerChange:
        name = connection.name
        if connection.is_ready:
            tools = sum(1 for t in self.catalog.tools.values() if t.server == name)
            return self._announce(
                ServerChange(True, action, name, f"connected {name!r}: {tools} tools", "READY", tools)
            )
        reason = connection.error or f"still {connection.state}"
        message = f"saved {name!r}, but it did not connect: {reason}; it is tried again at the next start"
        if action == "reload":
            message = f"{name!r} did not come back: {reason}"
        return self._announce(ServerChange(True, action, name, message, str(connection.state)))

    async def _stop_connection(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        if connection is None:
            return
        connection.stop()
        with anyio.move_on_after(STOP_TIMEOUT_S):
            await connection.wait_stopped()
        self._catalog_dirty = True

    def _static_refusal(self, action: ChangeAction, name: str) -> ServerChange | None:
        if name in {s.name for s in self.config.servers}:
            return self._refused(action, name, f"{name!r} is a static server; change it in the config file")
        return None

    def _refused(self, action: ChangeAction, name: str, reason: str) -> ServerChange:
        logger.warning("%s of server %r refused: %s", action, name, reason)
        return self._announce(ServerChange(False, action, name, f"refused: {reason}"))

    def _announce(self, change: ServerChange) -> ServerChange:
        self.events.publish(StationEvent("server", change.server, change.to_dict()))
        return change

    def _require_store(self) -> Store:
        self._require_running()
        if self.store is None:
            raise UsageError("servers can be managed at run time only with a store: Station(config, store=...)")
        return self.store

    # -- audit ------------------------------------------------------------------------------------

    def _start_audit_writer(self) -> None:
        assert self._task_group is not None and self.store is not None
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](AUDIT_QUEUE_SIZE)
        self._audit_send = send
        self._task_group.start_soon(self._write_audit, receive, self.store, name="mcpstation audit writer")

    async def _write_audit(self, receive: MemoryObjectReceiveStream[dict[str, Any]], store: Store) -> None:
        """Write audit records off the call path; a failed write is logged, never fatal."""
        async with receive:
            async for record in receive:
                try:
                    await store.record_call(**record)
                except Exception:  # boundary: auditing must not take the station down
                    logger.exception("could not write an audit record for %s/%s", record["server"], record["tool"])

    def _audited(self, handler: CallHandler) -> CallHandler:
        async def audited(request: CallRequest) -> ToolResult:
            result = await handler(request)
            send = self._audit_send
            if send is not None:
                record = {
                    "server": request.entry.server,
                    "tool": request.entry.tool,
                    "outcome": _outcome(result),
                    "duration_s": result.duration_s,
                    "caller": request.caller.identity,
                    "arguments": request.arguments,
                    "error": result.error,
                }
                try:
                    send.send_nowait(record)
                except anyio.WouldBlock:
                    logger.warning("audit queue full; a call to %s was not audited", request.name)
                except anyio.ClosedResourceError:
                    pass
            return result

        return audited

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
        caller = caller or Caller()
        if caller.role != "admin" and not self.is_visible(entry, caller):
            return ToolResult.failure(name, str(ToolNotFound(name)))  # hidden tools do not exist for them
        return await self._call_path(CallRequest(entry, arguments or {}, caller, timeout_s, progress))

    def add_call_layer(self, layer: CallLayer) -> None:
        """Wrap every later tool call in `layer` (metrics, tracing), inside visibility and audit."""
        self._extra_layers.append(layer)
        self._call_path = self._build_call_path()

    def _build_call_path(self) -> CallHandler:
        """The layers every tool call passes, outermost first; a layer with nothing to do is left out,
        so a call costs only what this station is configured to do."""
        layers: list[CallLayer] = []
        if self._audit_send is not None:
            layers.append(self._audited)
        layers.extend(self._extra_layers)
        if self._fetch_servers:
            layers.append(self._guard_urls)
        return compose(self._send_call, layers)

    async def _send_call(self, request: CallRequest) -> ToolResult:
        entry = request.entry
        if entry.server == MANAGEMENT_SERVER:
            return await run_management_tool(self, request)
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
        result = ToolResult.from_sdk(
            raw, name=entry.name, server=entry.server, tool=entry.tool, duration_s=time.perf_counter() - started
        )
        return self._bounded(result)

    def is_visible(self, entry: CatalogTool, caller: Caller) -> bool:
        """Whether `caller`'s role reaches the tool's minimum role (per tool, else per server)."""
        if entry.server == MANAGEMENT_SERVER:
            return ROLE_RANK.get(caller.role, 0) >= ROLE_RANK["admin"]
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

    def _bounded(self, result: ToolResult) -> ToolResult:
        """Fail results over the hard cap; cut those over `max_result_bytes`, head and tail kept."""
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
        connection = self._connections.get(result.server or "")
        spec_cap = connection.spec.max_result_bytes if connection is not None else None
        return result.capped(spec_cap or settings.max_result_bytes, size=size)

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


def _server_status(spec: ServerSpec, connection: ServerConnection | None, *, origin: str = "static") -> ServerStatus:
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
            origin=origin,
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
        origin=origin,
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
