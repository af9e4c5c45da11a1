"""`LiveCatalog`: the merged catalog kept current as servers come, go and change their lists.

A change marks the catalog dirty; the next read rebuilds it once (a burst of changes costs one
merge), in roster order so the first registration of a name wins. A watcher task checks new
tool definitions against their pins and publishes one `catalog` event per burst, naming the
kinds that changed. It also knows, for a tool name the catalog lacks, which server it would
belong to, so a request for it can say that server is down rather than point at a neighbour.

Each catalog it builds is offered to its tool search index (`index`, a `LiveIndex`), which the
watcher keeps current in the background: a listing change re-indexes that server only. The
watcher also keeps each new listing in the catalog cache (`catalog_cache.py`), from which a lazy
server's listing comes while it is not running.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

import anyio

from mcpstation.catalog import Catalog, Embedder, LiveIndex, default_embedders
from mcpstation.catalog.naming import name_prefix, public_name
from mcpstation.catalog_cache import CatalogCache
from mcpstation.config.models import StationSettings
from mcpstation.connection import ServerConnection
from mcpstation.events import EventHub, StationEvent
from mcpstation.pinning import ToolPins
from mcpstation.policy import clean_text
from mcpstation.pool import ConnectionPool
from mcpstation.roster import ServerRoster

logger = logging.getLogger(__name__)

CATALOG_EVENT_DELAY_S = 0.05  # changes this close together make one catalog event


def changed_kinds(before: Catalog, after: Catalog) -> list[str]:
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


class LiveCatalog:
    """The current catalog snapshot of a roster's ready connections, rebuilt on change."""

    def __init__(
        self,
        roster: ServerRoster,
        pool: ConnectionPool,
        settings: Callable[[], StationSettings],
        *,
        events: EventHub,
        pins: ToolPins | None = None,
        cache: CatalogCache | None = None,
        owned: Callable[[], dict[str, str]] = dict,
        embedders: Callable[[], Sequence[Embedder]] | None = default_embedders,
    ) -> None:
        self.roster = roster
        self.pool = pool
        self.pins = pins
        self.cache = cache
        self.events = events
        self._settings = settings
        self._owned = owned
        self._catalog = Catalog()
        self._dirty = False
        self._wake = anyio.Event()
        self._reported_conflicts: set[tuple[str, str, str]] = set()
        self.index = LiveIndex(embedders=embedders)

    @property
    def snapshot(self) -> Catalog:
        """The current catalog; hold on to it for a consistent view across several lookups."""
        if self._dirty:
            self._rebuild()
        return self._catalog

    def mark_dirty(self, connection: ServerConnection | None = None) -> None:
        self._dirty = True
        self._wake.set()

    def _rebuild(self) -> None:
        """Merge the listing of every ready (or dormant lazy) server in roster order and swap the catalog atomically."""
        self._dirty = False
        ready = sorted(self.pool.offering(), key=lambda c: self.roster.rank(c.name))
        listings = [c.listing for c in ready if c.name in self.roster]
        settings = self._settings()
        catalog = Catalog.build(
            listings,
            naming=settings.naming,
            reserved=settings.reserved_names,
            owned=self._owned(),
            clean=functools.partial(clean_text, max_chars=settings.max_description_chars),
            hidden=self.pins.hidden_reason if self.pins is not None else None,
        )
        for conflict in catalog.conflicts:
            key = (conflict.kind, conflict.name, conflict.server)
            if key not in self._reported_conflicts:
                self._reported_conflicts.add(key)
                logger.warning("%s", conflict)
        self._catalog = catalog
        self.index.offer(catalog, {c.name: self._server_text(c, settings) for c in ready})

    def _server_text(self, connection: ServerConnection, settings: StationSettings) -> str:
        """A server's own words for search: its title, the name it gave itself, its instructions."""
        spec = self.roster.spec(connection.name)
        info = connection.info
        words = [spec.title if spec is not None else None, info.server_name, info.instructions]
        return " ".join(word for word in words if word)[: settings.max_description_chars]

    def owner_hint(self, name: str) -> str | None:
        """The server a tool name would belong to when the catalog lacks it: one that is not ready
        and listed it last time, else the one whose name prefix it carries."""
        settings = self._settings()
        for entry in self.roster.entries():
            spec = entry.spec
            naming = spec.naming or settings.naming
            connection = self.pool.get(entry.name)
            if connection is not None and not connection.offers_listing:
                for tool in connection.listing.tools:
                    if public_name(naming, server=entry.name, namespace=spec.namespace, name=tool.name) == name:
                        return entry.name
        best: tuple[int, str] | None = None
        for server, prefix in self.name_prefixes().items():
            if prefix and name.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), server)
        return best[1] if best is not None else None

    def name_prefixes(self) -> dict[str, str | None]:
        """What every public name of each known server's entries starts with (None: `bare` naming)."""
        settings = self._settings()
        return {
            entry.name: name_prefix(
                entry.spec.naming or settings.naming, server=entry.name, namespace=entry.spec.namespace
            )
            for entry in self.roster.entries()
        }

    async def verify_pins(self) -> None:
        """Check new tool definitions of ready servers against their pins; then publish what passes."""
        if self.pins is None:
            return
        await self.pins.verify([c.listing for c in self.pool.offering()])
        if self.pins.mode == "block":  # only `block` hides by pin: then rebuilt on the next read, no event of its own
            self._dirty = True

    async def save_listings(self) -> None:
        """Keep the listings sessions brought in the catalog cache (those it lacks; one transaction each)."""
        if self.cache is not None:
            await self.cache.save(self.pool.connections.values())

    async def watch(self) -> None:
        """Publish `catalog` events (which kinds changed) shortly after servers change, and keep the
        search index current. Runs forever."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.index.run, name="mcpstation tool search index")
            await self._publish_changes()

    async def _publish_changes(self) -> None:
        before = self.snapshot
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.sleep(CATALOG_EVENT_DELAY_S)
            await self.verify_pins()
            await self.save_listings()
            after = self.snapshot
            changed = changed_kinds(before, after)
            if changed:
                counts = {"tools": len(after.tools), "prompts": len(after.prompts), "resources": len(after.resources)}
                self.events.publish(StationEvent("catalog", None, {"changed": changed, **counts}))
            before = after
