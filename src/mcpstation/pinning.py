"""Tool pinning, trust on first use: a tool whose definition changes is warned about or blocked.

The fingerprint of each tool (name, description, input schema) is kept in the store the first
time it is seen. When a server later offers a different definition, the station logs a warning
(`warn`) or keeps the tool out of the catalog (`block`) until a person approves it again. In
`block` mode a tool is published only once its definition has been checked.

A listing is checked as one batch, and every listing of one check together: one query reads the
pins of every server with a definition new to us, one transaction per server writes what is new
or changed. Checks of one server never overlap (a lock per server), and the store's
writes are idempotent, so stations sharing a database agree too. The store failing is never
fatal here: the tools it could not check are reported (`problems`) and checked again at the
next `verify`; meanwhile a tool seen for the first time is trusted as first use always is, and
one whose pin could not even be read stays in `warn` state (published with a warning, hidden
in `block` mode, where nothing unchecked is published).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

import anyio
import mcp_types as types

from mcpstation.catalog import ServerListing
from mcpstation.errors import StoreError
from mcpstation.policy import tool_fingerprint
from mcpstation.store import PinCheck, ToolPin

if TYPE_CHECKING:
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
        # Checked against the store as far as it answered, with why it is not settled: first use
        # whose pin could not be written (published) or a pin that could not be read (unchecked).
        self._unsaved: dict[Key, tuple[str, str]] = {}
        self._unchecked: dict[Key, tuple[str, str]] = {}
        self._fingerprints: dict[Key, tuple[types.Tool, str]] = {}
        self._locks: dict[str, anyio.Lock] = {}

    def fingerprint(self, server: str, tool: types.Tool) -> str:
        """The tool's fingerprint, computed once per definition object."""
        key = (server, tool.name)
        cached = self._fingerprints.get(key)
        if cached is not None and cached[0] is tool:
            return cached[1]
        value = tool_fingerprint(tool)
        self._fingerprints[key] = (tool, value)
        return value

    def hidden_reason(self, server: str, tool: types.Tool) -> str | None:
        """Why `block` mode keeps this definition out of the catalog, or None to publish it."""
        if self.mode != "block":
            return None
        key = (server, tool.name)
        fingerprint = self.fingerprint(server, tool)
        if self._verified.get(key) == fingerprint:
            return None
        unsaved = self._unsaved.get(key)
        if unsaved is not None and unsaved[0] == fingerprint:
            return None  # first use: trusted, its pin is written at the next check
        if key in self._drifted:
            return "its definition changed since it was approved; approve it with `mcpstation tools approve`"
        unchecked = self._unchecked.get(key)
        if unchecked is not None and unchecked[0] == fingerprint:
            return f"its pin could not be checked ({unchecked[1]}); it is checked again when the catalog next changes"
        return "its definition has not been checked against its pin yet"

    def drifted(self, server: str) -> list[str]:
        """The tools of `server` whose definition differs from the one approved."""
        return sorted(tool for (owner, tool) in self._drifted if owner == server)

    def problems(self, server: str | None = None) -> dict[Key, str]:
        """Tools whose pin the store could not read or write at the last check, with the reason;
        they are checked again at the next `verify`."""
        found = {key: f"pin not saved: {reason}" for key, (_, reason) in self._unsaved.items()}
        found.update({key: f"pin not checked: {reason}" for key, (_, reason) in self._unchecked.items()})
        return {key: reason for key, reason in sorted(found.items()) if server is None or key[0] == server}

    def warnings(self, server: str) -> tuple[str, ...]:
        """One line per kind of store trouble with `server`'s pins, for its status (empty when none)."""
        lines: list[str] = []
        for label, entries in (("not saved", self._unsaved), ("not checked", self._unchecked)):
            reasons = sorted({reason for (owner, _), (_, reason) in entries.items() if owner == server})
            count = sum(1 for owner, _ in entries if owner == server)
            if count:
                lines.append(f"pins of {count} tool(s) {label}, checked again at the next change: {'; '.join(reasons)}")
        return tuple(lines)

    async def verify(self, listings: Iterable[ServerListing]) -> None:
        """Check every tool whose definition is new to us against its pin (first use pins it).

        One store read for them all and at most one store write per listing. Never raises
        `StoreError`: what the store could not settle is logged, listed by `problems` and retried
        at the next call.
        """
        by_server = {listing.server: listing for listing in listings}
        async with contextlib.AsyncExitStack() as held:
            for server in sorted(by_server):  # one order for every check: two checks never deadlock
                await held.enter_async_context(self._lock(server))
            pending = {server: found for server, listing in by_server.items() if (found := self._pending(listing))}
            if not pending:
                return
            try:
                stored = await self.store.get_pins_of(sorted(pending))
            except StoreError as exc:
                for server, tools in pending.items():
                    self._not_checked(server, tools, exc)
                return
            for server, tools in pending.items():
                await self._write_and_settle(server, tools, stored.get(server, {}))

    async def approve(self, server: str, tool: types.Tool, *, actor: str) -> None:
        """A person approves the tool's current definition.

        Raises:
            StoreError: the approval could not be written; nothing changed (the person asked: they hear of it).
        """
        fingerprint = self.fingerprint(server, tool)
        async with self._lock(server):
            await self.store.approve_pin(server, tool.name, actor=actor, fingerprint=fingerprint)
            key = (server, tool.name)
            self._verified[key] = fingerprint
            self._drifted.pop(key, None)
            self._unsaved.pop(key, None)
            self._unchecked.pop(key, None)

    def reconsider(self, server: str, tool: str) -> None:
        """Forget what was settled about the tool, so the next `verify` reads its pin again (another
        station approved it)."""
        key = (server, tool)
        for known in (self._verified, self._drifted, self._unsaved, self._unchecked):
            known.pop(key, None)

    def _lock(self, server: str) -> anyio.Lock:
        lock = self._locks.get(server)
        if lock is None:
            lock = self._locks[server] = anyio.Lock()
        return lock

    def _pending(self, listing: ServerListing) -> dict[str, str]:
        """The listing's tools whose definition this process has not settled yet, with their fingerprints."""
        server = listing.server
        pending: dict[str, str] = {}
        for tool in listing.tools:
            key = (server, tool.name)
            fingerprint = self.fingerprint(server, tool)
            if self._verified.get(key) != fingerprint and self._drifted.get(key) != fingerprint:
                pending[tool.name] = fingerprint
        return pending

    async def _write_and_settle(
        self, server: str, pending: dict[str, str], stored: Mapping[str, PinCheck | ToolPin]
    ) -> None:
        to_write = {
            name: fingerprint
            for name, fingerprint in pending.items()
            if name not in stored or stored[name].fingerprint != fingerprint
        }
        if to_write:
            try:
                stored = await self.store.set_pins(server, to_write, approve_new=True)
            except StoreError as exc:
                self._not_saved(server, pending, stored, exc)
                return
        for name, fingerprint in pending.items():
            self._settle((server, name), fingerprint, stored.get(name))

    def _settle(self, key: Key, fingerprint: str, pin: PinCheck | ToolPin | None) -> None:
        self._unsaved.pop(key, None)
        self._unchecked.pop(key, None)
        if pin is not None and pin.fingerprint == fingerprint and pin.is_approved:
            self._verified[key] = fingerprint
            self._drifted.pop(key, None)
            return
        self._verified.pop(key, None)
        self._drifted[key] = fingerprint
        logger.warning(
            "tool %r of server %r changed its definition since it was pinned%s",
            key[1], key[0], "; blocked until approved" if self.mode == "block" else "",
        )  # fmt: skip

    def _not_checked(self, server: str, pending: dict[str, str], exc: StoreError) -> None:
        for tool, fingerprint in pending.items():
            self._unchecked[(server, tool)] = (fingerprint, str(exc))
        logger.warning(
            "could not read the pins of server %r (%d tools unchecked; %s until the store answers): %s",
            server, len(pending), "hidden" if self.mode == "block" else "published with this warning", exc,
        )  # fmt: skip

    def _not_saved(
        self, server: str, pending: dict[str, str], stored: Mapping[str, PinCheck | ToolPin], exc: StoreError
    ) -> None:
        unsaved = 0
        for tool, fingerprint in pending.items():
            key = (server, tool)
            pin = stored.get(tool)
            if pin is None:
                self._unsaved[key] = (fingerprint, str(exc))  # first use: trusted, saved at the next check
                unsaved += 1
            else:
                self._settle(key, fingerprint, pin)  # known pin: a change is a change, saved or not
        logger.warning(
            "could not write %d new pin(s) of server %r (published as first use; written at the next check): %s",
            unsaved, server, exc,
        )  # fmt: skip
