"""`file_lock`: one holder at a time across processes on this machine, by an advisory lock on a file.

`flock` locks belong to an open file, so two opens in one process exclude each other as well as
two processes do, and the kernel drops a dead holder's lock with its last descriptor: a holder
that was killed never leaves the lock taken. Waiting polls a non-blocking `flock`, so no thread
is needed and a waiter can be cancelled. The lock file stays behind: removing it while another
process has it open would let a third lock a new file of the same name.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

POLL_INTERVAL_S = 0.05  # how often a waiter tries again


@contextlib.asynccontextmanager
async def file_lock(path: Path, *, timeout_s: float) -> AsyncIterator[None]:
    """Hold the lock on `path` (created 0600, its directory 0700, if missing) for the block.

    Raises:
        TimeoutError: another holder kept it for `timeout_s`.
        OSError: the file cannot be created or opened.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = anyio.current_time() + timeout_s
        while not try_lock(fd):
            if anyio.current_time() >= deadline:
                raise TimeoutError(f"{path} was locked by another holder for over {timeout_s:g} s")
            await anyio.sleep(POLL_INTERVAL_S)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def try_lock(fd: int) -> bool:
    """Take the exclusive `flock` on the open file `fd` if no one holds it; whether it was taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
