"""The URL guard layer: a guarded server's requests may only name public web addresses.

Which servers are guarded: those whose `url_guard` is on, and by default the fetch servers the
station recognises (`config.presets.needs_url_guard`). For them every request kind is judged:
tool and prompt arguments, completion values, and the values a resource URI fills into its
template (or the URI itself when it is a web address).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mcpstation.catalog import AnyResult
from mcpstation.pipeline.request import Handler, Request
from mcpstation.policy import UrlGuard

logger = logging.getLogger(__name__)


class UrlGuardLayer:
    """Refuses a guarded server's request when the guard rejects one of its URLs."""

    def __init__(self, guard: UrlGuard, is_guarded: Callable[[str], bool]) -> None:
        self.guard = guard
        self._is_guarded = is_guarded

    def __call__(self, handler: Handler) -> Handler:
        async def guarded(request: Request) -> AnyResult:
            if self._is_guarded(request.server):
                verdict = await self.guard.check_arguments(request.arguments, extra=request.url_candidates())
                if verdict is not None and not verdict.allowed:
                    logger.warning("refused %s %s: %s", request.kind, request.name, verdict.reason)
                    return request.refuse(verdict.refusal())
            return await handler(request)

        return guarded
