"""The control socket: where a running station listens for its owner's command line.

    <data dir>/control/               mode 0700: nobody else can reach what is inside
    <data dir>/control/station.sock   a Unix socket, mode 0600, served by `up` and `gateway` (HTTP)
    <data dir>/control/station.lock   locked (flock) by the station serving the socket, for its life
    <data dir>/control/station.json   which config file that station runs (`{"config": path or null}`)

The filesystem's permissions are the authentication: whoever can connect to the socket is the
user who owns the data directory, and every request on it runs as `Caller.cli()`. The lock says
who owns the socket path: the station that holds it binds the path, and a socket file nobody holds
the lock for is stale, so whoever takes the lock may remove it. The kernel drops the lock when its
process dies, however it dies.

This module is imported by every CLI command, so it imports only the standard library.
"""

from __future__ import annotations

import enum
import errno
import fcntl
import json
import logging
import os
import socket
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("mcpstation.cli")

CONTROL_DIR_NAME = "control"
CONTROL_SOCKET_NAME = "station.sock"
CONTROL_LOCK_NAME = "station.lock"
CONTROL_INFO_NAME = "station.json"
CONTROL_DIR_MODE = 0o700
CONTROL_SOCKET_MODE = 0o600
CONTROL_BACKLOG = 64  # connections the kernel queues while the station is still starting
PROBE_TIMEOUT_S = 2.0  # connecting to a local socket is immediate; longer means the listener is wedged
# sun_path holds the path and a NUL: 108 bytes on Linux, 104 on the BSDs and macOS.
SOCKET_PATH_MAX_BYTES = 107 if sys.platform.startswith("linux") else 103

# The data directory, as `mcpstation.store._location.default_data_dir` finds it. That module pulls
# in the store and SQLAlchemy, which a CLI command talking to a running station must not pay for;
# tests/cli/test_control.py checks that the two agree.
DATA_DIR_ENV_VAR = "MCPSTATION_DATA_DIR"


