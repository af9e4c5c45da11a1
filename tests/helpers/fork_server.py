"""Test interpreters forked from one that has already imported the SDK and the station.

Most of the suite's CPU went to spawned interpreters importing the SDK (about 1 s apiece): every
demo server a station starts, every `mcpstation` command a test runs. `PY` (`interpreter()`), the
interpreter the tests write into server configs and command lines, is therefore a shim: a two-line
script run by the real interpreter under `-S`, with this test process's fork server's socket in it.

- Run as `PY -m MODULE ARGS...` for a module in `FORKABLE`, it hands its argv, environment, working
  directory and stdin/stdout/stderr (`SCM_RIGHTS`) to the fork server, which forks a watcher, which
  forks the child that runs MODULE as `__main__` would. The shim forwards SIGTERM and SIGINT to the
  child and ends as the child ended (its exit status, or the same signal); if the shim goes away
  (SIGKILL), the watcher kills the child, so nothing outlives what the station or the test started.
- Any other command line, or no fork server listening, execs the real interpreter with the same
  arguments, so the shim is never a different program, only a cheaper start of the same one.

Tests whose subject is the interpreter itself (which modules an import loads, start-up time, the
process tree, resource limits) use `sys.executable`, not `PY`. The fork server stays
single-threaded (no event loop, no thread) so that forking it is safe.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import struct
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

# Started as `PY -m NAME`: run in a fork of the server. The server imports each before it listens.
FORKABLE = ("mcpstation.testing.demo_server", "mcpstation")
# What a forked `mcpstation` command imports lazily, imported once in the server instead.
_PRELOAD = (
    "mcpstation.testing.demo_server",
    "mcpstation.cli.app",
    "mcpstation.station",
    "mcpstation.store",
    "mcpstation.gateway",
    "mcpstation.api.app",
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "uvicorn",
    "aiosqlite",
    "sqlalchemy.ext.asyncio",
    "alembic.command",
)

_INT = struct.Struct("!i")  # every number on the socket: a request's length, a child's pid, its exit status
_WATCH_S = 0.05  # how often a watcher checks that its shim is still there
_SHIM = (
    "#!{python} -S\n"
    "import sys; sys.path.insert(0, {helpers!r}); import fork_server; fork_server.shim({socket!r}, {modules!r})\n"
)
_PARENT_CHECK_S = 1.0  # how often the server checks that the process that started it is still there


# --- the shim (stdlib only: it runs under `python -S`) -----------------------------------------


def shim(path: str, modules: Sequence[str] = FORKABLE) -> None:
    """The body of `PY`: fork `-m MODULE` in the server when it can, else exec the real interpreter."""
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "-m" and args[1] in modules:
        try:
            status = launch(path, args[1], args[2:])
        except OSError:  # no server (not started yet, or gone): start the module for real
            pass
        else:
            _end_as(status)
    os.execv(sys.executable, [sys.executable, *args])


def launch(path: str, module: str, argv: Sequence[str], *, streams: Sequence[int] = (0, 1, 2)) -> int:
    """Run `module` with `argv` as a fork of the server at `path`, on `streams`; return its status."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    payload = json.dumps({"module": module, "argv": list(argv), "env": dict(os.environ), "cwd": os.getcwd()})
    fds = array.array("i", streams)
    conn.sendmsg([_INT.pack(len(payload.encode()))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    conn.sendall(payload.encode())
    (pid,) = _INT.unpack(_recv_exact(conn, _INT.size))
    if tuple(streams) == (0, 1, 2):
        # The child holds the pipes now: the reader sees end of file when the child ends, not later.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda received, _frame: os.kill(pid, received))
    try:
        (status,) = _INT.unpack(_recv_exact(conn, _INT.size))
    except EOFError:
        return 1
    return status


def _end_as(status: int) -> None:
    """Exit as the child did: with its exit code, or killed by the same signal."""
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status & 0xFF if status >= 0 else 1)


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the other side closed")
        data += chunk
    return data


def write_shim(folder: str, socket_path: str, modules: Sequence[str] = FORKABLE) -> str:
    """Write `PY` into `folder` for the server at `socket_path`; return its path."""
    path = os.path.join(folder, "python")
    helpers = os.path.dirname(os.path.abspath(__file__))
    with open(path, "w") as file:
        file.write(_SHIM.format(python=sys.executable, helpers=helpers, socket=socket_path, modules=tuple(modules)))
    os.chmod(path, 0o755)
    return path


# --- this test process's server ----------------------------------------------------------------

_started: dict[str, Any] = {}


def interpreter() -> str:
    """`PY`: the shim of this process's fork server (started on first use), or the real interpreter.

    `MCPSTATION_TEST_FORKS=0` turns the fork server off: every spawn is a fresh interpreter.
    """
    if os.environ.get("MCPSTATION_TEST_FORKS") == "0":
        return sys.executable
    if "shim" not in _started:
        import atexit
        import subprocess
        import tempfile

        folder = tempfile.mkdtemp(prefix="mcps-py-")
        socket_path = os.path.join(folder, "forks.sock")
        with open(os.path.join(folder, "server.log"), "wb") as log:
            # Not waited for: until it listens, the shim execs the real interpreter.
            _started["server"] = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "serve", socket_path],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        _started["folder"] = folder
        _started["shim"] = write_shim(folder, socket_path)
        atexit.register(stop)
    return str(_started["shim"])


