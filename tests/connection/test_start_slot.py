"""A start slot is held while the starting server works and lent while it only waits (read from /proc)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import anyio
import pytest

from mcpstation.connection._start_slot import StartSlot

pytestmark = pytest.mark.anyio

PHASE_S = 0.3  # each phase of the child: CPU work, then waiting (the slot is looked at every 25-100 ms)
WAIT_S = 30.0  # bound on seeing each change of phase on a loaded machine

# Plays a server whose start works (imports), waits (a package download), works again, then waits
# for requests; "work" is CPU time, so it lasts PHASE_S of CPU however loaded the machine is.
DOWNLOADING_SERVER = f"""
import time
def work():
    until = time.process_time() + {PHASE_S}
    while time.process_time() < until:
        sum(range(10_000))
work()
time.sleep({PHASE_S * 3})
work()
time.sleep(600)
"""


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT_S):
        while not condition():  # noqa: ASYNC110 - a slot's state has no event to wait on
            await anyio.sleep(0.01)


async def test_a_slot_is_lent_while_its_server_waits_and_taken_again_when_it_works() -> None:
    slots = anyio.CapacityLimiter(1)
    slot = StartSlot(slots)
    seen: list[bool] = []
    async with await anyio.open_process([sys.executable, "-c", DOWNLOADING_SERVER], stdout=subprocess.DEVNULL) as child:
        try:
            await slot.acquire()
            async with anyio.create_task_group() as tg:
                tg.start_soon(slot.lend_while_idle, "downloader", lambda: child.pid)
                for held in (False, True, False):
                    await _until(lambda held=held: slot.held is held)
                    seen.append(slot.held)
                    if not held:
                        assert slots.borrowed_tokens == 0  # another start could take it now
                slot.release()
            assert slots.borrowed_tokens == 0 and not slot.held
        finally:
            child.kill()
    assert seen == [False, True, False]


async def test_a_slot_released_for_good_is_not_taken_again() -> None:
    slots = anyio.CapacityLimiter(1)
    slot = StartSlot(slots)
    await slot.acquire()
    slot.release()
    with anyio.fail_after(WAIT_S):
        await slot.lend_while_idle("gone", lambda: None)  # returns at once: the start is over
    assert slots.borrowed_tokens == 0


async def test_a_slot_handed_over_as_its_start_ends_goes_straight_back() -> None:
    slots = anyio.CapacityLimiter(1)
    other, slot = object(), StartSlot(slots)
    slots.acquire_on_behalf_of_nowait(other)  # another start holds the only slot
    async with anyio.create_task_group() as tg:
        tg.start_soon(slot.acquire)
        await _until(lambda: slots.statistics().tasks_waiting == 1)
        slots.release_on_behalf_of(other)  # the slot is on its way to the waiting start...
        slot.release()  # ...which ends before it resumes (READY, or its start failed)
    assert slots.borrowed_tokens == 0 and not slot.held


async def test_a_slot_taken_again_as_its_start_ends_goes_straight_back() -> None:
    slots = anyio.CapacityLimiter(1)
    other, slot = object(), StartSlot(slots)
    async with await anyio.open_process([sys.executable, "-c", DOWNLOADING_SERVER], stdout=subprocess.DEVNULL) as child:
        try:
            await slot.acquire()
            async with anyio.create_task_group() as tg:
                tg.start_soon(slot.lend_while_idle, "downloader", lambda: child.pid)
                await _until(lambda: not slot.held)  # lent while the server waits
                slots.acquire_on_behalf_of_nowait(other)  # and taken by another start
                await _until(lambda: slots.statistics().tasks_waiting == 1)  # it works again: it waits for a slot
                slots.release_on_behalf_of(other)
                slot.release()  # READY before the watcher resumed with the slot
            assert slots.borrowed_tokens == 0 and not slot.held
        finally:
            child.kill()
