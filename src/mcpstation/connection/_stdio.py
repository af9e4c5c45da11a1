"""Our stdio transport: a server subprocess spoken to over its stdin and stdout, bounded and cheap.

`stdio_transport(params, server=...)` is an async context manager yielding the SDK's stream pair,
so `Client(stdio_transport(...), mode=...)` negotiates either protocol era unchanged. It replaces
the SDK's `stdio_client`, which can be neither bounded nor made cheap:

- Spawn (`_launch.spawn`): the server runs in its own session and process group, with stdin and
  stdout as pipes of ours (made non-blocking; no threads, no stream layers) and stderr on `errlog`.
- Read: chunks straight from the pipe, split into lines by `LineFramer` at `max_message_bytes`
  (a longer line is never held whole), sorted by `Inbound` (answers first, floods bounded,
  answers matched to requests in flight). A line that goes on past `ENDLESS_LINE_FACTOR` caps
  or `ENDLESS_LINE_S` fails the requests in flight and ends the session: nothing after it can
  be framed. A server over its notification budget is read in small chunks and no faster than
  its stdout pipe drains in `FLOOD_ANSWER_DELAY_S`: its answers still arrive within that time,
  and otherwise it waits on its own full pipe, so a flood costs the flooder, not its neighbours.
- Write: `PipeWriter.send` encodes and writes in the caller's task with one `os.write`; only a
  message the pipe cannot take whole leaves its rest to the writer task, and the next sender
  waits for it (back-pressure, as the SDK's zero-buffer stream gives).
- Supervise: the process itself is watched (a pidfd on Linux), not stdout: when it exits while
  a grandchild still holds stdout, the read stream ends within `EXIT_EOF_GRACE_S` (the session
  fails what is pending) and the rest of the process group is ended.
- Stop, as the SDK does, shielded and bounded: close stdin, `STOP_GRACE_S` to exit, SIGTERM to
  the process group, `TERM_GRACE_S`, SIGKILL; then whatever is left of the group goes the same way.

POSIX only (the station's stdio servers run on Linux and macOS).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import logging
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import IO

import anyio
import anyio.lowlevel
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

from mcpstation.connection._framing import LineFramer, Oversized
from mcpstation.connection._inbound import Inbound
from mcpstation.connection._lanes import InboundStream
from mcpstation.connection._launch import Launch, default_environment, spawn
from mcpstation.connection._wire import encode_message
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, InboundLimits
from mcpstation.connection.stats import CloseReason, TransportStats

logger = logging.getLogger(__name__)

READ_CHUNK_BYTES = 64 * 1024  # one read from the server's stdout
FLOOD_READ_CHUNK_BYTES = 4 * 1024  # one read from a server over its notification budget: a short loop turn
FLOOD_ANSWER_DELAY_S = 0.25  # while a server floods, we read it no faster than its full pipe drains in this time
FLOOD_WINDOW_S = 0.05  # the flood read rate is measured over windows this long
ENDLESS_LINE_FACTOR = 8  # a line this many caps long without a newline ends the session
ENDLESS_LINE_S = 2.0  # so does a line still unfinished this long after crossing the cap
EXIT_EOF_GRACE_S = 0.2  # after the process exits, time for its last output to arrive
STOP_GRACE_S = 2.0  # time the server gets to exit after its stdin closes (the SDK's figure)
TERM_GRACE_S = 2.0  # time between SIGTERM and SIGKILL to the process group
KILL_REAP_S = 2.0  # time for a killed process to be reaped before we give up on it
WRITER_FLUSH_S = 0.5  # time to finish writing accepted messages when the session closes
EXIT_POLL_S = 0.02  # how often to look for the exit while stopping, or always without a pidfd (not Linux)
MAX_QUEUED_REPLIES = 256  # refusals the transport sends itself, waiting for the server to read them

__all__ = ["PipeWriter", "stdio_transport"]


class PipeWriter:
    """The session's write stream (the SDK's `WriteStream[SessionMessage]`) onto the server's stdin."""

    def __init__(self, fd: int, inbound: Inbound) -> None:
        self._fd = fd
        self._inbound = inbound
        self._rest: memoryview | None = None  # what the pipe has not taken yet of the message going out
        self._replies: collections.deque[bytes] = collections.deque()
        self._work = anyio.Event()
        self._drained = anyio.Event()
        self._closed = False
        self._broken: OSError | None = None

    @property
    def busy(self) -> bool:
        return self._rest is not None or bool(self._replies)

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        while self.busy and self._broken is None:
            await self._drained.wait()
            if self._closed:
                raise anyio.ClosedResourceError
        if self._broken is not None:
            raise anyio.BrokenResourceError from self._broken
        # Noted before the bytes go out (the answer may be read before we run again), under its wire id.
        message = self._inbound.outbound(item.message)
        self._write(memoryview(encode_message(message) + b"\n"))
        if self._broken is not None:
            raise anyio.BrokenResourceError from self._broken

    def queue_reply(self, data: bytes) -> bool:
        """Send `data` (one message) when the pipe allows; False when too many are waiting."""
        if self._closed or self._broken is not None:
            return False
        if not self.busy:
            self._write(memoryview(data + b"\n"))  # the pipe usually has room: out at once, from the reader
            return self._broken is None
        if len(self._replies) >= MAX_QUEUED_REPLIES:
            return False
        self._replies.append(data + b"\n")
        return True

    def _write(self, data: memoryview) -> None:
        try:
            written = os.write(self._fd, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            self._fail(exc)
            return
        if written < len(data):
            self._rest = data[written:]
            self._work.set()

    def _fail(self, exc: OSError) -> None:
        if self._broken is None:
            self._broken = exc
            self._rest = None
            self._replies.clear()
            self._inbound.end(CloseReason.BROKEN, f"writing to the server's stdin failed: {exc}")
        self._release()

    def _release(self) -> None:
        drained, self._drained = self._drained, anyio.Event()
        drained.set()

    async def run(self) -> None:
        """Write what `send` and `queue_reply` left over, whenever the pipe has room."""
        while self._broken is None:
            await self._work.wait()
            self._work = anyio.Event()
            while self._broken is None and (self._rest is not None or self._replies):
                if self._rest is None:
                    self._write(memoryview(self._replies.popleft()))
                    continue
                rest = self._rest
                self._rest = None
                self._write(rest)
                if self._rest is not None:
                    try:
                        await anyio.wait_writable(self._fd)
                    except anyio.ClosedResourceError:
                        return
            self._release()

    async def flushed(self) -> None:
        while self.busy and self._broken is None:
            await self._drained.wait()

    async def aclose(self) -> None:
        self._closed = True
        self._release()
        await anyio.lowlevel.checkpoint()

    async def __aenter__(self) -> PipeWriter:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters,
    *,
    server: str,
    limits: InboundLimits | None = None,
    errlog: IO[str] | None = None,
    on_process: Callable[[int], None] | None = None,
    stats: TransportStats | None = None,
    process: subprocess.Popen[bytes] | None = None,
) -> AsyncIterator[tuple[InboundStream, PipeWriter]]:
    """Spawn the server `params` describes and yield `(read_stream, write_stream)` for an SDK session.

    `server` names it in errors and logs. `errlog` (a real file: it becomes the child's fd 2)
    receives its stderr; None inherits ours. `on_process` learns the pid as soon as it runs;
    `stats` collects what was dropped, refused or cut, and why the stream ended. `process` is
    that server already spawned by `_launch.spawn` for exactly `params` and `errlog` (an early
    start): it is adopted, stopped and reaped as if spawned here.

    Raises:
        FileNotFoundError, PermissionError: the command cannot be run.
    """
    limits = limits or InboundLimits()
    stats = stats if stats is not None else TransportStats()
    if process is None:
        env = default_environment() | (params.env or {})
        process = spawn(Launch(params.command, tuple(params.args), env, _folder(params.cwd)), errlog)
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None
    pidfd = _open_pidfd(process.pid)
    try:
        stats.pid = process.pid
        inbound = Inbound(server, limits, stats, lambda data: writer.queue_reply(data))
        writer = PipeWriter(stdin.fileno(), inbound)
        stdout_done = anyio.Event()
        if on_process is not None:
            on_process(process.pid)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, stdout.fileno(), inbound, stdout_done)
            tg.start_soon(writer.run)
            tg.start_soon(_watch, process, pidfd, inbound, stdout_done)
            try:
                yield inbound.stream, writer
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, writer, stdin.fileno())
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _release(process, pidfd)


