"""Each stdio server's stderr goes to its own sink: a logger and a tail kept for error messages."""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Callable
from typing import IO

import anyio

TAIL_LINES = 20  # stderr lines kept per server for error messages and status
MAX_LINE_CHARS = 2000  # a longer line is cut in the tail (a flood must not grow memory)
READ_CHUNK_BYTES = 65536


class StderrSink:
    """A pipe whose write end is the child's fd 2 and whose read end we drain, without threads.

    `file` is handed to the stdio transport as `TransportContext.errlog` (it becomes the child's
    fd 2). `drain` must run in a task for as long as the child may write, or the child blocks on
    a full pipe.
    """

    def __init__(self, server: str, on_line: Callable[[str, str], None] | None = None) -> None:
        self.server = server
        self._on_line = on_line
        self.logger = logging.getLogger(f"mcpstation.server.{server}")
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._partial = ""
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd = read_fd
        self.file: IO[str] = os.fdopen(write_fd, "w")
        self.pipe_inode = os.fstat(write_fd).st_ino
        self.bytes_seen = 0

    @property
    def tail(self) -> list[str]:
        """The last lines the server wrote, oldest first."""
        lines = list(self._tail)
        if self._partial:
            lines.append(self._partial[:MAX_LINE_CHARS])
        return lines[-TAIL_LINES:]

    def last_line(self) -> str | None:
        tail = self.tail
        return tail[-1] if tail else None

    async def drain(self) -> None:
        """Read until every holder of the write end has closed it, or until cancelled."""
        try:
            while True:
                await anyio.wait_readable(self._read_fd)
                try:
                    chunk = os.read(self._read_fd, READ_CHUNK_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                self._feed(chunk.decode(errors="replace"))
        finally:
            self._flush_partial()

    def _feed(self, text: str) -> None:
        self.bytes_seen += len(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if len(self._partial) > MAX_LINE_CHARS:
            self._partial = self._partial[:MAX_LINE_CHARS]
        for line in lines:
            line = line.rstrip("\r")[:MAX_LINE_CHARS]
            if line:
                self._tail.append(line)
                self.logger.debug("%s", line)
                if self._on_line is not None:
                    self._on_line(self.server, line)

    def _flush_partial(self) -> None:
        if self._partial:
            self._tail.append(self._partial)
            self.logger.debug("%s", self._partial)
            self._partial = ""

    def close_write_end(self) -> None:
        """Drop our copy of the write end so EOF arrives once the child's copies close."""
        if not self.file.closed:
            self.file.close()

    def close(self) -> None:
        self.close_write_end()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
