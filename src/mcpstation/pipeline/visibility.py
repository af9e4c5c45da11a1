"""The visibility rule and its layer: a caller sees a server's entries when its role reaches theirs.

A server's `min_role` covers everything it offers; `tool_roles` raises (or lowers) single tools
by glob. What a caller may not see does not exist for it: listing leaves it out and a request
for it answers "not found", exactly as for a name nobody has.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from mcpstation.catalog import AnyResult
from mcpstation.config.models import AnyServerSpec, Role
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.caller import Caller
from mcpstation.pipeline.kinds import KINDS
from mcpstation.pipeline.request import Handler, Request

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
        required = self.required_role(server, tool)
        return required is not None and caller.sees(required)

    def layer(self, handler: Handler) -> Handler:
        """The outermost layer: a hidden entry answers exactly like an unknown one."""

        async def visible_only(request: Request) -> AnyResult:
            if request.caller.role is Role.ADMIN:
                return await handler(request)
            row = KINDS[request.kind]
            if self.can_see(request.caller, request.server, request.target if row.roles_by_target else None):
                return await handler(request)
            return request.fail(Outcome.NOT_FOUND, row.not_found(request.name))

        return visible_only
