"""`ServerRoster`: every server the station knows, with its origin, standing and reason; one source of truth.

The station's own servers come first, then the static ones in config order, then those added
at run time in the order they were added: this is also the catalog's order, so the first
registration of a name wins predictably. A server the station knows but does not run (disabled,
shadowed by a static one, waiting for approval, refused by policy) stays in the roster with the
reason, so `status` and an LLM asking for its tools learn why. A stored server shadowed by a
static one of the same name rides on that static entry (`shadowed`): one name, one owner.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, replace

from mcpstation.config.models import AnyServerSpec
from mcpstation.store import DynamicServer


class Origin(enum.StrEnum):
    """Where a server comes from."""

    HOST = "host"  # the station's own (its management tools)
    STATIC = "static"  # the config file
    DYNAMIC = "dynamic"  # added at run time, kept in the store


class Standing(enum.StrEnum):
    """Whether the station runs a known server, and if not, why not."""

    ACTIVE = "ACTIVE"  # it has a connection; its live state is the connection's
    DISABLED = "DISABLED"
    SHADOWED = "SHADOWED"  # a static server of the same name wins
    PENDING = "PENDING"  # waiting for an operator's approval
    REFUSED = "REFUSED"  # policy no longer allows it, or (a client's entry) it cannot run as written


_ORIGIN_ORDER = {Origin.HOST: 0, Origin.STATIC: 1, Origin.DYNAMIC: 2}


@dataclass(frozen=True, slots=True)
class RosterEntry:
    """One known server; `reason` says why it is not ACTIVE (None when it is)."""

    spec: AnyServerSpec
    origin: Origin
    standing: Standing = Standing.ACTIVE
    reason: str | None = None
    record: DynamicServer | None = None  # the stored row, for servers added at run time
    shadowed: RosterEntry | None = None  # a stored server of the same name that this static one hides

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def active(self) -> bool:
        return self.standing is Standing.ACTIVE

    def held(self, standing: Standing, reason: str | None) -> RosterEntry:
        return replace(self, standing=standing, reason=reason)


class ServerRoster:
    """The known servers by name, kept in catalog order."""

    def __init__(self) -> None:
        self._entries: dict[str, RosterEntry] = {}
        self._added: dict[str, int] = {}
        self._counter = 1 << 20  # run-time additions sort after any config position

    def __iter__(self) -> Iterator[RosterEntry]:
        return iter(self.entries())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[RosterEntry]:
        """Every entry, in catalog order."""
        return sorted(self._entries.values(), key=lambda e: (_ORIGIN_ORDER[e.origin], self._added[e.name]))

    def get(self, name: str) -> RosterEntry | None:
        return self._entries.get(name)

    def spec(self, name: str) -> AnyServerSpec | None:
        entry = self._entries.get(name)
        return entry.spec if entry is not None else None

    def active(self) -> list[RosterEntry]:
        return [entry for entry in self.entries() if entry.active]

    def of(self, origin: Origin) -> list[RosterEntry]:
        return [entry for entry in self.entries() if entry.origin is origin]

    def rank(self, name: str) -> int:
        """The server's place in catalog order (unknown names last)."""
        entry = self._entries.get(name)
        if entry is None:
            return 1 << 30
        return _ORIGIN_ORDER[entry.origin] << 24 | self._added[name]

    def put(self, entry: RosterEntry, *, position: int | None = None) -> None:
        """Add or replace an entry; a replaced one keeps its place unless `position` (its index in
        the config file, for static servers) says otherwise."""
        if position is not None:
            self._added[entry.name] = position
        elif entry.name not in self._added:
            self._counter += 1
            self._added[entry.name] = self._counter
        self._entries[entry.name] = entry

    def remove(self, name: str) -> RosterEntry | None:
        self._added.pop(name, None)
        return self._entries.pop(name, None)
