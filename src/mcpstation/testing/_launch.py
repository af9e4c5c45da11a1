"""Start the test servers as real subprocesses: stdio parameters, or an HTTP server and its URL."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import StdioServerParameters

from mcpstation.testing import _rogue

READY_TIMEOUT_S = 30.0  # time a demo server gets to print its `listening on` line
STOP_GRACE_S = 5.0  # time a server gets to exit after SIGTERM before SIGKILL
MAX_STDERR_LINE_BYTES = 64 * 1024
STDERR_TAIL_LINES = 50
READY_PREFIX = "listening on "

NetworkTransport = Literal["http", "sse", "ws"]


def _module_params(module: str, args: Sequence[str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", module, *args])


def demo_server_params(*, name: str = "demo", startup_delay_s: float = 0.0) -> StdioServerParameters:
    """Parameters that start the demo server over stdio."""
    return _module_params("mcpstation.testing.demo_server", ["--name", name, "--startup-delay", str(startup_delay_s)])


def paged_server_params(*args: str) -> StdioServerParameters:
    """Parameters that start the paged server with `args`, e.g. `"--tools", "7", "--page-size", "3"`."""
    return _module_params("mcpstation.testing.paged_server", args)


def chaos_server_params(mode: str, *args: str) -> StdioServerParameters:
    """Parameters that start the chaos server in `mode` (see `mcpstation.testing.chaos_server`)."""
    return _module_params("mcpstation.testing.chaos_server", [mode, *args])


def rogue_server_params(mode: str, *args: str) -> StdioServerParameters:
    """Parameters that start one of the chaos server's byte-level modes (`_rogue.ROGUE_MODES`).

    Runs the stdlib-only module as a script, so it starts in milliseconds instead of importing
    the SDK; `python -m mcpstation.testing.chaos_server MODE` runs the same server.
    """
    if mode not in _rogue.ROGUE_MODES:
        raise ValueError(f"unknown rogue mode {mode!r}; expected one of {', '.join(_rogue.ROGUE_MODES)}")
    return StdioServerParameters(command=sys.executable, args=[_rogue.__file__, mode, *args])


@dataclass
class RunningServer:
    """A demo server subprocess serving `url`; `stderr_tail` holds its latest stderr lines."""

    url: str
    pid: int
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))


@asynccontextmanager
async def serve_demo(
    transport: NetworkTransport,
    *,
    name: str = "demo",
    startup_delay_s: float = 0.0,
    ready_timeout_s: float = READY_TIMEOUT_S,
    port: int = 0,
) -> AsyncIterator[RunningServer]:
    """Start `python -m mcpstation.testing.demo_server --transport ... --port PORT` and yield its URL.

    `port` 0 (the default) picks a free one.

    The server's stderr is drained for as long as it runs; on exit it gets SIGTERM, then SIGKILL
    after `STOP_GRACE_S`.

    Raises:
        RuntimeError: the server exited before announcing its URL (message has its stderr tail).
        TimeoutError: it did not announce within `ready_timeout_s` (plus the startup delay).
    """
    command = [
        sys.executable, "-m", "mcpstation.testing.demo_server",
        "--transport", transport, "--port", str(port), "--name", name, "--startup-delay", str(startup_delay_s),
    ]  # fmt: skip
    process = await anyio.open_process(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        stderr = BufferedByteReceiveStream(process.stderr)
        tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        with anyio.fail_after(ready_timeout_s + startup_delay_s):
            url = await _read_url(stderr, tail, command)
        running = RunningServer(url=url, pid=process.pid, stderr_tail=tail)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, stderr, tail)
            try:
                yield running
            finally:
                tg.cancel_scope.cancel()
    finally:
        await _stop(process)


async def _read_url(stderr: BufferedByteReceiveStream, tail: deque[str], command: list[str]) -> str:
    while True:
        try:
            line = (await stderr.receive_until(b"\n", MAX_STDERR_LINE_BYTES)).decode(errors="replace")
        except (anyio.EndOfStream, anyio.IncompleteRead):
            shown = "\n".join(tail) or "(empty)"
            raise RuntimeError(f"{' '.join(command)} exited before it was ready; stderr:\n{shown}") from None
        tail.append(line)
        if line.startswith(READY_PREFIX):
            return line.removeprefix(READY_PREFIX).strip()


async def _drain(stderr: BufferedByteReceiveStream, tail: deque[str]) -> None:
    while True:
        try:
            line = await stderr.receive_until(b"\n", MAX_STDERR_LINE_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return
        except anyio.DelimiterNotFound:
            line = await stderr.receive_exactly(MAX_STDERR_LINE_BYTES)
        tail.append(line.decode(errors="replace"))


async def _stop(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            with anyio.move_on_after(STOP_GRACE_S):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.aclose()
