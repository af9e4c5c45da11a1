"""What a stdio server's process runs: its executable, its environment, and how it is spawned.

Standard library and the config's environment rules only: the one-shot CLI starts the server a
call needs with this (`early.py`) before the SDK and the station are imported, and the station's
stdio transport spawns with the same `spawn`, so both start exactly the same process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from mcpstation.config.environment import inherited_variables

if TYPE_CHECKING:
    from mcpstation.config.models import StdioServerSpec

# The variables every server inherits: the SDK's short list on POSIX (`mcp.client.stdio`;
# tests/connection/test_launch.py checks that the two agree).
DEFAULT_INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
STDIN_PIPE_BYTES = 1024 * 1024  # capacity asked of the kernel for the server's stdin (Linux: up to 1 MiB)
STDOUT_PIPE_BYTES = 256 * 1024  # for its stdout: big enough for big answers, small enough to drain fast


@dataclass(frozen=True, slots=True)
class Launch:
    """One server process as it is spawned: executable, arguments, whole environment, folder."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None

    @classmethod
    def of(cls, spec: StdioServerSpec) -> Launch | None:
        """How the station runs `spec`; None when its command is not found."""
        command = resolve_command(spec)
        if command is None:
            return None
        return cls(command, tuple(spec.args), child_environment(spec), spec.cwd)


def default_environment() -> dict[str, str]:
    """Our `DEFAULT_INHERITED` variables, without exported shell functions (a value starting with
    `()`), as the SDK gives every server."""
    pairs = ((name, os.environ.get(name)) for name in DEFAULT_INHERITED)
    return {name: value for name, value in pairs if value is not None and not value.startswith("()")}


def child_environment(spec: StdioServerSpec, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the server's process gets: never the station's whole environment (`environ`, default ours).

    The SDK's short list (HOME, LOGNAME, PATH, SHELL, TERM, USER), then the variables the spec
    inherits (`spec.inherited_env`: for a server of the user's config, the network ones and
    `inherit_env`), then the server's own `env`, which wins.
    """
    environ = os.environ if environ is None else environ
    inherited = inherited_variables(environ, spec.inherited_env)
    own = {key: value.get_secret_value() for key, value in spec.env.items()}
    return default_environment() | inherited | own


def own_scripts_folder() -> str:
    """The folder of the station's own environment's executables (a venv's `bin`), where its own
    dependencies' commands (`mcp-server-time`, `mcpstation`) live even when the venv is not active."""
    return sysconfig.get_path("scripts") or os.path.join(sys.prefix, "Scripts" if os.name == "nt" else "bin")


def resolve_command(spec: StdioServerSpec) -> str | None:
    """The executable `spec.command` names; None when missing.

    A bare name is looked up on the child's PATH, then in the station's own scripts folder; a
    path is taken as is (a relative one from `cwd`: the config loader made it absolute already
    when it came from a file).
    """
    if os.sep in spec.command or (os.altsep is not None and os.altsep in spec.command):
        path = spec.command if os.path.isabs(spec.command) or spec.cwd is None else os.path.join(spec.cwd, spec.command)
        found = path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(spec.command, path=child_environment(spec).get("PATH"))
        found = found or shutil.which(spec.command, path=own_scripts_folder())
    # absolute: the child starts in `cwd`, where a relative path would mean something else
    return None if found is None else os.path.abspath(found)


def spawn(launch: Launch, errlog: IO[str] | None) -> subprocess.Popen[bytes]:
    """Start `launch` in its own session and process group (one signal reaches its whole family),
    stdin and stdout non-blocking pipes of ours, stderr on `errlog` (None: ours).

    Raises:
        OSError: the command cannot be run.
    """
    process = subprocess.Popen(
        [launch.command, *launch.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=dict(launch.env),
        cwd=launch.cwd,
        start_new_session=True,
        bufsize=0,
    )
    assert process.stdin is not None and process.stdout is not None
    for pipe, size in ((process.stdin, STDIN_PIPE_BYTES), (process.stdout, STDOUT_PIPE_BYTES)):
        os.set_blocking(pipe.fileno(), False)
        if sys.platform == "linux":
            with contextlib.suppress(OSError):
                fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, size)
    return process
