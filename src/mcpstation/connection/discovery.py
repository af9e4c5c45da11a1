"""Listing what a server offers: every kind, every page, with a bound on pages and a repeated-cursor guard."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import mcp_types as types
import pydantic
from mcp.client import Client
from mcp.shared.exceptions import MCPError

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("tools", "prompts", "resources", "templates")

T = TypeVar("T")


class _Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


async def walk_pages(
    fetch: Callable[[str | None], Awaitable[Any]],
    items_of: Callable[[Any], Sequence[T]],
    *,
    server: str,
    kind: str,
    max_pages: int,
) -> tuple[list[T], str | None]:
    """Fetch pages until `nextCursor` runs out; return the items and a warning if cut short.

    Stops after `max_pages` pages, or when a cursor comes back that was already followed
    (a server paging in a circle); what was gathered so far is kept.
    """
    items: list[T] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(max_pages):
        page = await fetch(cursor)
        items.extend(items_of(page))
        cursor = page.next_cursor
        if cursor is None:
            return items, None
        if cursor in seen:
            warning = f"server {server!r} repeated {kind} cursor {cursor!r}; kept the {len(items)} {kind} listed so far"
            logger.warning("%s", warning)
            return items, warning
        seen.add(cursor)
    warning = f"server {server!r} listed {kind} over more than {max_pages} pages; kept the first {len(items)}"
    logger.warning("%s", warning)
    return items, warning


@dataclass(frozen=True, slots=True)
class Discovered:
    """The lists one discovery found, by kind, and what went wrong on the way (non-fatal).

    `ttl_ms`: the shortest cache hint (`ttlMs`) any page carried, None when none did; a hint of
    0 counts as none (it is what the SDK sends for a handler that set no hint).
    """

    found: dict[str, tuple[Any, ...]]
    warnings: tuple[str, ...]
    ttl_ms: int | None = None


async def discover(client: Client, *, server: str, kinds: set[str], max_pages: int) -> Discovered:
    """List `kinds` of what `server` offers, every page.

    A kind the server does not offer is empty. A server whose prompts or resources are broken
    still serves its tools: those failures become warnings.

    Raises:
        MCPError, pydantic.ValidationError: listing tools failed (the server is of no use then).
    """
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
    fetchers: dict[str, tuple[Callable[[str | None], Awaitable[Any]], Callable[[Any], Sequence[Any]]]] = {
        "tools": (lambda c: client.list_tools(cursor=c), lambda p: p.tools),
        "prompts": (lambda c: client.list_prompts(cursor=c), lambda p: p.prompts),
        "resources": (lambda c: client.list_resources(cursor=c), lambda p: p.resources),
        "templates": (lambda c: client.list_resource_templates(cursor=c), lambda p: p.resource_templates),
    }
    found: dict[str, tuple[Any, ...]] = {}
    warnings: list[str] = []
    hints: list[int] = []

    def hinted(fetch: Callable[[str | None], Awaitable[Any]]) -> Callable[[str | None], Awaitable[Any]]:
        async def fetch_page(cursor: str | None) -> Any:
            page = await fetch(cursor)
            if "ttl_ms" in getattr(page, "model_fields_set", ()) and page.ttl_ms > 0:  # given, not a default
                hints.append(page.ttl_ms)
            return page

        return fetch_page

    for kind in KINDS:
        if kind not in kinds:
            continue
        if not offered[kind]:
            found[kind] = ()
            continue
        fetch, items = fetchers[kind]
        warning: str | None
        try:
            got, warning = await walk_pages(hinted(fetch), items, server=server, kind=kind, max_pages=max_pages)
        except MCPError as exc:
            if exc.code == types.METHOD_NOT_FOUND:
                got, warning = [], None
            elif kind == "tools":
                raise
            else:
                got, warning = [], f"server {server!r}: listing {kind} failed: {exc.error.message}"
        except pydantic.ValidationError as exc:
            if kind == "tools":
                raise
            got = []
            warning = f"server {server!r}: listing {kind} failed: invalid result ({exc.error_count()} errors)"
        found[kind] = tuple(got)
        if warning:
            warnings.append(warning)
    return Discovered(found, tuple(warnings), min(hints) if hints else None)
