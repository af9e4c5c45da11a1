"""Helpers for host tests: specs for the ask server and server-everything, a recording LLM."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _node
import anyio
from anyio.streams.text import TextReceiveStream

from mcpstation import Station
from mcpstation.catalog import CatalogTool
from mcpstation.host import (
    ElicitationAnswer,
    ElicitationRequest,
    SamplingAnswer,
    SamplingRequest,
)

ASK_SERVER = Path(__file__).with_name("ask_server.py")
START_TIMEOUT_S = 60.0  # a whole station start on a loaded machine
TOOL_APPEAR_TIMEOUT_S = 15.0  # capability-gated tools arrive with a list_changed after initialize


def ask(name: str = "ask", **fields: Any) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [str(ASK_SERVER)], **fields}


def everything_stdio(name: str = "everything", **fields: Any) -> dict[str, Any]:
    command, args, env = _node.everything_stdio_command()  # type: ignore[misc]
    return {"name": name, "command": command, "args": args, "env": env, **fields}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def everything_http() -> AsyncIterator[str]:
    port = free_port()
    command, args, env = _node.everything_http_command(port)  # type: ignore[misc]
    process = await anyio.open_process([command, *args], env={**env}, stdout=subprocess.DEVNULL)
    try:
        assert process.stderr is not None
        with anyio.fail_after(30):
            async for chunk in TextReceiveStream(process.stderr):
                if "listening on port" in chunk:
                    break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


POLL_S = 0.02


async def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll `condition` (things no event signals: catalog swaps, log records, a server's start)."""
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110  # nothing to wait on: the condition is someone else's state
            await anyio.sleep(POLL_S)


async def wait_for_tool(station: Station, name: str, timeout_s: float = TOOL_APPEAR_TIMEOUT_S) -> CatalogTool:
    """The tool once the station lists it (gated tools appear after a list_changed and a re-list)."""
    await wait_until(lambda: name in station.catalog.tools, timeout_s)
    return station.catalog.tools[name]


@dataclass
class RecordingLLM:
    """A sampling handler standing in for the host application's LLM; records what it was asked."""

    reply: str = "the host says hi"
    model: str = "host-llm"
    calls: list[tuple[str, SamplingRequest]] = field(default_factory=list)

    async def __call__(self, server: str, request: SamplingRequest) -> SamplingAnswer:
        self.calls.append((server, request))
        return SamplingAnswer(text=self.reply, model=self.model)


@dataclass
class ScriptedPerson:
    """An elicitation handler answering with fixed content; records the requests."""

    answer: ElicitationAnswer = field(default_factory=lambda: ElicitationAnswer.accept({"name": "Ada"}))
    calls: list[tuple[str, ElicitationRequest]] = field(default_factory=list)

    async def __call__(self, server: str, request: ElicitationRequest) -> ElicitationAnswer:
        self.calls.append((server, request))
        return self.answer
