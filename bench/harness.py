"""What every benchmark row shares: server parameters, the raw-SDK owner task, timers and statistics."""

from __future__ import annotations

import gc
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.client import Client

from mcpstation import StationConfig

BENCH_DIR = Path(__file__).resolve().parent
TINY_SERVER = str(BENCH_DIR / "servers" / "tiny_server.py")
CONNECT_TIMEOUT_S = 30.0  # one raw-SDK connection's bound on spawn + handshake + listing
STATION_SETTINGS = {"server_startup_timeout_s": 30, "startup_timeout_s": 60}
MAX_LIST_PAGES = 1000  # raw-SDK page walk bound (the station's own bound is max_list_pages)


# -- servers ------------------------------------------------------------------------------------------


def tiny_args(*extra: str) -> list[str]:
    return [TINY_SERVER, *extra]


def tiny_params(*extra: str) -> StdioServerParameters:
    """The tiny stdlib server over stdio, as the raw SDK takes it."""
    return StdioServerParameters(command=sys.executable, args=tiny_args(*extra))


def tiny_spec(name: str, *extra: str) -> dict[str, Any]:
    """The same server as a station config entry."""
    return {"name": name, "command": sys.executable, "args": tiny_args(*extra)}


def station_config(servers: Sequence[dict[str, Any]]) -> StationConfig:
    return StationConfig(servers=list(servers), station=STATION_SETTINGS)


# -- the raw SDK, used the way SDK-NOTES §7 says: one owner task per connection ------------------------------


async def list_all_tools(client: Client) -> list[Any]:
    """Walk every page of `tools/list` (the SDK returns one page per call)."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise RuntimeError(f"more than {MAX_LIST_PAGES} pages of tools")


class RawConnection:
    """One raw-SDK `Client` owned by one task: it connects, lists every tool, then waits to be closed."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.client: Client | None = None
        self.tools: list[Any] = []
        self.ready = anyio.Event()
        self._stop = anyio.Event()

    async def run(self, *, task_status: anyio.abc.TaskStatus[Client] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT_S) as scope:
            async with Client(self.target) as client:
                self.tools = await list_all_tools(client)
                scope.deadline = math.inf
                self.client = client
                self.ready.set()
                task_status.started(client)
                await self._stop.wait()
        if scope.cancelled_caught and self.client is None:
            raise TimeoutError(f"raw SDK connect to {self.target!r} timed out")

    def close(self) -> None:
        self._stop.set()


# -- timing and statistics ----------------------------------------------------------------------------------


def now() -> float:
    return time.perf_counter()


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; `values` need not be sorted."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


@dataclass
class CallTimes:
    """Per-call wall times and the client CPU spent on a block of sequential calls."""

    wall_s: list[float]
    cpu_s: float = 0.0

    def extend(self, other: CallTimes) -> None:
        self.wall_s.extend(other.wall_s)
        self.cpu_s += other.cpu_s


async def time_sequential(call: Callable[[], Awaitable[Any]], n: int) -> CallTimes:
    """`n` awaited calls one after another; wall time of each, client CPU of all."""
    wall: list[float] = []
    cpu_started = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        await call()
        wall.append(time.perf_counter() - started)
    return CallTimes(wall, time.process_time() - cpu_started)


async def calls_per_second(call: Callable[[], Awaitable[Any]], total: int, in_flight: int) -> float:
    """Issue `total` calls with `in_flight` of them outstanding at any time; return calls per second."""
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(in_flight):
            tg.start_soon(worker)
    return total / (time.perf_counter() - started)


def settle() -> None:
    """Collect garbage before a timed block, so a collection left over from the other side lands on no one."""
    gc.collect()


# -- processes ----------------------------------------------------------------------------------------


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def rss_bytes() -> int:
    """This process's resident set size (VmRSS) in bytes."""
    return _status_bytes("VmRSS")


def reset_peak_rss() -> int:
    """Collect garbage, set the kernel's peak-RSS mark (VmHWM) to the RSS now, and return that RSS in bytes."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return rss_bytes()


def peak_rss_bytes() -> int:
    """The kernel's peak-RSS mark (VmHWM) in bytes: the most this process held since it was reset."""
    return _status_bytes("VmHWM")


def descendants(root: int | None = None) -> list[tuple[int, str]]:
    """Live (pid, command line) of every process below `root` (default: this process), from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[tuple[int, str]] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found.append((pid, command))
        stack.extend(children.get(pid, []))
    return found
