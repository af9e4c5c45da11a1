"""Each stdio server's stderr goes to its own sink: a logger and a tail kept for error messages.

`telling_line` picks the line of a tail that says what went wrong: the error, not the summary a
tool prints after it (npm's "A complete log of this run can be found in: ...").
"""

from __future__ import annotations

import collections
import logging
import os
import re
from collections.abc import Callable, Sequence
from typing import IO

import anyio

TAIL_LINES = 20  # stderr lines kept per server for error messages and status
MAX_LINE_CHARS = 2000  # a longer line is cut in the tail (a flood must not grow memory)
READ_CHUNK_BYTES = 65536

# A line that ends an exception's report: Python's last traceback line, Node's uncaught error.
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Warning)\b(?::|$)")
# A line that says something failed (npm's `npm error` and `npm ERR!`, uv's `error:` and `×`, ...).
_ERROR_LINE = re.compile(
    r"(?i)\b(?:error|err!|fatal|panic|failed|failure|not found|no such|cannot|can't|could not|unable|denied|"
    r"refused|invalid|missing)\b|^\s*×"
)
# Lines a tool prints after its error that say nothing of it.
_SUMMARY_LINE = re.compile(
    r"(?i)a complete log of this run can be found|^\s*(?:npm (?:error|ERR!)\s*)?(?:\d{3}|code|errno)?\s*$|"
    r"note that you can also install from a|tarball, folder, http url, or git url|run with --verbose|"
    r"for more information, try|to see a stack trace|^\s*node\.js v\d"
)
# A warning is not the error, whatever it mentions (npx's "package was not found and will be installed").
_WARNING_LINE = re.compile(r"(?i)^\s*(?:npm warn\b|warn(?:ing)?\b)")
# A line that only labels the error that follows it (npm's `code E404`, `errno ETIMEDOUT`).
_LABEL_LINE = re.compile(r"(?i)^\s*(?:npm (?:error|ERR!)\s*)?(?:code|errno)\s+\S+\s*$")


def telling_line(tail: Sequence[str]) -> str | None:
    """The line of `tail` (a server's last stderr lines, oldest first) that best says why it failed.

    The last exception line (Python's `ModuleNotFoundError: ...`, Node's `Error: ...`) if there is
    one; else the first line of the last run of error lines that says more than a code
    (`npm error 404 Not Found - GET ...`, before npm's summary); else the last line. None for an
    empty tail.
    """
    lines = [line for line in tail if line.strip()]
    if not lines:
        return None
    said = [line for line in lines if not _SUMMARY_LINE.search(line)]
    exceptions = [line for line in said if _EXCEPTION_LINE.match(line.strip())]
    if exceptions:
        return exceptions[-1]
    run: list[str] = []
    last_run: list[str] = []
    for line in said:
        if _ERROR_LINE.search(line) and not _WARNING_LINE.match(line):
            run.append(line)
            last_run = run
        else:
            run = []
    if last_run:
        return next((line for line in last_run if not _LABEL_LINE.match(line)), last_run[0])
    return said[-1] if said else lines[-1]


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
        self.last_output_at: float | None = None  # `anyio.current_time()` of the last bytes read

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

    def telling_line(self) -> str | None:
        """The line of the tail that best says what went wrong (`telling_line`)."""
        return telling_line(self.tail)

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
                self.last_output_at = anyio.current_time()
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

    def tell(self, on_line: Callable[[str, str], None] | None) -> None:
        """Who hears each line from now on (a sink made before its session's: an early start's)."""
        self._on_line = on_line

    def close_write_end(self) -> None:
        """Drop our copy of the write end so EOF arrives once the child's copies close."""
        if not self.file.closed:
            self.file.close()

    def close(self) -> None:
        self.close_write_end()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
