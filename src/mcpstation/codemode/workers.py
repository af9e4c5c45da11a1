"""`SandboxWorkers`: the station's pool of sandbox worker processes, shared by every code-mode run.

At most `[code_mode] workers` scripts execute at once; a run beyond them waits for a free worker
(its wall time runs meanwhile). A run paused at a call that waits for a person's confirmation
holds no worker: its state is dumped and its worker given back, and the run is loaded into
whichever worker is free when the answer has come (`_monty.py`). So runs waiting for people never
starve runs that could go on.

The pool opens with the first run (the sandbox library loads only then) inside one task of the
station's task group, which owns it until the station shuts down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus

from mcpstation.errors import UsageError

if TYPE_CHECKING:
    from mcpstation.codemode._monty import Pool

CLOSE_GRACE_S = 5.0  # time the pool gets to end its workers at shutdown


class SandboxWorkers:
    """The sandbox worker pool: opened on first use in the bound task group, closed by `aclose`."""

    def __init__(self, size: Callable[[], int]) -> None:
        self._size = size
        self._task_group: TaskGroup | None = None
        self._pool: Pool | None = None
        self._opening = anyio.Lock()
        self._closing = anyio.Event()
        self._closed = anyio.Event()

    def bind(self, task_group: TaskGroup | None) -> None:
        """The task group the pool's owner task runs in (the station's), or None once it stopped."""
        if task_group is not None and self._closing.is_set():  # a station started again opens a new pool
            self._closing, self._closed = anyio.Event(), anyio.Event()
        self._task_group = task_group

    async def pool(self) -> Pool:
        """The open pool, opened now if this is the first run.

        Raises:
            UsageError: the station is not running.
        """
        async with self._opening:
            if self._pool is None:
                if self._task_group is None or self._closing.is_set():
                    raise UsageError("code mode runs scripts in a running station: `async with Station(...)`")
                await self._task_group.start(self._own, name="mcpstation sandbox workers")
        assert self._pool is not None
        return self._pool

    async def _own(self, *, task_status: TaskStatus[None]) -> None:
        from mcpstation.codemode._monty import open_pool  # the sandbox library loads with the first run

        try:
            async with open_pool(self._size()) as pool:
                self._pool = pool
                task_status.started()
                await self._closing.wait()
        finally:
            self._pool = None
            self._closed.set()

    async def aclose(self) -> None:
        """Close the pool (bounded): no run starts after; one still going keeps its worker to its end."""
        self._closing.set()
        if self._pool is not None:
            with anyio.move_on_after(CLOSE_GRACE_S):
                await self._closed.wait()
