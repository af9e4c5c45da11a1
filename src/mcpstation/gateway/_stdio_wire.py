"""The gateway's stdin and stdout as message streams, read and written on the event loop.

The SDK's `stdio_server` reads each line and writes each answer through a worker thread (three
thread hops per call). Here stdin is read when the event loop says it is readable and answers are
written with `os.write` on a non-blocking descriptor, so a call costs no thread hop. As in the SDK,
while serving, descriptor 0 reads the null device and descriptor 1 writes to stderr, so child
processes and stray prints never touch the protocol; both are put back on exit.

Only pipes and sockets can be watched by the event loop; for anything else (a file, a terminal)
and off Linux, `stdio_streams` is the SDK's `stdio_server`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

MAX_LINE_BYTES = 64 * 1024 * 1024  # a downstream request longer than this is refused, not held
READ_CHUNK = 256 * 1024

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """Messages from stdin and to stdout until stdin closes (see the module's docstring)."""
    if sys.platform != "linux" or not (_watchable(0) and _watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        os.set_blocking(wire_in, False)
        os.set_blocking(wire_out, False)
        incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
        reading = anyio.CancelScope()

        async def read() -> None:
            with reading, contextlib.suppress(anyio.BrokenResourceError):  # the server stopped reading first
                await _read(wire_in, incoming_send)

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(_write, wire_out, outgoing_receive)  # ends once `outgoing` closes
            try:
                yield incoming, outgoing
            finally:
                outgoing.close()
                reading.cancel()
    finally:  # put the wire back, whatever of the diversion happened
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
        with contextlib.suppress(OSError):
            os.dup2(wire_out, 1)
        os.set_blocking(wire_in, True)
        os.set_blocking(wire_out, True)
        os.close(wire_in)
        os.close(wire_out)


async def _read(fd: int, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """Lines from `fd` as messages (or the error that parsing one raised) until end of file."""
    pending = bytearray()
    skipping = False  # inside a line over the cap: dropped up to its newline
    async with send:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                return
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                line = bytes(pending[start:end])
                start = end + 1
                if skipping:
                    skipping = False
                    continue
                if line.strip():
                    await send.send(_parse(line))
            del pending[:start]
            if len(pending) > MAX_LINE_BYTES:
                pending.clear()
                if not skipping:
                    skipping = True
                    await send.send(ValueError(f"a message over {MAX_LINE_BYTES} bytes was dropped"))


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # boundary: the session answers a malformed message, as the SDK's transport
        return exc


async def _write(fd: int, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    """Each message as one JSON line on `fd`, waiting while the pipe is full."""
    async with receive:
        async for message in receive:
            data = memoryview((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())
            while data:
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(fd)
                except OSError as exc:
                    if exc.errno == errno.EPIPE:
                        return  # the client went away; stdin's end of file ends the session
                    raise
