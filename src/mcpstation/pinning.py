"""Tool pinning, trust on first use: a tool whose definition changes is warned about or blocked.

The fingerprint of each tool (name, description, input schema) is kept in the store the first
time it is seen. When a server later offers a different definition, the station logs a warning
(`warn`) or keeps the tool out of the catalog (`block`) until a person approves it again. In
`block` mode a tool is published only once its definition has been checked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal

import mcp_types as types

from mcpstation.catalog import ServerListing
from mcpstation.policy import tool_fingerprint
from mcpstation.store import Store

logger = logging.getLogger(__name__)

PinningMode = Literal["off", "warn", "block"]
Key = tuple[str, str]


class ToolPins:
    """What the station knows about each tool's pinned definition."""

    def __init__(self, store: Store, mode: PinningMode) -> None:
        self.store = store
        self.mode = mode
        self._verified: dict[Key, str] = {}
        self._drifted: dict[Key, str] = {}
        self._fingerprints: dict[Key, tuple[types.Tool, str]] = {}

    def fingerprint(self, server: str, tool: types.Tool) -> str:
        key = (server, tool.name)
        cached = self._fingerprints.get(key)
        if cached is not None and cached[0] is tool:
            return cached[1]
        value = tool_fingerprint(tool)
        self._fingerprints[key] = (tool, value)
        return value

    def hidden_reason(self, server: str, tool: types.Tool) -> str | None:
        """Why `block` mode keeps this definition out of the catalog, or None to publish it."""
        if self.mode != "block" or self._verified.get((server, tool.name)) == self.fingerprint(server, tool):
            return None
        if (server, tool.name) in self._drifted:
            return "its definition changed since it was approved; approve it with `mcpstation tools approve`"
        return "its definition has not been checked against its pin yet"

    def drifted(self, server: str) -> list[str]:
        return sorted(tool for (owner, tool) in self._drifted if owner == server)

    async def verify(self, listings: Iterable[ServerListing]) -> None:
        """Check every tool whose definition is new to us against its pin (first use pins it)."""
        for listing in listings:
            for tool in listing.tools:
                key = (listing.server, tool.name)
                fingerprint = self.fingerprint(listing.server, tool)
                if self._verified.get(key) == fingerprint or self._drifted.get(key) == fingerprint:
                    continue
                pin = await self.store.get_pin(*key)
                if pin is None:
                    await self.store.set_pin(*key, fingerprint, approved=True)
                    self._verified[key] = fingerprint
                elif pin.fingerprint == fingerprint and pin.is_approved:
                    self._verified[key] = fingerprint
                    self._drifted.pop(key, None)
                else:
                    if pin.fingerprint != fingerprint:
                        await self.store.set_pin(*key, fingerprint)
                    self._drifted[key] = fingerprint
                    logger.warning(
                        "tool %r of server %r changed its definition since it was pinned%s",
                        tool.name, listing.server, "; blocked until approved" if self.mode == "block" else "",
                    )  # fmt: skip

    async def approve(self, server: str, tool: types.Tool, *, actor: str) -> None:
        """A person approves the tool's current definition."""
        fingerprint = self.fingerprint(server, tool)
        await self.store.approve_pin(server, tool.name, actor=actor, fingerprint=fingerprint)
        self._verified[(server, tool.name)] = fingerprint
        self._drifted.pop((server, tool.name), None)
