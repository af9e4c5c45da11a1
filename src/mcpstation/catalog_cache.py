"""`CatalogCache`: each server's last listing, kept in the store, so a lazy server's catalog is
known before the server runs.

A row belongs to a server's name and the hash of its entry (`spec_key`): a changed command, URL,
environment or header makes the row another server's, ignored until the server lists again.
What only changes how the station treats a server (its start mode, roles, filters, names) is not
part of the key. The listing's cache hint (`ttlMs`, when the server gave one) makes a row stale
once it has run out: the server is then started at boot to list again, its cached listing
serving meanwhile. A hint of 0 counts as none: it is what the SDK sends for a handler that set
no hint, and a lazy server's listing is confirmed by its first start anyway.

Every listing a session brings is written once (by the live catalog's watcher, and at shutdown),
in one transaction for its server, and only when it differs from the row (or carries a hint
whose clock it restarts). The store failing is never fatal here: a listing it could not keep is
tried again at the next save.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
import pydantic
from pydantic import SecretStr

from mcpstation.config.models import AnyServerSpec, InProcessServerSpec
from mcpstation.connection import KnownListing, ServerConnection, ServerListing
from mcpstation.connection.snapshot import SessionInfo
from mcpstation.errors import StoreError
from mcpstation.store import CachedCatalog

if TYPE_CHECKING:
    from mcpstation.store import Store

logger = logging.getLogger(__name__)

# Entry fields that change how the station treats a server, not what the server lists.
KEY_EXCLUDED = frozenset(
    {
        "title", "enabled", "start", "idle_stop_s", "namespace", "include_tools", "exclude_tools", "naming",
        "min_role", "tool_roles", "always_visible", "url_guard", "startup_timeout_s", "call_timeout_s",
        "max_result_bytes",
    }
)  # fmt: skip
KINDS: tuple[tuple[str, type[pydantic.BaseModel]], ...] = (
    ("tools", types.Tool),
    ("prompts", types.Prompt),
    ("resources", types.Resource),
    ("templates", types.ResourceTemplate),
)


@functools.cache
def _listing_adapters() -> tuple[
    pydantic.TypeAdapter[tuple[types.Tool, ...]],
    pydantic.TypeAdapter[tuple[types.Prompt, ...]],
    pydantic.TypeAdapter[tuple[types.Resource, ...]],
    pydantic.TypeAdapter[tuple[types.ResourceTemplate, ...]],
]:
    """The validators of the four lists, built at first use (a station with no cache never builds them).

    One validation call per list, not one per item: a third less CPU for a 10,000-tool listing.
    """
    return (
        pydantic.TypeAdapter(tuple[types.Tool, ...]),
        pydantic.TypeAdapter(tuple[types.Prompt, ...]),
        pydantic.TypeAdapter(tuple[types.Resource, ...]),
        pydantic.TypeAdapter(tuple[types.ResourceTemplate, ...]),
    )


def spec_key(spec: AnyServerSpec) -> str:
    """The SHA-256 of what makes an entry's server the server it is (secrets included, hashed)."""
    fields = spec.model_dump(mode="python", exclude=set(KEY_EXCLUDED) | {"server"})
    if isinstance(spec, InProcessServerSpec):
        fields["object"] = f"{type(spec.server).__module__}.{type(spec.server).__qualname__}"
    encoded = json.dumps(_revealed(fields), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


def _revealed(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Mapping):
        return {str(key): _revealed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_revealed(item) for item in value]
    return value


def listing_json(listing: ServerListing) -> dict[str, list[dict[str, Any]]]:
    """The four lists as the server sent them (by alias, unset fields left out)."""
    return {
        kind: [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in getattr(listing, kind)]
        for kind, _ in KINDS
    }


def _dumped(listing: ServerListing) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """The listing as JSON, and the SHA-256 of that JSON."""
    listed = listing_json(listing)
    digest = hashlib.sha256(json.dumps(listed, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return listed, digest


class CatalogCache:
    """The rows of the store's catalog cache, read once at start, written as listings arrive."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._rows: dict[str, CachedCatalog] = {}
        self._saved: dict[str, ServerListing] = {}  # the listing object last written (or found equal), by server
        self._saving = anyio.Lock()

    async def load(self) -> int:
        """Read every row (one query); returns how many. A store that fails leaves the cache empty."""
        try:
            self._rows = await self.store.get_catalogs()
        except StoreError as exc:
            logger.warning("could not read the catalog cache; every server starts at boot: %s", exc)
            self._rows = {}
        return len(self._rows)

    def listed_at(self, server: str) -> datetime | None:
        """When the cached listing of `server` was taken, if the cache holds one."""
        row = self._rows.get(server)
        return row.listed_at if row is not None else None

    def recall(self, spec: AnyServerSpec) -> KnownListing | None:
        """What `spec`'s server listed last time, if it was listed under this same entry."""
        row = self._rows.get(spec.name)
        if row is None or row.spec_hash != spec_key(spec):
            return None
        listing = row.listing
        try:
            tools_of, prompts_of, resources_of, templates_of = _listing_adapters()
            tools = tools_of.validate_python(listing.get("tools", ()))
            prompts = prompts_of.validate_python(listing.get("prompts", ()))
            resources = resources_of.validate_python(listing.get("resources", ()))
            templates = templates_of.validate_python(listing.get("templates", ()))
        except pydantic.ValidationError as exc:
            logger.warning(
                "cached listing of server %r is unreadable (%d errors); it starts at boot", spec.name, exc.error_count()
            )
            return None
        session = row.session
        info = SessionInfo(
            protocol_version=session.get("protocol_version"),
            server_name=session.get("server_name"),
            server_version=session.get("server_version"),
            instructions=session.get("instructions"),
        )
        stale = bool(row.ttl_ms) and datetime.now(UTC) >= row.listed_at + timedelta(milliseconds=row.ttl_ms or 0)
        return KnownListing(
            tools=tools,
            prompts=prompts,
            resources=resources,
            templates=templates,
            info=info,
            stale=stale,
        )

    async def save(self, connections: Iterable[ServerConnection]) -> int:
        """Keep each listing a session brought that the cache does not hold yet; returns how many
        rows were written (one transaction each). Saves take turns: the one at shutdown waits for
        the watcher's, so no listing is taken for written while its write is still under way."""
        async with self._saving:
            return await self._save(list(connections))

    async def _save(self, connections: list[ServerConnection]) -> int:
        written = 0
        if self.store.is_closed:  # closed under a running station by its owner: nothing to keep them in
            return written
        for connection in connections:
            listing = connection.listing
            if not connection.live_listing or self._saved.get(connection.name) is listing:
                continue
            entry = await self._entry(connection)
            row = self._rows.get(connection.name)
            same = row is not None and (row.spec_hash, row.digest, row.ttl_ms) == (
                entry.spec_hash,
                entry.digest,
                entry.ttl_ms,
            )
            if not same or entry.ttl_ms:  # a hint's clock restarts with every listing
                try:
                    await self.store.set_catalog(entry)
                except StoreError as exc:
                    logger.warning("could not cache the listing of server %r: %s", connection.name, exc)
                    continue  # tried again at the next save
                self._rows[connection.name] = entry
                written += 1
            self._saved[connection.name] = listing
        return written

    async def _entry(self, connection: ServerConnection) -> CachedCatalog:
        # A listing of thousands of tools takes a while to dump: a worker thread does it, off the event loop.
        listed, digest = await anyio.to_thread.run_sync(_dumped, connection.listing)
        info = connection.info
        session = {
            "protocol_version": info.protocol_version,
            "server_name": info.server_name,
            "server_version": info.server_version,
            "instructions": info.instructions,
        }
        return CachedCatalog(
            server=connection.name,
            spec_hash=spec_key(connection.spec),
            digest=digest,
            listing=listed,
            session=session,
            ttl_ms=connection.ttl_ms,
            listed_at=datetime.now(UTC),
        )