def stop() -> None:
    """End this process's fork server and remove its folder."""
    import shutil

    server = _started.pop("server", None)
    if server is not None:
        server.terminate()
        server.wait()
    folder = _started.pop("folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    _started.pop("shim", None)


# --- the server ---------------------------------------------------------------------------------


def serve(path: str, preload: Sequence[str] = _PRELOAD, run: Callable[[dict[str, Any]], int] | None = None) -> None:
    """Import `preload`, then fork a watcher per connection until SIGTERM or its parent ends."""
    import gc
    import importlib

    parent = os.getppid()
    for name in preload:
        importlib.import_module(name)
    gc.freeze()  # what the import built is shared by every fork, and stays shared (no copy on write)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while os.getppid() == parent:
        ready, _, _ = select.select([listener], [], [], _PARENT_CHECK_S)
        if not ready:
            continue
        conn, _ = listener.accept()
        try:
            request, fds = _receive_request(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            try:
                _watch(conn, request, fds, run or _run_module)
            finally:
                os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)


def _watch(conn: socket.socket, request: dict[str, Any], fds: list[int], run: Callable[[dict[str, Any]], int]) -> None:
    """In the watcher: fork the child, tell the shim its pid, then its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _adopt(request, fds)
        code = _exit_code(run, request)
        os._exit(code)
    for fd in fds:
        os.close(fd)
    conn.sendall(_INT.pack(pid))
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            conn.sendall(_INT.pack(os.waitstatus_to_exitcode(status)))
            return
        readable, _, _ = select.select([conn], [], [], _WATCH_S)
        if readable and not conn.recv(1):  # the shim is gone: so is its child
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return


def _adopt(request: dict[str, Any], fds: list[int]) -> None:
    """In the child: become the process the shim was started as (streams, folder, environment)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")


def _run_module(request: dict[str, Any]) -> int:
    import runpy
    import warnings

    sys.argv = [request["module"], *request["argv"]]
    with warnings.catch_warnings():  # "found in sys.modules ... prior to execution": it is, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    return 0


def _exit_code(run: Callable[[dict[str, Any]], int], request: dict[str, Any]) -> int:
    """Run the child's program and end it as the interpreter would: atexit, flushed streams, status."""
    import atexit

    try:
        code = run(request)
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _receive_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    header, ancillary, _, _ = conn.recvmsg(_INT.size, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    header += _recv_exact(conn, _INT.size - len(header))
    (size,) = _INT.unpack(header)
    return json.loads(_recv_exact(conn, size)), list(fds)


if __name__ == "__main__":
    # `serve SOCKET [MODULE ...]`: preload MODULEs (importable from PYTHONPATH) instead of the station.
    if sys.argv[1:2] != ["serve"] or len(sys.argv) < 3:
        sys.exit(f"usage: {sys.argv[0]} serve SOCKET [MODULE ...]")
    serve(sys.argv[2], sys.argv[3:] or _PRELOAD)
