"""Interpreter exit while the sandbox library's runtime threads may still be inside Python.

pydantic-monty settles each awaited call on a thread of its Tokio runtime (pyo3-async-runtimes),
which is never shut down: the thread hands the result to the event loop with `call_soon_threadsafe`,
whose wake-up write gives the GIL up around `send()`. The loop can take the result and the program
end within that gap; on CPython before 3.14 a thread that asks for the GIL back once the interpreter
finalizes is ended by `pthread_exit`, and its forced unwinding through the Rust frames aborts the
whole process (SIGABRT), even though every run and the pool closed cleanly. `let_foreign_threads_leave`
runs at exit, before finalization (the sandbox module registers it with `atexit`): it gives the GIL
up until no thread that Python did not start is still inside the interpreter, within `EXIT_GRACE_S`.
"""

from __future__ import annotations

import sys
import threading
import time

EXIT_GRACE_S = 2.0  # longest an exit waits for the runtime's threads to leave Python
EXIT_POLL_S = 0.001  # the GIL is given up this long at a time meanwhile


def foreign_threads_in_python() -> set[int]:
    """Threads running Python code that the `threading` module did not start (native runtime threads)."""
    started = {thread.ident for thread in threading.enumerate()}
    return set(sys._current_frames()) - started


def let_foreign_threads_leave() -> None:
    """Give up the GIL until no foreign thread is inside Python (bounded by `EXIT_GRACE_S`)."""
    deadline = time.monotonic() + EXIT_GRACE_S
    while foreign_threads_in_python() and time.monotonic() < deadline:
        time.sleep(EXIT_POLL_S)  # the waiting thread takes the GIL, finishes its call and detaches
