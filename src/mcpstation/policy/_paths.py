"""Paths whose content someone else on the machine could swap, judged as OpenSSH's `safe_path` and sudo do.

Every existing component of the path, from the file up to `/`, must be owned by root or by the
station's user and be writable by neither group nor others. One exception: a sticky directory
(`/tmp`) may be writable by all when the entry below it on the path is owned by root or the
station's user, because in a sticky directory only an entry's owner can rename or remove it. A
part that does not exist yet is judged by the directory it would be created in: under a
directory others can write to (sticky or not) anyone could create it first, so it is refused.

The path is judged as written and where its symlinks lead. A path under a shared temporary
directory that this machine does not have (`/private/tmp` on Linux) is refused by name. Only
`stat` is called; nothing is opened.

What remains: a temporary-files cleaner (systemd-tmpfiles, tmpreaper) may delete our entry in a
sticky directory when it is old enough, and someone could then create the name first. Keep
executables and servers' working directories out of sticky directories that are cleaned.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from pathlib import PureWindowsPath

SHARED_DIRECTORIES = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/lock", "/var/lock", "/private/tmp",
                      "/private/var/tmp")  # fmt: skip
WINDOWS_SHARED_DIRECTORIES = ("c:\\windows\\temp", "c:\\temp", "c:\\users\\public", "c:\\programdata")
STDIN_NAMES = frozenset({"/dev/stdin", "/dev/tty", "con", "conin$"})
_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR})
_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH


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
    trusted = frozenset({0, os.geteuid()})
    for candidate in dict.fromkeys((lexical, _lexical(os.path.realpath(lexical)))):
        reason = _shared_by_name(candidate, path) or _unsafe_on_disk(candidate, path, trusted)
        if reason is not None:
            return reason
    return None


def _shared_by_name(candidate: str, shown: str) -> str | None:
    """A path under a shared temporary directory this machine lacks: refused as that directory would be."""
    for shared in SHARED_DIRECTORIES:
        if (candidate == shared or candidate.startswith(shared + "/")) and not os.path.lexists(shared):
            return f"{shown} lives under {shared}, which every user on this machine can write to"
    return None


def _components(candidate: str) -> list[str]:
    """`candidate` and every directory above it, the file first and `/` last."""
    chain = [candidate]
    while (parent := posixpath.dirname(chain[-1])) != chain[-1]:
        chain.append(parent)
    return chain


def _unsafe_on_disk(candidate: str, shown: str, trusted: frozenset[int]) -> str | None:
    below: str | None = None  # the component under the current one, None at the file itself
    below_owner: int | None = None  # its owner as an entry (a symlink's own), None when it does not exist
    for current in _components(candidate):
        try:
            info = os.stat(current)
            entry_owner = os.lstat(current).st_uid
        except OSError as exc:
            if exc.errno not in _MISSING:
                return f"{shown} cannot be checked: {current}: {exc.strerror}"
            below, below_owner = current, None
            continue
        if info.st_uid not in trusted or entry_owner not in trusted:
            owner = info.st_uid if info.st_uid not in trusted else entry_owner
            return f"{shown}: {current} belongs to uid {owner}, neither root nor this station's user"
        if info.st_mode & _SHARED_WRITE:
            who = "world" if info.st_mode & stat.S_IWOTH else "group"
            if below is None:
                return f"{shown} is {who}-writable; another user could replace it"
            sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
            if not sticky:
                return f"{shown} lives under {who}-writable directory {current}"
            if below_owner is None:
                return f"{shown} does not exist yet, and anyone could create {below} first in {current}"
        below, below_owner = current, entry_owner
    return None