def _folder(cwd: str | os.PathLike[str] | None) -> str | None:
    return None if cwd is None else os.fspath(cwd)


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


# -- reading -----------------------------------------------------------------------------------------


class _StdoutReader:
    """Frames and sorts what the server writes, one chunk per `read_once`, until it returns False."""

    def __init__(self, fd: int, inbound: Inbound) -> None:
        self.fd = fd
        self.inbound = inbound
        self.cap = inbound.limits.max_message_bytes
        self.framer = LineFramer(self.cap)
        self._handled = False  # the oversized line being discarded already had its request answered
        self._crossed_at = 0.0
        # A flooding server is read at most this fast: an answer it writes behind a full pipe
        # still arrives within FLOOD_ANSWER_DELAY_S, and the rest of the time the flooder waits
        # on its own pipe instead of taking CPU from everything else on the machine.
        self.flood_bytes_per_window = int(_pipe_capacity(fd) / FLOOD_ANSWER_DELAY_S * FLOOD_WINDOW_S)
        self._window_start = 0.0
        self._window_bytes = 0
        self.pause_s = 0.0  # after read_once: how long to leave the pipe alone (flood control)

    @property
    def deadline(self) -> float | None:
        """When the line being discarded counts as endless, if one is."""
        return None if self.framer.discarding is None else self._crossed_at + ENDLESS_LINE_S

    def read_once(self) -> bool:
        """Read and sort one chunk; False once the stream has ended (EOF, endless line, error)."""
        try:
            chunk = os.read(self.fd, FLOOD_READ_CHUNK_BYTES if self.inbound.flooding else READ_CHUNK_BYTES)
        except BlockingIOError:
            return self.check_deadline()
        except OSError as exc:
            self.inbound.end(CloseReason.BROKEN, f"reading the server's stdout failed: {exc}")
            return False
        if not chunk:
            self.inbound.end(CloseReason.EOF, "the server closed its stdout")
            return False
        self._pace(len(chunk))
        inbound = self.inbound
        for item in self.framer.feed(chunk):
            if type(item) is bytes:
                inbound.feed(item)
            elif isinstance(item, Oversized) and not item.complete:
                self._crossed_at = time.monotonic()
                self._handled = inbound.oversized(item, handled=False)
            elif isinstance(item, Oversized):
                inbound.oversized(item, handled=self._handled)
                self._handled = False
        discarding = self.framer.discarding
        if discarding is not None and discarding.size > ENDLESS_LINE_FACTOR * self.cap:
            _endless(inbound, discarding, f"more than {ENDLESS_LINE_FACTOR} times the cap without a newline")
            return False
        return self.check_deadline()

    def _pace(self, size: int) -> None:
        self.pause_s = 0.0
        if not self.inbound.over_budget():
            return
        now = time.monotonic()
        if now - self._window_start >= FLOOD_WINDOW_S:
            self._window_start, self._window_bytes = now, 0
        self._window_bytes += size
        if self._window_bytes >= self.flood_bytes_per_window:
            self.pause_s = self._window_start + FLOOD_WINDOW_S - now

    def check_deadline(self) -> bool:
        deadline = self.deadline
        if deadline is not None and time.monotonic() >= deadline:
            _endless(self.inbound, self.framer.discarding, f"no end {ENDLESS_LINE_S:g} s after it crossed the cap")
            return False
        return True


