"""Walking a server's paginated lists to the end, with a bound on pages and a repeated-cursor guard."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

logger = logging.getLogger(__name__)

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
