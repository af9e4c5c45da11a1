"""A request's progress reports, delivered to its caller in order and before its answer.

The SDK runs each progress callback as a task of its own, so two reports, or the last report and
the answer, can reach the caller in either order; a gateway relaying them downstream would then
send the last report after the response, and the client drops it. `OrderedProgress` runs the
callbacks one at a time in arrival order, and the request waits for them to settle before it
returns its answer.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
from mcp.shared.dispatcher import ProgressFnT

SETTLE_WITHIN_S = 5.0  # a caller's slow callback delays its own answer this long at most


class OrderedProgress:
    """Wraps a caller's progress callback; `settled` waits until every report so far was handled."""

    def __init__(self, callback: ProgressFnT) -> None:
        self._callback = callback
        self._turn = anyio.Lock()  # FIFO: reports are handled in the order their tasks started
        self._running = 0
        self._idle = anyio.Event()
        self._idle.set()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self._running == 0:
            self._idle = anyio.Event()
        self._running += 1
        try:
            async with self._turn:
                await self._callback(progress, total, message)
        finally:
            self._running -= 1
            if self._running == 0:
                self._idle.set()

    async def settled(self) -> None:
        """Return once the reports that arrived before the answer were handled (or `SETTLE_WITHIN_S` passed)."""
        await anyio.lowlevel.checkpoint()  # report tasks scheduled before the answer start first
        with anyio.move_on_after(SETTLE_WITHIN_S):
            await self._idle.wait()
