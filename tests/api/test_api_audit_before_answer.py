"""Over a real socket, an answer from the HTTP API or the gateway leaves only once its audit record is stored.

The station's audit writer is blocked for real: another connection holds the SQLite file's write
lock. A call through either face then runs to its end (the tool says so), but its answer is held
back until the lock goes; once it arrives, its record is in the store. The wait bound is raised to
an hour, so an answer arriving while the lock is held would not have waited for its record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite
import anyio
import pytest
from api_helpers import START_TIMEOUT_S, RunningApi, running_api
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from station_helpers import inproc

from mcpstation.pipeline import audit
from mcpstation.store import DATABASE_FILE_NAME

pytestmark = pytest.mark.anyio

GRACE_S = 0.5  # how long an answer is watched for once its tool has run, while the writer is blocked
FOREVER_S = 3600.0


class Adder:
    """An in-process server whose `add` tool says when it has run."""

    def __init__(self) -> None:
        self.ran = anyio.Event()
        self.server = MCPServer("adder")

        @self.server.tool()
        async def add(a: int, b: int) -> str:
            self.ran.set()
            return str(a + b)


async def through_api(api: RunningApi, a: int) -> str:
    async with api.client("user") as user:
        response = await user.post("/api/mcp/tools/mcp_adder_add/call", json={"a": a, "b": 1})
    assert response.status_code == 200, response.text
    return str(response.json()["text"])


async def through_gateway(api: RunningApi, a: int) -> str:
    async with api.client("user") as http:
        async with Client(streamable_http_client(f"{api.url}/mcp", http_client=http)) as client:
            result = await client.call_tool("mcp_adder_add", {"a": a, "b": 1})
    assert not result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize("face", [through_api, through_gateway], ids=["api", "gateway"])
async def test_the_answer_waits_for_its_audit_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, face: Callable[[RunningApi, int], Awaitable[str]]
) -> None:
    monkeypatch.setattr(audit, "AUDIT_WAIT_S", FOREVER_S)
    adder = Adder()
    answers: list[str] = []
    with anyio.fail_after(START_TIMEOUT_S * 2):
        async with running_api(tmp_path, [inproc("adder", server=adder.server)]) as api:
            # Once first: the token's use is noted now, not while the writer is blocked below.
            assert await face(api, 0) == "1"
            adder.ran = anyio.Event()

            async def call() -> None:
                answers.append(await face(api, 41))

            async with aiosqlite.connect(tmp_path / DATABASE_FILE_NAME) as blocker:
                await blocker.execute("BEGIN IMMEDIATE")  # the write lock; readers go on (WAL)
                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    await adder.ran.wait()
                    await anyio.sleep(GRACE_S)
                    assert answers == []  # the tool has answered; the station holds the answer back
                    await blocker.rollback()
            assert answers == ["42"]
            newest = (await api.store.list_calls(limit=1))[0]  # read at once: stored before the answer left
            assert (newest.server, newest.tool, newest.outcome) == ("adder", "add", "ok")
