"""Two `mcpstation up` processes on one SQLite file converge through the change log.

Each `up` has its own config file (its own static server), its own data directory and replica id,
and the same `--db-url sqlite:///...`. A dynamic server added through the first's HTTP API becomes
callable through the second's API and gateway; a token made by the one-shot CLI on the same file,
while both are busy writing audit records, works on both at once; a server disabled through the
second leaves the first's tools. The times are printed (`-s`); the bounds are generous. Neither
process may log "database is locked", a store error or a traceback.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import pytest
from face_helpers import RunningUp, cli, running_up, tiny, toml_config
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from replica_helpers import add_http_server, adds_up, bearer, call, tool_names, within

from mcpstation.testing import serve_demo

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

# The promise is 1 s (SQLite followers read the log every 250 ms); the bound is generous because
# the machine running the tests may be loaded many times over.
FOLLOW_WITHIN_S = 10.0  # a change made through one `up` is in effect on the other within this
CALLS_TIMEOUT_S = 120.0  # the calls made while the CLI runs: its interpreter starting on a loaded machine
FORBIDDEN = ("database is locked", "StoreError", "Traceback")  # in either `up`'s stderr


async def test_two_ups_on_one_sqlite_file_converge(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'store' / 'mcpstation.db'}"
    admin = (await cli(tmp_path, db_url, "token", "create", "--role", "admin", "--name", "ops", "--json"))["token"]
    ups: list[RunningUp] = []
    async with serve_demo("http") as upstream, AsyncExitStack() as stack:
        for index, static in enumerate(("left", "right"), 1):
            home = tmp_path / f"up-{index}"
            home.mkdir()
            config = toml_config(home / "mcpstation.toml", [tiny(static)])
            env = {"MCPSTATION_REPLICA_ID": f"up-{index}"}
            ups.append(await stack.enter_async_context(running_up(home, db_url, config, env=env)))
        first, second = (up.url for up in ups)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
        assert "mcp_left_add" in await tool_names(http, first, admin)
        assert "mcp_right_add" in await tool_names(http, second, admin)  # each its own config

        # A server added through the first `up`'s API is callable through the second's.
        await add_http_server(http, first, admin, "extra", upstream.url)
        callable_on_second = adds_up(http, second, admin, "mcp_extra_add")
        added_s = await within(FOLLOW_WITHIN_S, "the server added on up 1, on up 2", callable_on_second)
        gateway_http = await stack.enter_async_context(httpx2.AsyncClient(headers=bearer(admin), timeout=30))
        transport = streamable_http_client(f"{second}/mcp", http_client=gateway_http)
        with anyio.fail_after(CALLS_TIMEOUT_S):
            async with Client(transport, mode="legacy") as gateway:
                answer = await gateway.call_tool("mcp_extra_add", {"a": 20, "b": 22})
                assert not answer.is_error and answer.content[0].text == "42", answer

        # A token the CLI makes on the same file, while both `up` write audit records, works on both at once.
        made = anyio.Event()
        calls = [0, 0]

        async def keep_calling(index: int, url: str) -> None:
            while not made.is_set():
                result = await call(http, url, admin, "mcp_extra_add", {"a": index, "b": 1})
                assert result.get("outcome") == "ok", result
                calls[index] += 1

        with anyio.fail_after(CALLS_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                for index, url in enumerate((first, second)):
                    group.start_soon(keep_calling, index, url)
                created = await cli(tmp_path, db_url, "token", "create", "--role", "user", "--name", "late", "--json")
                made.set()
        assert all(calls), calls
        for url in (first, second):
            assert "mcp_extra_add" in await tool_names(http, url, created["token"])

        # A server disabled through the second `up` leaves the first's tools.
        disabled = await http.post(f"{second}/api/mcp/servers/extra/disable", headers=bearer(admin))
        assert disabled.status_code == 200 and disabled.json()["state"] == "DISABLED", disabled.text

        async def gone_from_first() -> bool:
            return not any(name.startswith("mcp_extra_") for name in await tool_names(http, first, admin))

        disabled_s = await within(FOLLOW_WITHIN_S, "the server disabled on up 2, gone from up 1", gone_from_first)
        assert (await call(http, first, admin, "mcp_extra_add", {"a": 1, "b": 1})).get("outcome") != "ok"

        async def both_caught_up() -> bool:
            replicas = [
                (await http.get(f"{url}/api/health", headers=bearer(admin))).json()["replica"]
                for url in (first, second)
            ]
            return all(replica["applied"] == replica["head"] for replica in replicas)

        await within(FOLLOW_WITHIN_S, "both `up` at the head of the log", both_caught_up)
    for up in ups:  # stopped: the whole of each log, shutdown included
        found = [text for text in FORBIDDEN if text.lower() in up.text.lower()]
        assert not found, f"{up.url} logged {found}:\n{up.text}"
    print(
        f"added server callable on up 2 after {added_s:.3f} s; disabled server gone from up 1 after {disabled_s:.3f} s;"
        f" {sum(calls)} calls made while the CLI created a token"
    )
