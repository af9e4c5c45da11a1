"""The bounds layer: what any request returns is cut to what an LLM can read, or refused when huge.

Over `hard_max_result_bytes` the request fails (`Outcome.TOO_LARGE`) with a hint to ask for less;
over `max_result_bytes` (per server, else the station's) the content of the kinds whose row says
`cut` (tool results) is cut in the middle, head and tail kept and marked. Prompt messages and
resource contents get the hard cap only; they are documents a caller asked for whole, and cutting
them silently would change their meaning. A result says its own size (`Result.content_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable

from mcpstation.catalog import AnyResult
from mcpstation.config.models import StationSettings
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.kinds import KINDS
from mcpstation.pipeline.request import Handler, Request


class Bounds:
    """Size limits, read from the settings and the owner's spec at the moment of answering."""

    def __init__(self, settings: Callable[[], StationSettings], server_cap: Callable[[str], int | None]) -> None:
        self._settings = settings
        self._server_cap = server_cap

    def __call__(self, handler: Handler) -> Handler:
        async def bounded(request: Request) -> AnyResult:
            return self.apply(request, await handler(request))

        return bounded

    def apply(self, request: Request, result: AnyResult) -> AnyResult:
        if not result.ok:
            return result
        size = result.content_bytes()
        if size is None:
            return result
        settings = self._settings()
        if size > settings.hard_max_result_bytes:
            return request.fail(
                Outcome.TOO_LARGE,
                f"the answer to {request.kind} {request.target!r} is {size} bytes, over the hard cap of "
                f"{settings.hard_max_result_bytes} bytes; ask for less (a narrower query, a page, a range)",
                duration_s=result.duration_s,
            )
        if KINDS[request.kind].cut:
            return result.capped(self._server_cap(request.server) or settings.max_result_bytes, size=size)
        return result
