"""Finding and ending every process a stdio server started, grandchildren included.

Each server's stderr is a pipe of our own, inherited by everything the server spawns. A process
that still holds that pipe belongs to the server, even if it left the process group with
`setsid` (which the SDK's process-group kill cannot reach).
"""

from __future__ import annotations

import contextlib
import os
import signal

import anyio

PROC = "/proc"
TERM_GRACE_S = 2.0  # time stragglers get between SIGTERM and SIGKILL
_POLL_S = 0.02


def pids_holding_pipe(inode: int) -> list[int]:
    """Pids of live processes with the pipe `inode` open as fd 1 or 2 (Linux /proc)."""
    target = f"pipe:[{inode}]"
    found: list[int] = []
    try:
        entries = os.listdir(PROC)
    except OSError:
        return found
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        for fd in ("2", "1"):
            try:
                if os.readlink(f"{PROC}/{entry}/fd/{fd}") == target:
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return sorted(found)


def group_leader(pids: list[int]) -> int | None:
    """The pid among `pids` that leads its own session (the spawned server itself)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getsid(pid) == pid:
                return pid
    return pids[0] if pids else None


async def terminate(pids: list[int], grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM each pid, wait up to `grace_s` for them to exit, then SIGKILL the rest."""
    alive = [pid for pid in pids if _signal(pid, signal.SIGTERM)]
    with anyio.move_on_after(grace_s):
        while alive:
            await anyio.sleep(_POLL_S)
            alive = [pid for pid in alive if _exists(pid)]
    for pid in alive:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _exists(pid: int) -> bool:
    try:
        with open(f"{PROC}/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
