"""A start slot: one of the pool's bounded start-ups, held while a starting server works.

The bound is on work, not on waiting. A stdio server that has spawned and then sits still (a
package download, a remote it waits for, a sleep before it answers `initialize`) lends its slot
back, so the next server can spawn; when it works again it takes a slot again. Working is read
from /proc: the server's process tree used CPU since the last look, or one of its processes is
running (or in disk I/O). The looks come every `CPU_SAMPLE_S` at first and whenever the server
is seen asleep (it may have just begun to wait: a second look soon confirms it), and space out to
`CPU_SAMPLE_MAX_S` while it keeps running. Other transports hold their slot from connect to READY.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

from mcpstation.connection import _processes

logger = logging.getLogger(__name__)

CPU_SAMPLE_S = 0.025  # first look at a starting server's CPU use, and the next look once it is seen asleep
CPU_SAMPLE_MAX_S = 0.1  # while it keeps running, looks space out to this (a look: two /proc reads a process)


class StartSlot:
    """One of the pool's start slots (None: unbounded), held from `acquire` until `release`,
    except while `lend_while_idle` finds the server idle."""

    def __init__(self, slots: anyio.CapacityLimiter | None) -> None:
        self._slots = slots
        self._held = False
        self._done = False
        self._watch: anyio.CancelScope | None = None

    @property
    def held(self) -> bool:
        return self._held

    async def acquire(self) -> None:
        if self._slots is not None:
            await self._take(self._slots)

    async def _take(self, slots: anyio.CapacityLimiter) -> None:
        """Wait for a slot and hold it; if the start ended meanwhile (`release` ran while this
        waited, or while the slot was on its way here), hand it straight back."""
        await slots.acquire_on_behalf_of(self)
        if self._done:
            slots.release_on_behalf_of(self)
        else:
            self._held = True

    def release(self) -> None:
        """Hand the slot back for good (the server is READY, or its start ended)."""
        self._done = True
        if self._watch is not None:
            self._watch.cancel()
        if self._held and self._slots is not None:
            self._held = False
            self._slots.release_on_behalf_of(self)

    async def lend_while_idle(self, server: str, pid: Callable[[], int | None]) -> None:
        """Until `release`: give the slot back while the process `pid()` names is idle, take it when it works."""
        slots = self._slots
        if slots is None or self._done:
            return
        with anyio.CancelScope() as self._watch:
            last: int | None = None
            pause = CPU_SAMPLE_S
            while True:
                leader = pid()
                sample = _processes.tree_cpu(leader) if leader is not None else None
                if sample is not None:
                    # Idle: every process asleep, and not one CPU tick (10 ms) used since the last look.
                    idle = sample.asleep and last is not None and sample.ticks == last
                    last = sample.ticks
                    pause = CPU_SAMPLE_S if sample.asleep else min(CPU_SAMPLE_MAX_S, 2 * pause)
                    if idle and self._held:
                        self._held = False
                        slots.release_on_behalf_of(self)
                        logger.debug("server %r is waiting: its start slot is lent to the next one", server)
                    elif not idle and not self._held:
                        pause = CPU_SAMPLE_S
                        await self._take(slots)
                        logger.debug("server %r works again: it holds a start slot", server)
                await anyio.sleep(pause)
