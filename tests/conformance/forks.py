"""The conformance client, forked from one interpreter that has already imported it.

    python tests/conformance/forks.py serve SOCKET         # imports client.py, then forks one per scenario
    python -S tests/conformance/forks.py SOCKET ARGS...     # what the harness runs: a stdlib launcher

Each scenario's client would otherwise pay a fresh interpreter importing the SDK and the station
(about 1.5 s of CPU, most of a scenario's cost). The client talks to the harness over HTTP, so
nothing about it depends on being exec'd fresh. The launcher hands the server its argv, its
environment, its working directory and its stdin/stdout/stderr (`SCM_RIGHTS`); the server forks a
watcher, which forks the client and reports its exit status back. The launcher forwards SIGTERM and
SIGINT to the client and exits with its status; if the launcher goes away, the watcher kills the
client, so a harness timeout leaves nothing running.

The server must stay single-threaded (no event loop, no thread) so that forking it is safe.
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
from typing import Any

_INT = struct.Struct("!i")  # every number on the socket: the request's length, the client's pid, its exit status
_WATCH_S = 0.05


def _send_request(conn: socket.socket, argv: list[str]) -> None:
    payload = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    fds = array.array("i", [0, 1, 2])
    conn.sendmsg([_INT.pack(len(payload))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    conn.sendall(payload)


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the other side closed")
        data += chunk
    return data


def launch(path: str, argv: list[str]) -> int:
    """The harness's client command: run one client in the fork server and return its status."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    _send_request(conn, argv)
    (pid,) = _INT.unpack(_recv_exact(conn, _INT.size))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _frame: os.kill(pid, received))
    try:
        (status,) = _INT.unpack(_recv_exact(conn, _INT.size))
    except EOFError:
        return 1
    return status


def _run_client(request: dict[str, Any], fds: list[int]) -> int:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    import client  # the server imported it before any fork

    try:
        return client.main()
    except BaseException:  # as an interpreter would: the traceback on stderr, status 1
        traceback.print_exc()
        return 1


def _watch(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the watcher: fork the client, tell the launcher its pid, then its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        code = _run_client(request, fds)
        sys.stdout.flush()
        sys.stderr.flush()
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
        if readable and not conn.recv(1):  # the launcher is gone: so is its client
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return


def serve(path: str) -> None:
    """Import the client, then fork a watcher per connection until SIGTERM."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import client  # noqa: F401 - the import every fork shares

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        request, fds = _receive_request(conn)
        if os.fork() == 0:
            listener.close()
            try:
                _watch(conn, request, fds)
            finally:
                os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)


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
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(launch(sys.argv[1], ["client.py", *sys.argv[2:]]))
