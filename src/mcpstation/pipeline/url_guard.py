"""The URL guard layer: a guarded server's requests may only name public web addresses.

Which servers are guarded (`needs_url_guard`): those whose `url_guard` is on, and by default the
fetch servers the station recognises, however they are launched. For them every request kind is
judged: tool and prompt arguments, completion values, and the values a resource URI fills into
its template (or the URI itself when it is a web address).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import PurePath

from mcpstation.catalog import AnyResult
from mcpstation.config.models import AnyServerSpec, StdioServerSpec
from mcpstation.config.presets import FETCH_MODULES, FETCH_PACKAGE
from mcpstation.pipeline.request import Handler, Request
from mcpstation.policy import UrlGuard

logger = logging.getLogger(__name__)

_LAUNCHERS = frozenset({"uvx", "pipx", "uv"})  # programs that run a PyPI package named in their arguments


def needs_url_guard(spec: AnyServerSpec) -> bool:
    """Whether the URL guard judges the arguments of every request to `spec`: its `url_guard`
    setting, else on for the fetch servers we recognise."""
    if spec.url_guard is not None:
        return spec.url_guard
    return runs_fetch_server(spec)


def runs_fetch_server(spec: AnyServerSpec) -> bool:
    """True for a stdio server running mcp-server-fetch or our fetch server, however launched."""
    if not isinstance(spec, StdioServerSpec):
        return False
    if _module_of(spec.args) in FETCH_MODULES:
        return True
    program = PurePath(spec.command).name.lower().removesuffix(".exe")
    if program == FETCH_PACKAGE:
        return True
    launched = [PurePath(arg).name.lower() for arg in spec.args if not arg.startswith("-")]
    packages = {arg.split("==")[0].split("@")[0] for arg in launched}
    return program in _LAUNCHERS and FETCH_PACKAGE in packages


def _module_of(args: Sequence[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "-m":
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:]
    return None


class UrlGuardLayer:
    """Refuses a guarded server's request when the guard rejects one of its URLs.

    Whether a server is guarded is judged once per spec (a reload or a run-time change brings a new
    spec object), not per request.
    """

    def __init__(self, guard: UrlGuard, spec_of: Callable[[str], AnyServerSpec | None]) -> None:
        self.guard = guard
        self._spec_of = spec_of
        self._judged: dict[str, tuple[AnyServerSpec, bool]] = {}

    def is_guarded(self, server: str) -> bool:
        spec = self._spec_of(server)
        if spec is None:
            return False
        judged = self._judged.get(server)
        if judged is None or judged[0] is not spec:
            judged = self._judged[server] = (spec, needs_url_guard(spec))
        return judged[1]

    def __call__(self, handler: Handler) -> Handler:
        async def judged(request: Request) -> AnyResult:
            verdict = await self.guard.check_arguments(request.arguments, extra=request.url_candidates())
            if verdict is not None and not verdict.allowed:
                logger.warning("refused %s %s: %s", request.kind, request.name, verdict.reason)
                return request.refuse(verdict.refusal())
            return await handler(request)

        def guarded(request: Request) -> Awaitable[AnyResult]:
            return judged(request) if self.is_guarded(request.server) else handler(request)

        return guarded
