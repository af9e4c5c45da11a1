"""A start slot: one of the pool's bounded start-ups, held by a session from spawn to READY."""

from __future__ import annotations

import anyio


class StartSlot:
    """One of the pool's start slots (None: unbounded), taken once and released once."""

    def __init__(self, slots: anyio.CapacityLimiter | None) -> None:
        self._slots = slots
        self._held = False

    async def acquire(self) -> None:
        if self._slots is not None:
            await self._slots.acquire()
            self._held = True

    def release(self) -> None:
        if self._held and self._slots is not None:
            self._held = False
            self._slots.release()
