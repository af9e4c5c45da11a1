"""The visibility rule and its layer: a caller sees a server's entries when its role reaches theirs.

A server's `min_role` covers everything it offers; `tool_roles` raises (or lowers) single tools
by glob. A server's `auth.groups` narrows it to callers in one of those groups (admins see it
anyway), and its `auth.caller_scopes` to identity-provider callers whose token carries them. What a
caller may not see does not exist for it: listing leaves it out and a request for it answers "not
found", exactly as for a name nobody has. (The HTTP faces answer a direct request of a caller
lacking only scopes with 403 `insufficient_scope` before it gets here, naming the scopes.)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable

from mcpstation.catalog import AnyResult
from mcpstation.config.models import AnyServerSpec, Role
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.caller import Caller
from mcpstation.pipeline.kinds import KINDS
from mcpstation.pipeline.request import Handler, Request, answered

SpecLookup = Callable[[str], AnyServerSpec | None]


class Visibility:
    """Who may see what, read from each server's spec at the moment of asking."""

    def __init__(self, spec_of: SpecLookup) -> None:
        self._spec_of = spec_of

    def required_role(self, server: str, tool: str | None = None) -> Role | None:
        """The lowest role that sees `server` (or one of its tools); None for a server nobody knows."""
        spec = self._spec_of(server)
        if spec is None:
            return None
        if tool is not None:
            for pattern, role in spec.tool_roles.items():
                if fnmatch.fnmatchcase(tool, pattern):
                    return role
        return spec.min_role

    def can_see(self, caller: Caller, server: str, tool: str | None = None) -> bool:
        return self.reaches(caller, server, tool) and not self.missing_scopes(caller, server)

    def reaches(self, caller: Caller, server: str, tool: str | None = None) -> bool:
        """Whether the caller's role, and its groups, reach `server` (or one of its tools); scopes aside."""
        required = self.required_role(server, tool)
        if required is None or not caller.sees(required):
            return False
        groups = self._spec_of(server).auth.groups  # type: ignore[union-attr]  # known: it has a required role
        return not groups or caller.role is Role.ADMIN or bool(caller.groups & set(groups))

    def missing_scopes(self, caller: Caller, server: str) -> tuple[str, ...]:
        """The `auth.caller_scopes` of `server` that an identity-provider caller's token lacks."""
        principal = caller.principal
        spec = self._spec_of(server)
        if principal is None or not principal.from_identity_provider or spec is None:
            return ()
        return tuple(scope for scope in spec.auth.caller_scopes if scope not in principal.scopes)

    def layer(self, handler: Handler) -> Handler:
        """The outermost layer: a hidden entry answers exactly like an unknown one."""

        def visible_only(request: Request) -> Awaitable[AnyResult]:
            caller = request.caller
            row = KINDS[request.kind]
            if row.every_caller:  # the station's own kind: each request it makes is judged itself
                return handler(request)
            if caller.role is Role.ADMIN and not self.missing_scopes(caller, request.server):
                return handler(request)
            if self.can_see(caller, request.server, request.target if row.roles_by_target else None):
                return handler(request)
            return answered(request.fail(Outcome.NOT_FOUND, row.not_found(request.name)))

        return visible_only
