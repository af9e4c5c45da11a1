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
from mcpstation.pipeline.request import Handler, Request, RequestKind

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
            tool = request.target if request.kind is RequestKind.CALL_TOOL else None
            if request.caller.role is Role.ADMIN or self.can_see(request.caller, request.server, tool):
                return await handler(request)
            return request.fail(Outcome.NOT_FOUND, not_found_message(request.kind, request.name))

        return visible_only


_KIND_WORDS: dict[RequestKind, str] = {
    RequestKind.CALL_TOOL: "tool",
    RequestKind.GET_PROMPT: "prompt",
    RequestKind.READ_RESOURCE: "resource or template matching",
    RequestKind.SUBSCRIBE: "resource or template matching",
    RequestKind.UNSUBSCRIBE: "resource or template matching",
    RequestKind.COMPLETE: "prompt or resource template",
}


def not_found_message(kind: RequestKind, name: str, suggestions: list[str] | None = None) -> str:
    """`no tool 'x'. Did you mean 'y'?`: the same words whether the entry is hidden or absent."""
    hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    return f"no {_KIND_WORDS[kind]} {name!r}.{hint}"