async def _read(fd: int, inbound: Inbound, done: anyio.Event) -> None:
    """Read the server's stdout until EOF, an endless line or a read error; then set `done`."""
    reader = _StdoutReader(fd, inbound)
    try:
        loop = _running_asyncio_loop()
        if loop is not None:
            await _read_by_callback(loop, reader)
        else:
            await _read_by_waiting(reader)
    except anyio.ClosedResourceError:
        pass  # our own shutdown closed stdout under the wait
    finally:
        done.set()


async def _read_by_waiting(reader: _StdoutReader) -> None:
    while True:
        deadline = reader.deadline
        with anyio.move_on_after(math.inf if deadline is None else max(0.0, deadline - time.monotonic())):
            await anyio.wait_readable(reader.fd)
        if not reader.read_once():
            return
        if reader.pause_s > 0:
            await anyio.sleep(reader.pause_s)
        else:
            await anyio.lowlevel.checkpoint()  # one chunk at a time: other servers' answers get their turn


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another backend (trio)
        return None


async def _read_by_callback(loop: asyncio.AbstractEventLoop, reader: _StdoutReader) -> None:
    """The asyncio fast path: the pipe is read in the loop's reader callback, registered once.

    Saves a task wake-up, two epoll_ctl calls and a failed read per chunk over `wait_readable`,
    like asyncio's own protocols. This task owns the registration, the endless-line clock and the
    pauses flood control asks for.
    """
    wake = anyio.Event()
    ended = False
    failure: list[BaseException] = []

    def on_readable() -> None:
        nonlocal ended
        try:
            more = reader.read_once()
        except BaseException as exc:  # boundary: a bug here must not leave a reader spinning in the loop
            failure.append(exc)
            more = False
        if more and reader.pause_s <= 0:
            return
        ended = not more
        loop.remove_reader(reader.fd)
        wake.set()

    loop.add_reader(reader.fd, on_readable)
    try:
        while True:
            deadline = reader.deadline
            with anyio.move_on_after(math.inf if deadline is None else max(0.0, deadline - time.monotonic())):
                await wake.wait()
            if ended:
                break
            if wake.is_set():  # paused: the flooder waits on its pipe for a moment
                await anyio.sleep(reader.pause_s)
                wake = anyio.Event()
                loop.add_reader(reader.fd, on_readable)
            elif not reader.check_deadline():
                break
    finally:
        loop.remove_reader(reader.fd)
    if failure:
        raise failure[0]


