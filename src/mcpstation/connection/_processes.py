"""Finding and ending every process a stdio server started, grandchildren included.

Each server's stderr is a pipe of our own, inherited by everything the server spawns, so a
process holding that pipe belongs to the server. At stop we also take the server's
descendants and the members of its session: together these reach a grandchild that left the
process group with `setsid` (which the SDK's process-group kill cannot reach) or whose parent
already exited.

Scanning /proc costs about a millisecond per hundred processes, so one scan is shared by every
server that asks within `SNAPSHOT_MAX_AGE_S` (twenty servers stopping together scan once).
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import time
from dataclasses import dataclass

import anyio

PROC = "/proc"
TERM_GRACE_S = 2.0  # time stragglers get between SIGTERM and SIGKILL
SNAPSHOT_MAX_AGE_S = 0.1  # a process table this fresh is good enough to find a server's family
_POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    sid: int
    state: str


_cache: tuple[float, dict[int, ProcessInfo]] | None = None
_pipes_cache: tuple[float, dict[str, list[int]]] | None = None


def process_table() -> dict[int, ProcessInfo]:
    """Every live process but us, from one (recent, shared) scan of /proc."""
    global _cache
    now = time.monotonic()
    if _cache is not None and now - _cache[0] < SNAPSHOT_MAX_AGE_S:
        return _cache[1]
    me = os.getpid()
    table: dict[int, ProcessInfo] = {}
    try:
        entries = os.listdir(PROC)
    except OSError:
        entries = []
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        info = _read_stat(int(entry))
        if info is not None and info.state != "Z":
            table[info.pid] = info
    _cache = (now, table)
    return table


def own_children() -> list[int]:
    """Our direct children, read from /proc/self/task/*/children (no full scan)."""
    found: list[int] = []
    for path in glob.glob(f"{PROC}/self/task/*/children"):
        with contextlib.suppress(OSError):
            with open(path) as children:
                found.extend(int(pid) for pid in children.read().split())
    return found


def _pipe_owners() -> dict[str, list[int]]:
    """Which of our children and orphans hold which pipe as stdout/stderr (one shared pass)."""
    global _pipes_cache
    now = time.monotonic()
    if _pipes_cache is not None and now - _pipes_cache[0] < SNAPSHOT_MAX_AGE_S:
        return _pipes_cache[1]
    me = os.getpid()
    candidates = set(own_children())
    if _cache is not None:  # orphans found by a recent full scan (reparented to init or to us)
        candidates.update(pid for pid, info in _cache[1].items() if info.ppid in (1, me))
    owners: dict[str, list[int]] = {}
    for pid in candidates:
        for fd in ("2", "1"):
            with contextlib.suppress(OSError):
                owners.setdefault(os.readlink(f"{PROC}/{pid}/fd/{fd}"), []).append(pid)
    _pipes_cache = (now, owners)
    return owners


def pipe_holders(inode: int) -> list[int]:
    return sorted(set(_pipe_owners().get(f"pipe:[{inode}]", [])))


def server_pid(inode: int) -> int | None:
    """The spawned server: our child holding the stderr pipe `inode`, leading its own session."""
    candidates = pipe_holders(inode)
    if not candidates:
        invalidate()
        candidates = pipe_holders(inode)
    for pid in candidates:
        with contextlib.suppress(OSError):
            if os.getsid(pid) == pid:
                return pid
    return candidates[0] if candidates else None


def family(leader: int | None, inode: int | None) -> list[int]:
    """The leader, its descendants, its session's members, and orphans still holding the pipe."""
    table = process_table()
    found: set[int] = set()
    if leader is not None:
        if leader in table:
            found.add(leader)
        children: dict[int, list[int]] = {}
        for info in table.values():
            children.setdefault(info.ppid, []).append(info.pid)
            if info.sid == leader:
                found.add(info.pid)
        stack = [leader]
        while stack:
            for child in children.get(stack.pop(), []):
                if child not in found:
                    found.add(child)
                stack.append(child)
    if inode is not None:
        found.update(pid for pid in pipe_holders(inode) if pid in table)
    return sorted(found)


def invalidate() -> None:
    """Forget the shared scans (after signalling, or when a new child may be missing)."""
    global _cache, _pipes_cache
    _cache = None
    _pipes_cache = None


async def terminate(pids: list[int], grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM each pid, wait up to `grace_s` for them to exit, then SIGKILL the rest."""
    alive = [pid for pid in pids if _signal(pid, signal.SIGTERM)]
    with anyio.move_on_after(grace_s):
        while alive:
            await anyio.sleep(_POLL_S)
            alive = [pid for pid in alive if is_alive(pid)]
    for pid in alive:
        _signal(pid, signal.SIGKILL)
    invalidate()


def is_alive(pid: int) -> bool:
    """True for a live (not zombie) process."""
    info = _read_stat(pid)
    return info is not None and info.state != "Z"


@dataclass(frozen=True, slots=True)
class CpuSample:
    """A process tree's CPU use so far (clock ticks, reaped children included) and whether it all sleeps."""

    ticks: int
    asleep: bool


_ASLEEP_STATES = frozenset("SITZ")  # sleeping, idle, stopped, zombie: using no CPU now ('R' runs, 'D' does I/O)


def tree_cpu(leader: int) -> CpuSample | None:
    """`leader` and its descendants, read from /proc (one stat and one children file each); None once it is gone.

    Children are read from the main thread's list only: the runtimes that spawn servers (node,
    Python, uv) spawn from their main thread.
    """
    ticks = 0
    asleep = True
    stack = [leader]
    seen: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"{PROC}/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[-1].split()
            ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        except (OSError, ValueError, IndexError):
            if pid == leader:
                return None
            continue
        asleep = asleep and fields[0] in _ASLEEP_STATES
        with contextlib.suppress(OSError, ValueError):
            with open(f"{PROC}/{pid}/task/{pid}/children") as children:
                stack.extend(int(child) for child in children.read().split())
    return CpuSample(ticks, asleep)


def _read_stat(pid: int) -> ProcessInfo | None:
    try:
        with open(f"{PROC}/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[-1].split()
        return ProcessInfo(pid=pid, state=fields[0], ppid=int(fields[1]), sid=int(fields[3]))
    except (OSError, ValueError, IndexError):
        return None


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
