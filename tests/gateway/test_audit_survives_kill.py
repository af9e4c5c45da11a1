"""An answer from `gateway --stdio` leaves only once its audit record is committed: it is held
back while another connection holds the database's write lock, and when the gateway is killed
with SIGKILL the moment it arrives, its record is in the store when the store is opened again.

A real subprocess (the gateway, and the demo server behind it) spoken to over its pipes in
newline-delimited JSON-RPC, so nothing stands between the answer's arrival and the kill.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, BinaryIO

import aiosqlite
import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpstation.store import DATABASE_FILE_NAME, Store

PY = sys.executable
SESSION_TIMEOUT_S = 240.0  # a gateway's first start (store created, server spawned) on a loaded 2-core machine
CALLS = 3
MAX_LINE = 1 << 20
HELD_S = 0.5  # how long the last answer is watched for while its record cannot be written (< AUDIT_WAIT_S)

pytestmark = pytest.mark.anyio


def children_of(pid: int) -> list[int]:
    """Pids whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def log_file(path: Path) -> BinaryIO:
    """Where the gateway's stderr goes (read when the test fails)."""
    return path.open("wb")


async def send(process: Process, message: dict[str, Any]) -> None:
    assert process.stdin is not None
    await process.stdin.send(json.dumps(message).encode() + b"\n")


async def call(process: Process, n: int) -> None:
    await send(process, {
        "jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "mcp_d_add", "arguments": {"a": n, "b": 1000}},
    })  # fmt: skip


async def answer_to(lines: BufferedByteReceiveStream, request_id: int) -> dict[str, Any]:
    """The response to `request_id`, skipping notifications and requests the gateway sends."""
    while True:
        message = json.loads(await lines.receive_until(b"\n", MAX_LINE))
        if message.get("id") == request_id and "method" not in message:
            return dict(message)


async def test_an_answered_calls_record_survives_a_kill_right_after_the_answer(tmp_path: Path) -> None:
    config = tmp_path / "mcpstation.toml"
    demo = json.dumps(["-m", "mcpstation.testing.demo_server"])
    config.write_text(f'[station]\nnaming = "prefix"\n\n[servers.d]\ncommand = "{PY}"\nargs = {demo}\n')
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
        "MCPSTATION_DATA_DIR": str(tmp_path / "data")
    }
    argv = [PY, "-m", "mcpstation", "-c", str(config), "gateway", "--stdio"]
    answers: list[dict[str, Any]] = []
    with log_file(tmp_path / "gateway.log") as log, anyio.fail_after(SESSION_TIMEOUT_S):
        process = await anyio.open_process(argv, env=env, stderr=log, start_new_session=True)
        upstream: list[int] = []
        killed = False
        try:
            assert process.stdout is not None
            lines = BufferedByteReceiveStream(process.stdout)
            await send(process, {
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "test", "version": "1"}},
            })  # fmt: skip
            assert "result" in await answer_to(lines, 0)
            await send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            for n in range(1, CALLS):
                await call(process, n)
                answers.append(await answer_to(lines, n))
            # The last answer is held back while its record cannot be committed.
            async with aiosqlite.connect(tmp_path / "data" / DATABASE_FILE_NAME) as blocker:
                await blocker.execute("BEGIN IMMEDIATE")  # the write lock; readers go on (WAL)
                await call(process, CALLS)
                with anyio.move_on_after(HELD_S):
                    answers.append(await answer_to(lines, CALLS))
                assert len(answers) == CALLS - 1, "answered before its audit record was committed"
                await blocker.rollback()
            answers.append(await answer_to(lines, CALLS))
            upstream = children_of(process.pid)
            process.send_signal(signal.SIGKILL)  # at once: no shutdown, no drain
            killed = True
        finally:
            # Never signalled twice: a second signal (as `kill()` sends) polls the child first, and
            # a poll that reaps the killed child before asyncio's watcher does makes asyncio report
            # "Unknown child process", status 255, instead of the SIGKILL.
            if not killed:
                process.kill()
            await process.wait()
            for pid in upstream or children_of(process.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            await process.aclose()
    assert process.returncode == -signal.SIGKILL
    assert [a["result"]["content"][0]["text"] for a in answers] == [str(n + 1000) for n in range(1, CALLS + 1)]

    async with await Store.open(data_dir=tmp_path / "data") as store:
        calls = [c for c in await store.list_calls() if c.kind == "tools/call"]
    assert [(c.server, c.tool, str(c.outcome)) for c in calls] == [("d", "add", "ok")] * CALLS
    assert all(c.caller == "local" for c in calls)
