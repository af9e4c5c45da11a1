"""Roots: the filesystem locations the host offers to servers that ask (`roots/list`).

Modern (2026-07-28) servers ask through an input-required round every time they need roots, so
they always see the current list. Handshake-era servers cache what they got and wait for
`notifications/roots/list_changed`, which `notify_roots_changed` sends to every live session.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Mapping

import anyio
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcpstation.config.models import RootSpec

logger = logging.getLogger(__name__)

NOTIFY_TIMEOUT_S = 5.0  # bound on telling one server its roots changed; a stuck pipe must not stall the rest


class Roots:
    """The current roots, answering `roots/list` from whichever server asks.

    Raises:
        ValueError: (constructor and `replace`) a root's URI is not a `file://` URI.
    """

    def __init__(self, roots: Iterable[RootSpec] = ()) -> None:
        self._roots: tuple[RootSpec, ...] = ()
        self._answer = types.ListRootsResult(roots=[])
        self.replace(roots)

    @property
    def configured(self) -> tuple[RootSpec, ...]:
        """Every root as given, disabled ones included."""
        return self._roots

    @property
    def offered(self) -> tuple[RootSpec, ...]:
        """The roots servers are told about: the enabled ones."""
        return tuple(root for root in self._roots if root.enabled)

    def replace(self, roots: Iterable[RootSpec]) -> None:
        """Swap in a new list; servers asking from now on see it."""
        new = tuple(roots)
        answer = types.ListRootsResult(roots=[_to_sdk(root) for root in new if root.enabled])
        self._roots, self._answer = new, answer

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        """The SDK `list_roots_callback`: both eras call it, legacy as a request, modern as input-required."""
        return self._answer


def _to_sdk(root: RootSpec) -> types.Root:
    if not root.uri.startswith("file://"):
        raise ValueError(f"root {root.uri!r} is not a file:// URI; MCP roots must be file:// URIs")
    try:
        return types.Root(uri=root.uri, name=root.name)  # type: ignore[arg-type]  # pydantic parses the str
    except ValidationError as exc:
        raise ValueError(f"root {root.uri!r} is not a valid file:// URI: {exc.errors()[0]['msg']}") from exc


async def notify_roots_changed(clients: Mapping[str, Client]) -> tuple[str, ...]:
    """Send `notifications/roots/list_changed` to every handshake-era session; returns who was told.

    Modern sessions are skipped: they ask each time, and the 2026 wire has no client notifications.
    A server that cannot be told is logged and skipped; the others are still told.
    """
    told: list[str] = []

    async def tell(name: str, client: Client) -> None:
        try:
            with anyio.fail_after(NOTIFY_TIMEOUT_S):
                await _send_roots_list_changed(client)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError, RuntimeError) as exc:
            logger.warning("server %r: could not announce changed roots: %s", name, exc or type(exc).__name__)
            return
        told.append(name)

    async with anyio.create_task_group() as group:
        for name, client in clients.items():
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue
            group.start_soon(tell, name, client)
    return tuple(sorted(told))


async def _send_roots_list_changed(client: Client) -> None:
    # The SDK deprecates roots as of 2026-07-28 and warns when the method is *called* (before the
    # coroutine runs), so the filter covers only that call and never spans an await.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        pending = client.session.send_roots_list_changed()
    await pending
