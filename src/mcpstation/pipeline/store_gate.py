"""The store gate: while the store cannot be reached, a request whose answer would leave the
process without its audit record is not sent.

The audit promise (`audit.py`) is that every answer that leaves the process is recorded first.
Once the store is known to be down (a write failed to reach it: `Store.outage`), a request from
the HTTP API, the gateway or the CLI is answered at once with `Outcome.STORE_DOWN` and the reason,
before it reaches its server: nothing runs that could not be recorded. The library and the
framework adapters share the station's process and never wait for their records, so their
requests run on (their records are lost with the outage, counted by the audit writer).

The station recovers without a restart: at most every `PROBE_INTERVAL_S`, one request that finds
the store down first checks whether it takes a write again (`Store.probe`, bounded by
`PROBE_TIMEOUT_S`); when it does, that request and every later one go through. Requests that come
while a check is running are answered at once rather than queued behind it.

The request during which the outage is discovered has already run: its answer is sent, and its
lost record is logged and counted by the audit writer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

import anyio

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.request import Handler, Request

if TYPE_CHECKING:
    from mcpstation.store import Store, StoreOutage

logger = logging.getLogger(__name__)

PROBE_INTERVAL_S = 2.0  # how often, while the store is down, a request checks whether it is back
PROBE_TIMEOUT_S = 5.0  # bound on that check (a database host that stopped answering)


class StoreGate:
    """Refuses requests whose answers leave the process while the store is down; see the module docstring."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.refused = 0  # requests not sent in the current outage
        self._probing = False
        self._last_probe = -PROBE_INTERVAL_S

    async def is_open(self) -> bool:
        """Whether a request may go through: the store is up, or a check just found it back."""
        if self.store.outage is None:
            return True
        if self._probing or anyio.current_time() - self._last_probe < PROBE_INTERVAL_S:
            return False
        self._probing = True
        try:
            with anyio.move_on_after(PROBE_TIMEOUT_S):
                if await self.store.probe():
                    return True
            return False
        finally:
            self._probing = False
            self._last_probe = anyio.current_time()

    def layer(self, handler: Handler) -> Handler:
        async def after_check(request: Request) -> AnyResult:
            if not await self.is_open():
                self.refused += 1
                if self.refused == 1:
                    logger.warning("the store cannot be reached; refusing requests whose answers it must record first")
                return request.fail(Outcome.STORE_DOWN, _reason(self.store.outage))
            return await passed(request)

        def passed(request: Request) -> Awaitable[AnyResult]:
            if self.refused and self.store.outage is None:
                logger.warning("the store is back; %d requests were refused while it was down", self.refused)
                self.refused = 0
            return handler(request)

        def gated(request: Request) -> Awaitable[AnyResult]:
            if request.caller.face.answers_leave_process and self.store.outage is not None:
                return after_check(request)  # down, or back: `is_open` finds out
            return passed(request)

        return gated


def _reason(outage: StoreOutage | None) -> str:
    why = f" since {outage.since:%H:%M:%S} UTC ({outage.reason})" if outage is not None else ""
    return (
        f"not sent: cannot reach the station's store{why}, and every answer is recorded there "
        "before it is sent. Try again in a few seconds."
    )
