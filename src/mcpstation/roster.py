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
from collections.abc import Iterator, Mapping, Sequence
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
    REFUSED = "REFUSED"  # policy no longer allows it, it cannot run as written, or needs what the station lacks


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

    def put_static(self, specs: Sequence[AnyServerSpec], hidden: Mapping[str, RosterEntry] | None = None) -> None:
        """The config's servers as static entries, in config order; `hidden` are stored servers they shadow."""
        for position, spec in enumerate(specs):
            previous = self.get(spec.name)
            shadowed = (hidden or {}).get(spec.name) or (previous.shadowed if previous is not None else None)
            standing = Standing.ACTIVE if spec.enabled else Standing.DISABLED
            # a client's entry that cannot run as written, or a feature the station lacks: listed with why
            reason = spec.unusable or spec.unsupported
            if reason is not None:
                standing = Standing.REFUSED
            entry = RosterEntry(spec, Origin.STATIC, standing, reason=reason, shadowed=shadowed)
            self.put(entry, position=position)

    def apply_static(self, specs: Sequence[AnyServerSpec]) -> list[str]:
        """Replace the static entries by a reloaded config's; returns the dynamic servers they now shadow.

        A static server that went away gives its name back to the stored server it hid (held until the
        next start); a dynamic server whose name a static one now takes is held as SHADOWED under it.
        """
        names = {spec.name for spec in specs}
        for entry in self.of(Origin.STATIC):
            if entry.name not in names:
                self.remove(entry.name)
                if entry.shadowed is not None:  # the stored server it hid comes back at the next start
                    reason = "was shadowed by a static server until the last reload; it connects at the next start"
                    self.put(entry.shadowed.held(Standing.SHADOWED, reason))
        hidden: dict[str, RosterEntry] = {}
        for dynamic in self.of(Origin.DYNAMIC):
            if dynamic.name in names:
                self.remove(dynamic.name)
                reason = f"shadowed by the static server {dynamic.name!r} (static config wins)"
                hidden[dynamic.name] = dynamic.held(Standing.SHADOWED, reason)
        self.put_static(specs, hidden)
        return list(hidden)
