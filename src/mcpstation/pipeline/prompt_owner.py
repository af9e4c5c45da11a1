"""Who owns a prompt name: the listing that holds it, else the rules that make the owner clear.

A server may answer `prompts/get` (and complete the arguments of) prompts that its listing does not
hold. A public name that no listing holds goes to its owner when one of these rules names a single
server, tried in this order:

1. a listed prompt with this public name;
2. the naming scheme: the server whose name prefix the name carries (`mcp_github_triage` in
   `prefix` mode, `gh__triage` in `namespace` mode; the longest prefix wins), asked for the rest of
   the name (`triage`); servers sharing that prefix (one namespace) leave the owner unclear;
3. the only server that offers prompts among those whose names carry no prefix (`bare` naming),
   asked for the name as it is.

Only servers the caller may see count. Otherwise the owner is not clear, and the answer names the
candidates (`PromptOwner.candidates`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mcpstation.catalog import Catalog
from mcpstation.pipeline.uri_owner import Offer, Offering

Prefixes = Callable[[], Mapping[str, str | None]]
"""Each known server's name prefix under its naming mode (None: `bare`, its names carry none)."""


class PromptRule(enum.StrEnum):
    """Which rule named the owner (the order they are tried in)."""

    LISTING = "listing"
    NAMING = "naming"
    ONLY_SERVER = "only server"


@dataclass(frozen=True, slots=True)
class PromptOwner:
    """The owner of a prompt name and its own name for it, or (`server` None) the servers that could
    be (`rule` NAMING: they share the prefix the name carries)."""

    server: str | None
    target: str = ""  # the owner's own prompt name
    rule: PromptRule | None = None
    candidates: tuple[str, ...] = ()


class PromptOwners:
    """Finds a prompt name's owner by the rules in the module docstring."""

    def __init__(self, catalog: Callable[[], Catalog], offering: Offering, prefixes: Prefixes) -> None:
        self._catalog = catalog
        self._offering = offering
        self._prefixes = prefixes

    def owner(self, name: str, *, visible: Callable[[str], bool]) -> PromptOwner:
        listed = self._catalog().prompts.get(name)
        if listed is not None:
            return PromptOwner(listed.server, listed.prompt, PromptRule.LISTING)
        prefixes = self._prefixes()
        carried = [
            (len(prefix), server)
            for server, prefix in prefixes.items()
            if prefix and name.startswith(prefix) and len(name) > len(prefix) and visible(server)
        ]
        if carried:
            longest = max(length for length, _ in carried)
            servers = sorted(server for length, server in carried if length == longest)
            if len(servers) == 1:  # several: servers sharing a namespace, whose names say no more
                return PromptOwner(servers[0], name[longest:], PromptRule.NAMING)
            return PromptOwner(None, rule=PromptRule.NAMING, candidates=tuple(servers))
        offering = sorted(
            {s for s in self._offering(Offer.PROMPTS) if s in prefixes and prefixes[s] is None and visible(s)}
        )
        if len(offering) == 1:
            return PromptOwner(offering[0], name, PromptRule.ONLY_SERVER)
        return PromptOwner(None, candidates=tuple(offering))
