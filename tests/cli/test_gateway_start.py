"""`gateway --stdio` answers from the catalog cache before its servers are up: they start in the
background, and a call to one still starting waits for it. A real subprocess, driven by the SDK.

The gateway runs under `PY` (a fork of an interpreter that has imported the station: the process's
start-up is not the subject, its cache and its waiting are); the counted server, a script, runs
under the real interpreter."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from fork_server import interpreter
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

PY = sys.executable
COUNTED = Path(__file__).with_name("counted_server.py")
SESSION_TIMEOUT_S = 240.0  # a gateway and its server on a loaded 2-core machine
POLL_S = 0.05  # how often the test looks for the server's start

pytestmark = pytest.mark.anyio


def gateway(root: Path) -> StdioServerParameters:
    """The gateway for one counted server, `a`, whose start waits for the file `gate`."""
    args = [str(COUNTED), str(root / "a.starts"), str(root / "a.tools"), str(root / "gate")]
    config = root / "mcpstation.toml"
    config.write_text(f'[station]\nnaming = "prefix"\n\n[servers.a]\ncommand = "{PY}"\nargs = {json.dumps(args)}\n')
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
        "MCPSTATION_DATA_DIR": str(root / "data")
    }
    return StdioServerParameters(
        command=interpreter(), args=["-m", "mcpstation", "-c", str(config), "gateway", "--stdio"], env=env
    )


def starts(root: Path) -> int:
    path = root / "a.starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_gateway_answers_from_the_cache_while_its_server_starts_and_a_call_waits(tmp_path: Path):
    (tmp_path / "a.tools").write_text("add sub")
    params = gateway(tmp_path)
    (tmp_path / "gate").touch()
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(params) as client:  # never listed: the gateway waits for it, as before
            assert {t.name for t in (await client.list_tools()).tools} == {"mcp_a_add", "mcp_a_sub"}
    (tmp_path / "gate").unlink()  # from now on the server's start waits

    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(params) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == {"mcp_a_add", "mcp_a_sub"}  # from the cache: the server is not up
            assert not (tmp_path / "gate").exists()
            async with anyio.create_task_group() as group:
                answers: list[str] = []

                async def call() -> None:
                    result = await client.call_tool("mcp_a_add", {})
                    answers.append(result.content[0].text)  # type: ignore[union-attr]

                group.start_soon(call)
                while starts(tmp_path) < 2:  # noqa: ASYNC110  # a file, not an event: the start under way
                    await anyio.sleep(POLL_S)
                assert answers == []
                (tmp_path / "gate").touch()
            assert answers == ["ran add"]  # the call waited for the start; it did not fail
    assert starts(tmp_path) == 2


async def test_a_second_gateway_lists_before_its_store_is_open_and_a_store_it_cannot_open_ends_it(tmp_path: Path):
    (tmp_path / "a.tools").write_text("add sub")
    (tmp_path / "gate").touch()
    params = gateway(tmp_path)
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(params) as client:  # the first gateway on this input keeps its lists
            assert {t.name for t in (await client.list_tools()).tools} == {"mcp_a_add", "mcp_a_sub"}
    assert len(list((tmp_path / "data" / "gateway-lists").glob("*.json"))) == 1

    for stale in ("mcpstation.db", "mcpstation.db-wal", "mcpstation.db-shm"):
        (tmp_path / "data" / stale).unlink(missing_ok=True)
    (tmp_path / "data" / "mcpstation.db").write_bytes(b"not a database, " * 512)
    errors = tmp_path / "gateway.err"
    with anyio.fail_after(SESSION_TIMEOUT_S), errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == {"mcp_a_add", "mcp_a_sub"}  # answered without the store
            with pytest.raises(MCPError):  # the store cannot open: the gateway ends, saying why
                await client.call_tool("mcp_a_add", {})
    said = errors.read_text()
    assert "StoreError: cannot open the store" in said and "Traceback" not in said
    assert starts(tmp_path) == 1  # the second gateway started no server

    shutil.rmtree(tmp_path / "data" / "gateway-lists")  # no lists kept: the store is opened first
    with anyio.fail_after(SESSION_TIMEOUT_S), errors.open("w") as errlog:
        with pytest.raises(ExceptionGroup) as failed:  # the handshake itself finds the pipe closed
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
    assert failed.group_contains(MCPError)
    said = errors.read_text()
    assert "StoreError: cannot open the store" in said and "Traceback" not in said