def _pipe_capacity(fd: int) -> int:
    """The pipe's buffer size (Linux can say; elsewhere the common 64 KiB)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            return max(4096, fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    return 64 * 1024


def _endless(inbound: Inbound, line: Oversized | None, why: str) -> None:
    size = line.size if line is not None else 0
    cap = inbound.limits.max_message_bytes
    detail = (
        f"message too large (more than {size:,} bytes > {cap:,} byte cap) from server {inbound.server!r}: "
        f"a line with {why}; the session ends, as nothing after it can be read"
    )
    logger.warning("%s", detail)
    inbound.fail_in_flight(MESSAGE_TOO_LARGE, detail)
    inbound.end(CloseReason.ENDLESS_LINE, detail)


# -- supervising and stopping ----------------------------------------------------------------------------


async def _wait_exit(process: subprocess.Popen[bytes], pidfd: int | None) -> None:
    if pidfd is not None:
        with contextlib.suppress(anyio.ClosedResourceError):
            await anyio.wait_readable(pidfd)
    await _poll_until(lambda: process.poll() is not None, timeout_s=math.inf)


async def _poll_until(done: Callable[[], bool], *, timeout_s: float) -> bool:
    """Whether `done()` came true within `timeout_s`, looking every `EXIT_POLL_S` (no event exists for it)."""
    with anyio.move_on_after(timeout_s):
        while True:
            if done():
                return True
            await anyio.sleep(EXIT_POLL_S)
    return done()


async def _watch(
    process: subprocess.Popen[bytes],
    pidfd: int | None,
    inbound: Inbound,
    stdout_done: anyio.Event,
) -> None:
    """Notice the process's exit from the process; end the session if its stdout outlives it."""
    await _wait_exit(process, pidfd)
    inbound.stats.exit_code = process.returncode
    with anyio.move_on_after(EXIT_EOF_GRACE_S):
        await stdout_done.wait()
    if stdout_done.is_set():
        return
    detail = (
        f"server {inbound.server!r} (pid {process.pid}) exited with code {process.returncode} "
        "while another process still holds its stdout"
    )
    logger.warning("%s; ending the session and its process group", detail)
    inbound.end(CloseReason.PROCESS_EXITED, detail)
    await _end_group(process.pid)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _end_group(pgid: int) -> None:
    """SIGTERM what is left of the process group, SIGKILL it after `TERM_GRACE_S`."""
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    if not await _poll_until(lambda: not _group_alive(pgid), timeout_s=TERM_GRACE_S):
        _signal_group(pgid, signal.SIGKILL)


async def _stop(process: subprocess.Popen[bytes], writer: PipeWriter, stdin_fd: int) -> None:
    """Close stdin, give the server `STOP_GRACE_S`, then SIGTERM and SIGKILL its process group.

    Watches the process itself (the exit watcher may have been cancelled with everything else)
    and keeps draining stdout meanwhile, so a server blocked writing can see its stdin close.
    """
    await writer.aclose()
    with anyio.move_on_after(WRITER_FLUSH_S):
        await writer.flushed()
    anyio.notify_closing(stdin_fd)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    stdout_fd = process.stdout.fileno()

    def gone() -> bool:
        _discard_output(stdout_fd)
        return process.poll() is not None

    if not await _poll_until(gone, timeout_s=STOP_GRACE_S):
        _signal_group(process.pid, signal.SIGTERM)
        if not await _poll_until(gone, timeout_s=TERM_GRACE_S):
            _signal_group(process.pid, signal.SIGKILL)
            if not await _poll_until(gone, timeout_s=KILL_REAP_S):
                logger.warning("server process %d is still alive after SIGKILL; abandoning it", process.pid)
    await _end_group(process.pid)  # the leader is gone; its group goes too


def _discard_output(fd: int) -> None:
    """Read and drop what the server has written, up to `READ_CHUNK_BYTES` per look."""
    with contextlib.suppress(OSError):
        os.read(fd, READ_CHUNK_BYTES)


async def _release(process: subprocess.Popen[bytes], pidfd: int | None) -> None:
    """Close our pipe ends and the pidfd; reap the process if it is gone (kill it if we got here early)."""
    for pipe in (process.stdin, process.stdout):
        if pipe is not None and not pipe.closed:
            anyio.notify_closing(pipe.fileno())
            pipe.close()
    if process.poll() is None:  # the context was left before the task group ran (spawn then cancel)
        _signal_group(process.pid, signal.SIGKILL)
        await _poll_until(lambda: process.poll() is not None, timeout_s=KILL_REAP_S)
    if pidfd is not None:
        anyio.notify_closing(pidfd)
        os.close(pidfd)
