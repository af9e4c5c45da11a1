"""`python exit_probe.py N`: N forked children each run a script on the station's sandbox workers,
close them and end as any program does (through the interpreter's finalization); prints how each
child ended, one exit code per line (a signal as its negative number, -6 for SIGABRT; `NOT_HELD`
if no thread was held, so the child proved nothing).

The sandbox library settles each call on a thread of its own runtime, which wakes the event loop
and then needs the GIL back; the program may end meanwhile (`mcpstation.codemode._exit`). That
happens about one exit in ten by chance; here the event loop holds the first such thread inside
Python until the exit has begun (`HeldWakeLoop`), so every child ends so.
The sandbox module is imported before forking, as a station's first run imports it; each child
starts the library's runtime and its worker processes afresh.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading

import anyio

from mcpstation.codemode import SandboxWorkers
from mcpstation.codemode._monty import run_script
from mcpstation.codemode.sandbox import Ending, SandboxLimits

HOLD_LIMIT_S = 10.0  # longest a held thread waits for the exit to begin
NOT_HELD = 3  # a child's exit code when no runtime thread woke the loop
HELD = threading.Event()  # a thread is held
EXITING = threading.Event()  # set by the child's first exit hook, before the station's
LIMITS = SandboxLimits(cpu_s=5.0, memory_bytes=64 * 1024 * 1024, recursion_depth=100, tool_calls=10, sleep_s=5.0)


class HeldWakeLoop(asyncio.SelectorEventLoop):
    """An event loop that, once `hold_next_wake` is set, keeps the next thread that wakes it from
    another thread inside Python (the GIL given up) until the program has begun to exit; the
    library's other runtime threads go on meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.hold_next_wake = False
        self._own_thread = threading.get_ident()  # not `current_thread()`, which would register the caller

    def _write_to_self(self) -> None:
        super()._write_to_self()
        if self.hold_next_wake and threading.get_ident() != self._own_thread:
            self.hold_next_wake = False
            HELD.set()
            EXITING.wait(HOLD_LIMIT_S)


def begin_exit() -> None:
    if not HELD.is_set():
        os._exit(NOT_HELD)
    EXITING.set()


async def run_once() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, HeldWakeLoop)
    loop.hold_next_wake = True  # the first call the library settles: its thread is held to the end
    workers = SandboxWorkers(lambda: 1)
    async with anyio.create_task_group() as group:
        workers.bind(group)
        end = await run_script(
            "1 + 1", pool=await workers.pool(), stubs="", type_check=False, limits=LIMITS, functions={},
            admit=lambda function: None, stopped=lambda: None, on_print=lambda text: None,
        )  # fmt: skip
        assert (end.ending, end.value) == (Ending.COMPLETED, 2), end
        await workers.aclose()
    workers.bind(None)


def main(children: int) -> bool:
    """True in a child (which then ends), False in the parent once every child has ended."""
    for _ in range(children):
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            atexit.register(begin_exit)  # registered last, so it runs first
            anyio.run(run_once, backend_options={"loop_factory": HeldWakeLoop})
            return True
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
    return False


if __name__ == "__main__":
    main(int(sys.argv[1]))
