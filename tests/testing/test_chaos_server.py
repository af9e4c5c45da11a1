"""The chaos server's faults show up the way a host will meet them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcpstation.testing import chaos_server_params

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT_S = 30.0


def test_exit_at_start_exits_3_with_a_fatal_line() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mcpstation.testing.chaos_server", "exit-at-start"],
        capture_output=True,
        text=True,
        timeout=CONNECT_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 3
    assert completed.stderr.strip() == "fatal: missing API key"


async def test_crash_on_call_fails_the_call_with_connection_closed() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(chaos_server_params("crash-on-call"), mode="legacy") as client:
            assert (await client.call_tool("ping_me", {})).content[0].text == "pong"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as caught:
                await client.call_tool("boom", {})
    assert caught.value.error.code == types.CONNECTION_CLOSED


async def test_garbage_stdout_is_survived() -> None:
    seen: list[Exception] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            seen.append(message)

    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(chaos_server_params("garbage-stdout"), message_handler=on_message) as client:
            assert (await client.call_tool("ping_me", {})).content[0].text == "pong"  # type: ignore[union-attr]
    assert len(seen) == 2


async def test_big_result_arrives_whole() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(chaos_server_params("big-result", "--mb", "2")) as client:
            result = await client.call_tool("big", {})
    assert len(result.content[0].text) == 2 * 1024 * 1024  # type: ignore[union-attr]


async def test_grandchild_records_its_pid(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(chaos_server_params("grandchild", "--pidfile", str(pidfile))) as client:
            await client.list_tools()
            pid = int(pidfile.read_text())
    # Closing stdin ended the server but not its grandchild: reaping that orphan is the host's job.
    try:
        os.kill(pid, 0)  # still alive
    finally:
        os.kill(pid, signal.SIGKILL)
