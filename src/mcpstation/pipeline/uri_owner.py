"""Who owns a resource URI: the listing that names it, else the rules that make the owner clear.

A server may accept URIs that none of its listings holds (a resource made at run time, a URI the
client learnt elsewhere). `resources/read`, `resources/subscribe`, `resources/unsubscribe` and a
completion of a `ref/resource` for such a URI (or URI template) go to its owner when one of these
rules names a single server, tried in this order:

1. a listed resource with this URI, or a listed template with this very URI template;
2. a template that matches it (templates of several servers matching: the later rules decide
   among those servers);
3. a server that has already answered for it: a read or a subscription that succeeded, or an
   update notification it sent (`remember`);
4. its scheme: the only server whose listed resources and templates use that scheme (`test://`);
5. the only server that can take the request (`Offer`): for a subscription, the only one whose
   capabilities say it can subscribe; for a read, the only one that offers resources; for a
   completion, the only one that offers completions.

Only servers the caller may see count. Otherwise the owner is not clear, and the answer names the
candidates (`UriOwner.candidates`).
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from mcp.shared.uri_template import UriTemplate

from mcpstation.catalog import Catalog

ANSWERED_MAX = 10_000  # URIs remembered with the server that answered for them; the oldest go first


class UriRule(enum.StrEnum):
    """Which rule named the owner (the order they are tried in)."""

    LISTING = "listing"
    TEMPLATE = "template"
    ANSWERED = "answered"
    SCHEME = "scheme"
    ONLY_SERVER = "only server"


@dataclass(frozen=True, slots=True)
class UriOwner:
    """The owner of a URI and the rule that named it, or (`server` None) the servers that could be."""

    server: str | None
    rule: UriRule | None = None
    variables: Mapping[str, str] | None = None  # what a matching template fills in
    candidates: tuple[str, ...] = ()


class Offer(enum.StrEnum):
    """What a server's capabilities must offer to take a request; the value completes "they ..."."""

    RESOURCES = "offer resources"
    SUBSCRIBE = "can subscribe"
    COMPLETIONS = "offer completions"
    PROMPTS = "offer prompts"


Offering = Callable[[Offer], Iterable[str]]
"""The servers ready to take a request now: those whose capabilities offer it."""


class UriOwners:
    """Finds a URI's owner by the rules in the module docstring, and remembers who answered for what."""

    def __init__(self, catalog: Callable[[], Catalog], offering: Offering) -> None:
        self._catalog = catalog
        self._offering = offering
        self._answered: OrderedDict[str, str] = OrderedDict()

    def remember(self, uri: str, server: str) -> None:
        """`server` answered for `uri` (a read, a subscription, an update notification)."""
        self._answered[uri] = server
        self._answered.move_to_end(uri)
        while len(self._answered) > ANSWERED_MAX:
            self._answered.popitem(last=False)

    def owner(self, uri: str, *, offer: Offer, visible: Callable[[str], bool]) -> UriOwner:
        """`uri`'s owner for a request that needs `offer`, among the servers `visible` accepts."""
        catalog = self._catalog()
        listed = catalog.resources.get(uri) or catalog.templates.get(uri)
        if listed is not None:
            return UriOwner(listed.server, UriRule.LISTING)
        matches: dict[str, Mapping[str, str]] = {}
        for template in catalog.templates.values():
            if template.server not in matches and (found := match(template.matcher, uri)) is not None:
                matches[template.server] = found
        if len(matches) == 1:
            ((server, variables),) = matches.items()
            return UriOwner(server, UriRule.TEMPLATE, variables)

        def eligible(server: str) -> bool:  # several templates matching: the rules choose among their servers
            return visible(server) and (not matches or server in matches)

        answered = self._answered.get(uri)
        if answered is not None and eligible(answered):
            return UriOwner(answered, UriRule.ANSWERED, matches.get(answered))
        scheme = scheme_of(uri)
        if scheme is not None and not matches:
            users = {s for s in self._scheme_users(catalog, scheme) if visible(s)}
            if len(users) == 1:
                return UriOwner(users.pop(), UriRule.SCHEME)
        offering = sorted({s for s in self._offering(offer) if eligible(s)})
        if len(offering) == 1:
            return UriOwner(offering[0], UriRule.ONLY_SERVER, matches.get(offering[0]))
        return UriOwner(None, candidates=tuple(offering or sorted(s for s in matches if visible(s))))

    @staticmethod
    def _scheme_users(catalog: Catalog, scheme: str) -> set[str]:
        users = {r.server for r in catalog.resources.values() if scheme_of(r.uri) == scheme}
        users.update(t.server for t in catalog.templates.values() if scheme_of(t.uri_template) == scheme)
        return users


def scheme_of(uri: str) -> str | None:
    """The URI's scheme, lower case (`Test://a` → `test`), or None when it has none."""
    head, colon, _ = uri.partition(":")
    if not colon or not head or not head[0].isalpha():
        return None
    if not all(c.isalnum() or c in "+-." for c in head):
        return None
    return head.lower()


def match(matcher: UriTemplate | None, uri: str) -> dict[str, str] | None:
    """The values a template fills in for `uri`, or None when it does not match."""
    if matcher is None:
        return None
    found = matcher.match(uri)
    if found is None:
        return None
    return {key: value if isinstance(value, str) else ",".join(value) for key, value in found.items()}
