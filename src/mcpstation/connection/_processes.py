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
    for entry in _all_pids():
        for fd in ("2", "1"):
            try:
                if os.readlink(f"{PROC}/{entry}/fd/{fd}") == target:
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return sorted(found)


def session_members(sid: int) -> list[int]:
    """Pids of live processes in session `sid` (the server and whatever it spawned without `setsid`)."""
    found = []
    for pid in _all_pids():
        with contextlib.suppress(OSError):
            if os.getsid(pid) == sid and _exists(pid):
                found.append(pid)
    return found


def descendants(root: int) -> list[int]:
    """Pids of every live descendant of `root`, by parent links in /proc."""
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _all_pids() -> list[int]:
    try:
        entries = os.listdir(PROC)
    except OSError:
        return []
    me = os.getpid()
    return [int(e) for e in entries if e.isdigit() and int(e) != me]


def _parent(pid: int) -> int | None:
    try:
        with open(f"{PROC}/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


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


def is_alive(pid: int) -> bool:
    """True for a live (not zombie) process."""
    return _exists(pid)


def _exists(pid: int) -> bool:
    try:
        with open(f"{PROC}/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
