"""The confirming call's connections to the control socket (`cli/_control_transport.py`): a read
cancelled in the very loop pass that finds data waiting leaves the event loop clean.

Real Unix sockets; the race is made certain rather than hoped for: the peer sends, and the read's
cancellation is queued ahead of the loop's next pass, so that pass finds the socket readable with
the cancel already in line before the reader's callback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpcore2
import pytest

from mcpstation.cli._control_transport import _UnixTransportBackend

pytestmark = pytest.mark.anyio

READ_BYTES = 100
SETTLE_S = 0.05  # a few loop passes for a stray callback to run


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the race is asyncio's selector loop's; trio has no such callback


@contextmanager
def _listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "control.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen()
        yield listener, path
    finally:
        listener.close()


async def _cancel_a_read_as_data_arrives(backend: httpcore2.AsyncNetworkBackend, tmp_path: Path) -> list[Any]:
    """What the loop reported (its exception handler's contexts) while a read on a connection from
    `backend` was cancelled in the pass that found its data."""
    loop = asyncio.get_running_loop()
    reported: list[Any] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        with _listener(tmp_path) as (listener, path):
            stream = await backend.connect_unix_socket(path, timeout=5.0)
            peer, _ = listener.accept()  # the connection waits in the backlog
            try:
                scopes: list[anyio.CancelScope] = []

                async def read() -> None:
                    with anyio.CancelScope() as scope:
                        scopes.append(scope)
                        await stream.read(READ_BYTES)

                async with anyio.create_task_group() as group:
                    group.start_soon(read)
                    await anyio.wait_all_tasks_blocked()
                    peer.send(b"x")
                    loop.call_soon(scopes[0].cancel)  # runs before the next pass's reader callback
                await anyio.sleep(SETTLE_S)
            finally:
                await stream.aclose()
                peer.close()
    finally:
        loop.set_exception_handler(previous)
    return reported


async def test_a_read_cancelled_as_its_data_arrives_leaves_the_loop_clean(tmp_path: Path):
    assert await _cancel_a_read_as_data_arrives(_UnixTransportBackend(), tmp_path) == []


async def test_the_stream_httpx2_would_use_still_reports_the_race(tmp_path: Path):
    """Why the control transport exists. When this fails, anyio has fixed its Unix-socket stream
    and `control_transport` can become httpx2's own `uds=` again."""
    reported = await _cancel_a_read_as_data_arrives(httpcore2.AnyIOBackend(), tmp_path)
    assert [type(context.get("exception")) for context in reported] == [asyncio.InvalidStateError]


async def test_a_missing_socket_is_a_connect_error(tmp_path: Path):
    with pytest.raises(httpcore2.ConnectError):
        await _UnixTransportBackend().connect_unix_socket(str(tmp_path / "nobody.sock"), timeout=5.0)


async def test_a_connection_reads_what_the_peer_sends_and_sees_it_close(tmp_path: Path):
    with _listener(tmp_path) as (listener, path):
        stream = await _UnixTransportBackend().connect_unix_socket(path, timeout=5.0)
        peer, _ = listener.accept()
        try:
            assert stream.get_extra_info("is_readable") is False  # idle and open
            await stream.write(b"ping")
            assert peer.recv(READ_BYTES) == b"ping"
            peer.sendall(b"pong")
            assert await stream.read(READ_BYTES) == b"pong"
            peer.close()
            with anyio.fail_after(5.0):
                assert await stream.read(READ_BYTES) == b""
            assert stream.get_extra_info("is_readable") is True  # closed by its peer: not to be reused
        finally:
            await stream.aclose()
