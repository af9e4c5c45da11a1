"""Paths whose content anyone on the machine could swap: world-writable files and directories.

A path is refused when it, or any directory above it, is world-writable (sticky or not: in a
sticky `/tmp` anyone can create the name first, or after a cleaner removed ours), judged on the
path as written and on where its symlinks lead. Paths under the usual shared temporary
directories are refused by name too, so a path that does not exist yet (and a machine that
names them differently) is judged the same. Only `stat` is called; nothing is opened.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from pathlib import PureWindowsPath

SHARED_DIRECTORIES = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/lock", "/var/lock", "/private/tmp",
                      "/private/var/tmp")  # fmt: skip
WINDOWS_SHARED_DIRECTORIES = ("c:\\windows\\temp", "c:\\temp", "c:\\users\\public", "c:\\programdata")
STDIN_NAMES = frozenset({"/dev/stdin", "/dev/tty", "con", "conin$"})


def is_path(value: str) -> bool:
    return "/" in value or "\\" in value


def is_absolute(value: str) -> bool:
    return os.path.isabs(value) or PureWindowsPath(value).is_absolute()


def _lexical(path: str) -> str:
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("/") else normal


def reads_stdin(path: str) -> bool:
    """`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/N`, ...: a program read from the MCP stream."""
    lowered = _lexical(path).lower() if "/" in path else path.lower()
    return (
        lowered in STDIN_NAMES or lowered.startswith("/dev/fd/") or (lowered.startswith("/proc/") and "/fd/" in lowered)
    )


def world_writable_reason(path: str, *, base: str | None = None) -> str | None:
    """Why `path` (relative ones taken from `base`, or the working directory) could be swapped, or None."""
    if "\\" in path or re.match(r"^[A-Za-z]:", path):
        lowered = str(PureWindowsPath(path)).lower()
        for shared in WINDOWS_SHARED_DIRECTORIES:
            if lowered == shared or lowered.startswith(shared + "\\"):
                return f"{path} lives under {shared}, which every user can write to"
        return None
    absolute = path if path.startswith("/") else posixpath.join(base or os.getcwd(), path)
    lexical = _lexical(absolute)
    for candidate in dict.fromkeys((lexical, _lexical(os.path.realpath(lexical)))):
        for shared in SHARED_DIRECTORIES:
            if candidate == shared or candidate.startswith(shared + "/"):
                return f"{path} lives under {shared}, which every user on this machine can write to"
        reason = _writable_on_disk(candidate, path)
        if reason is not None:
            return reason
    return None


def _writable_on_disk(candidate: str, shown: str) -> str | None:
    current = candidate
    while True:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            mode = None  # missing: whoever may write its parent decides what it will be
        if mode is not None and mode & stat.S_IWOTH:
            if current == candidate:
                return f"{shown} is world-writable; anyone on this machine could replace it"
            return f"{shown} lives under world-writable directory {current}"
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent
