"""The async HTTP client's way onto the running station's control socket: `control_transport`.

httpx2's `uds=` connects through anyio's raw Unix-socket stream, which waits for a readable socket
by handing the event loop `future.set_result` as the reader callback (anyio 4.16 on asyncio). When
the read is cancelled in the same loop pass that found the socket readable, that callback then
sets a result on a cancelled future and the loop reports `InvalidStateError`. The confirming call
cancels its event-stream reader whenever its call ends, while events keep arriving, so a terminal
saw that traceback now and then. Here the same socket is an asyncio transport (anyio's
`SocketStream.from_socket`), which reads through a protocol and has no such callback.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpcore2
import httpx2


def control_transport(path: Path) -> httpx2.AsyncHTTPTransport:
    """An httpx2 transport whose connections go to the Unix socket at `path`."""
    transport = httpx2.AsyncHTTPTransport(uds=str(path))
    # httpx2 takes no network backend; its pool is the one place a connection is made.
    transport._pool = httpcore2.AsyncConnectionPool(uds=str(path), network_backend=_UnixTransportBackend())
    return transport


class _UnixTransportBackend(httpcore2.AnyIOBackend):
    """anyio's backend, with Unix-socket connections as asyncio transports."""

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            with anyio.fail_after(timeout):
                while True:
                    try:
                        sock.connect(path)
                        break
                    except BlockingIOError:  # the listener's backlog is full: wait for room
                        await anyio.wait_writable(sock)
            stream = await anyio.abc.SocketStream.from_socket(sock)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, TimeoutError):  # before OSError, of which it is one
                raise httpcore2.ConnectTimeout(str(exc)) from exc
            if isinstance(exc, OSError):
                raise httpcore2.ConnectError(str(exc)) from exc
            raise
        return _SocketStream(stream, sock)


class _SocketStream(httpcore2.AsyncNetworkStream):
    """One connection, in httpcore2's terms."""

    def __init__(self, stream: anyio.abc.SocketStream, sock: socket.socket) -> None:
        self._stream = stream
        self._socket = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        try:
            with anyio.fail_after(timeout):
                return await self._stream.receive(max_bytes)
        except anyio.EndOfStream:
            return b""
        except TimeoutError as exc:
            raise httpcore2.ReadTimeout(str(exc)) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore2.ReadError(repr(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        try:
            with anyio.fail_after(timeout):
                await self._stream.send(buffer)
        except TimeoutError as exc:
            raise httpcore2.WriteTimeout(str(exc)) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore2.WriteError(repr(exc)) from exc

    async def aclose(self) -> None:
        await self._stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._socket
        if info == "is_readable":  # an idle connection that reads has been closed by the station
            if self._socket.fileno() < 0:
                return True
            poll = select.poll()  # not select(): it cannot take a descriptor above 1023
            poll.register(self._socket, select.POLLIN)
            return bool(poll.poll(0))
        return None