def data_dir_of(option: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """The data directory: `--data-dir`, else `$MCPSTATION_DATA_DIR`, `$XDG_DATA_HOME/mcpstation`,
    `~/.local/share/mcpstation`."""
    if option:
        return Path(option).expanduser()
    environ = os.environ if environ is None else environ
    explicit = environ.get(DATA_DIR_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    xdg = environ.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():  # a relative XDG_DATA_HOME is invalid and ignored
        return Path(xdg) / "mcpstation"
    return Path.home() / ".local" / "share" / "mcpstation"


# The config file a command names, as `mcpstation.config.loader.resolve_config_path` picks it
# (that module imports the config models; tests/cli/test_control.py checks that the two agree).
CONFIG_ENV_VAR = "MCPSTATION_CONFIG"
DEFAULT_CONFIG_NAME = "mcpstation.toml"


def config_path_of(option: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The config file: `--config`, else `$MCPSTATION_CONFIG`, else `./mcpstation.toml` if it exists;
    None for the default config. Absolute, symbolic links resolved."""
    environ = os.environ if environ is None else environ
    chosen = option or environ.get(CONFIG_ENV_VAR)
    if chosen:
        return Path(chosen).expanduser().resolve()
    candidate = Path.cwd() / DEFAULT_CONFIG_NAME
    return candidate.resolve() if candidate.is_file() else None


def control_socket_path(data_dir: Path) -> Path:
    """Where the station serving `data_dir` listens."""
    return data_dir / CONTROL_DIR_NAME / CONTROL_SOCKET_NAME


class Found(enum.Enum):
    """What a look for a running station found."""

    RUNNING = "running"  # a station listens on the socket
    NONE = "none"  # no socket file
    STALE = "stale"  # a socket file nobody listened on; removed
    UNUSABLE = "unusable"  # a socket we must not or cannot use (not private, path too long); left alone


@dataclass(frozen=True, slots=True)
class Lookup:
    found: Found
    path: Path
    reason: str
    said_config: bool = False  # the running station said which config it runs (an older one does not)
    config: Path | None = None  # the config file it runs; None: the default config


def find_station(data_dir: Path) -> Lookup:
    """Whether a station serves `data_dir`'s control socket; a stale socket file is removed."""
    path = control_socket_path(data_dir)
    try:
        directory = path.parent.lstat()
        entry = path.lstat()
    except FileNotFoundError:
        return Lookup(Found.NONE, path, "no control socket")
    problem = _not_private(path.parent, directory) or _not_private(path, entry, socket_file=True)
    if problem is not None:
        return Lookup(Found.UNUSABLE, path, problem)
    if len(os.fsencode(path)) > SOCKET_PATH_MAX_BYTES:
        return Lookup(Found.UNUSABLE, path, f"the path is over {SOCKET_PATH_MAX_BYTES} bytes")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(PROBE_TIMEOUT_S)
    try:
        probe.connect(os.fspath(path))
    except FileNotFoundError:
        return Lookup(Found.NONE, path, "no control socket")
    except ConnectionRefusedError:
        if remove_stale_socket(path):
            return Lookup(Found.STALE, path, "nobody listened on the control socket; removed it")
        return Lookup(Found.NONE, path, "the station holding the control socket is starting or stopping")
    except OSError as exc:
        return Lookup(Found.UNUSABLE, path, f"cannot connect: {exc.strerror or exc}")
    finally:
        probe.close()
    said, config = _read_info(path.parent)
    return Lookup(Found.RUNNING, path, "a station listens", said_config=said, config=config)


def remove_stale_socket(path: Path) -> bool:
    """Remove the socket file at `path` if no station holds its lock; whether it was removed."""
    lock = _open_lock(path.parent)
    try:
        if not _try_lock(lock):
            return False
        try:
            if stat.S_ISSOCK(path.lstat().st_mode):
                path.unlink()
                return True
        except FileNotFoundError:
            pass
        return False
    finally:
        os.close(lock)  # closing the descriptor releases the lock


class ControlSocket:
    """The control socket a station serves: its lock held, the path bound, mode 0600.

    `claim` it before the station starts (like the TCP socket, so connections made during the
    start-up queue instead of starting a second station); `close` it after the server stopped.
    """

    def __init__(self, path: Path, sock: socket.socket, lock: int) -> None:
        self.path = path
        self.sock = sock
        self._lock = lock
        self._inode = path.lstat().st_ino

    @property
    def address(self) -> str:
        """The address the socket is bound to, as the ASGI scope's `server[0]` shows it."""
        return str(self.sock.getsockname())

    @classmethod
    def claim(cls, data_dir: Path, *, config: Path | None = None) -> ControlSocket | None:
        """Bind `data_dir`'s control socket; None when another station serves it already. `config`
        is the file the station runs (None: the default config), for commands to compare theirs with.

        Raises:
            OSError: the directory cannot be made private, or the socket cannot be bound.
        """
        path = control_socket_path(data_dir)
        if len(os.fsencode(path)) > SOCKET_PATH_MAX_BYTES:
            raise OSError(errno.ENAMETOOLONG, f"the control socket's path is over {SOCKET_PATH_MAX_BYTES} bytes")
        _private_directory(path.parent)
        lock = _open_lock(path.parent)
        if not _try_lock(lock):
            os.close(lock)
            return None
        try:
            # We hold the lock, so a socket file here is a dead station's.
            if path.is_socket() or path.is_symlink():
                path.unlink()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(os.fspath(path))
                os.chmod(path, CONTROL_SOCKET_MODE)  # the 0700 directory already keeps others out meanwhile
                sock.listen(CONTROL_BACKLOG)
                sock.set_inheritable(False)
                _write_info(path.parent, config)
                return cls(path, sock, lock)
            except BaseException:
                sock.close()
                raise
        except BaseException:
            os.close(lock)
            raise

    def close(self) -> None:
        """Stop listening, remove the socket file (if it is still ours) and release the lock."""
        self.sock.close()
        try:
            if self.path.lstat().st_ino == self._inode:
                self.path.unlink()
                (self.path.parent / CONTROL_INFO_NAME).unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._lock)

    def __repr__(self) -> str:
        return f"<ControlSocket {str(self.path)!r}>"


def _write_info(directory: Path, config: Path | None) -> None:
    """Say which config the station serving `directory` runs (written whole, then renamed into place)."""
    info = directory / CONTROL_INFO_NAME
    partial = directory / f".{CONTROL_INFO_NAME}.{os.getpid()}"
    partial.write_text(json.dumps({"config": str(config) if config is not None else None}), encoding="utf-8")
    partial.replace(info)


def _read_info(directory: Path) -> tuple[bool, Path | None]:
    """Whether the station serving `directory` said which config it runs, and which."""
    try:
        info = json.loads((directory / CONTROL_INFO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    if not isinstance(info, dict) or "config" not in info:
        return False, None
    config = info["config"]
    return True, Path(config) if isinstance(config, str) else None


def _private_directory(directory: Path) -> None:
    directory.mkdir(mode=CONTROL_DIR_MODE, parents=True, exist_ok=True)
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(errno.EPERM, f"{directory} is not a directory of this user")
    if stat.S_IMODE(info.st_mode) != CONTROL_DIR_MODE:
        os.chmod(directory, CONTROL_DIR_MODE)


def _not_private(path: Path, info: os.stat_result, *, socket_file: bool = False) -> str | None:
    """Why `path` must not be trusted as this user's control socket (or its directory), or None."""
    kind_ok = stat.S_ISSOCK(info.st_mode) if socket_file else stat.S_ISDIR(info.st_mode)
    if not kind_ok:
        return f"{path} is not a {'socket' if socket_file else 'directory'}"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if not socket_file and stat.S_IMODE(info.st_mode) & 0o077:
        return f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}, expected 700)"
    return None


def _open_lock(directory: Path) -> int:
    return os.open(directory / CONTROL_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, CONTROL_SOCKET_MODE)


def _try_lock(descriptor: int) -> bool:
    # Not `file_lock.try_lock`: that module imports anyio, which the CLI's light path never loads.
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def claim_control_socket(data_dir: Path, config: Path | None) -> ControlSocket | None:
    """`ControlSocket.claim` for a serving command: a socket that cannot be had is a warning, not
    a failure (the station runs; CLI commands then start stations of their own)."""
    try:
        claimed = ControlSocket.claim(data_dir, config=config)
    except OSError as exc:
        logger.warning(
            "no control socket in %s (%s): CLI commands will not reach this station", data_dir, exc.strerror or exc
        )
        return None
    if claimed is None:
        logger.warning(
            "another station serves the control socket of %s: CLI commands go to that one, not this one", data_dir
        )
    return claimed
