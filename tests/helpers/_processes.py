"""Reading /proc in tests: which processes a process started, whether a pid still lives, peak memory."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def children_of(pid: int) -> list[int]:
    """Pids whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def alive(pid: int) -> bool:
    """True for a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


@contextmanager
def processes_left_checked() -> Iterator[None]:
    """Fail if a process started inside the block (a child of this one) is still alive after it."""
    before = set(children_of(os.getpid()))
    yield
    left = [pid for pid in children_of(os.getpid()) if pid not in before and alive(pid)]
    assert left == [], f"processes left behind: {left}"


@contextmanager
def peak_rss() -> Iterator[Callable[[], int]]:
    """Bytes the process's peak RSS rose above its RSS at entry (the kernel's high-water mark, reset)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to the current RSS
    base = _status_kib("VmRSS")
    yield lambda: (_status_kib("VmHWM") - base) * 1024


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/self/status")
