"""A handshake-era gateway session whose replica died: two `mcpstation up` replicas on one PostgreSQL
behind a real HAProxy running exactly `haproxy.cfg`.

A handshake-era client (the SDK's streamable HTTP client with `mode="legacy"`: `initialize`, then
`Mcp-Session-Id` on every request) initializes through the balancer and calls tools: every request
of its session reaches the replica that made it, which alone knows the session. That replica is
SIGKILLed. The client's next request, still carrying the old session id, reaches the survivor,
which answers HTTP 404 "Session not found"; so does one sent after HAProxy marked the dead replica
down. The SDK surfaces that as an `MCPError` and does not
initialize again by itself, so the test does, as docs/deploy.md tells a client to: the new session
lives on the survivor and its calls succeed. Skipped (with the reason) without PostgreSQL or HAProxy.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from face_helpers import RunningUp, running_up, toml_config
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from replica_helpers import (
    BALANCER_ARGS,
    BALANCER_HOST,
    balancer,
    balancer_log,
    balancer_transport,
    bearer,
    haproxy_or_skip,
    in_rotation,
    within,
)

from mcpstation.store import Store
from mcpstation.testing import serve_demo

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

REPLICAS = 2
GATEWAY_URL = f"http://{BALANCER_HOST}/mcp"
SESSION_CALLS = 6  # on one session through the balancer: without affinity, round robin sends half elsewhere
CALLS_TIMEOUT_S = 90.0  # a handful of gateway calls, a kill and a new session, on a loaded 2-core machine
MARKED_DOWN_WITHIN_S = 30.0  # HAProxy's checks (every 250 ms, down after 2 failures) notice the kill
SESSION_HEADER = "mcp-session-id"


async def session_status(http: httpx2.AsyncClient, replica: RunningUp, session_id: str, token: str) -> int:
    """The HTTP status `replica`, asked directly, answers a `ping` in session `session_id` with."""
    answer = await http.post(
        f"{replica.url}/mcp",
        json={"jsonrpc": "2.0", "id": "probe", "method": "ping"},
        headers={
            **bearer(token),
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": HANDSHAKE_PROTOCOL_VERSIONS[-1],
        },
    )
    return answer.status_code


async def test_a_session_whose_replica_died_gets_session_not_found_and_a_new_session_works(
    pg_db_url: str, tmp_path: Path
) -> None:
    haproxy = haproxy_or_skip()
    async with await Store.open(pg_db_url, replica_id="cli") as cli:
        token, _ = await cli.create_token("agent", "user", actor="cli")
    # No stdio servers: a replica killed with SIGKILL leaves no children behind.
    async with serve_demo("http") as upstream, AsyncExitStack() as stack:
        config = toml_config(tmp_path / "mcpstation.toml", [{"name": "demo", "transport": "http", "url": upstream.url}])
        replicas: list[RunningUp] = []
        for index in range(1, REPLICAS + 1):
            home = tmp_path / f"replica-{index}"
            home.mkdir()
            env = {"MCPSTATION_REPLICA_ID": f"replica-{index}"}
            replicas.append(
                await stack.enter_async_context(running_up(home, pg_db_url, config, BALANCER_ARGS, env, fresh=True))
            )
        lb = await stack.enter_async_context(balancer(haproxy, tmp_path, replicas))
        await in_rotation(lb, {f"replica-{index}" for index in range(1, REPLICAS + 1)})
        direct = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))

        # Every POST the client sends through the balancer: (session id sent, HTTP status, session id answered).
        posts: list[tuple[str | None, int, str | None]] = []

        async def record(response: httpx2.Response) -> None:
            if response.request.method == "POST":
                sent = response.request.headers.get(SESSION_HEADER)
                posts.append((sent, response.status_code, response.headers.get(SESSION_HEADER)))

        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                transport=balancer_transport(tmp_path),
                headers=bearer(token),
                timeout=30,
                event_hooks={"response": [record]},
            )
        )

        with anyio.fail_after(CALLS_TIMEOUT_S):
            async with Client(streamable_http_client(GATEWAY_URL, http_client=http), mode="legacy") as old:
                assert old.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
                for attempt in range(SESSION_CALLS):
                    answer = await old.call_tool("mcp_demo_add", {"a": attempt, "b": 1})
                    assert not answer.is_error and answer.content[0].text == str(attempt + 1), answer
                session_id = posts[0][2]  # the initialize's answer names the session
                assert session_id is not None, posts
                assert all(sent == session_id and status in (200, 202) for sent, status, _ in posts[1:]), posts

                # The session lives in one replica: the other does not know it.
                statuses = [await session_status(direct, replica, session_id, token) for replica in replicas]
                assert sorted(statuses) == [200, 404], statuses
                owner, survivor = (replicas[0], replicas[1]) if statuses[0] == 200 else (replicas[1], replicas[0])

                await owner.kill()
                killed_at = time.perf_counter()
                posts.clear()
                with pytest.raises(MCPError) as refused:
                    await old.call_tool("mcp_demo_add", {"a": 1, "b": 1})
                answered_s = time.perf_counter() - killed_at
                # Only the survivor could answer: the owner is gone, and HAProxy's own errors are 5xx.
                assert posts == [(session_id, 404, None)], posts
                assert refused.value.code == types.INVALID_REQUEST and refused.value.message == "Session not found"

                # Once the health checks mark the owner down, the stickiness is broken the same way.
                down = f"Server replicas/r{replicas.index(owner) + 1} is DOWN"

                async def marked_down() -> bool:
                    return down in await anyio.Path(balancer_log(tmp_path)).read_text(errors="replace")

                await within(MARKED_DOWN_WITHIN_S, "the balancer marking the killed replica down", marked_down)
                posts.clear()
                with pytest.raises(MCPError, match="Session not found"):
                    await old.call_tool("mcp_demo_add", {"a": 1, "b": 1})
                assert posts == [(session_id, 404, None)], posts

            # The client starts a new session, as the protocol says it must after a 404.
            posts.clear()
            async with Client(streamable_http_client(GATEWAY_URL, http_client=http), mode="legacy") as new:
                answer = await new.call_tool("mcp_demo_add", {"a": 20, "b": 22})
                assert not answer.is_error and answer.content[0].text == "42", answer
                new_session_id = posts[0][2]
                assert new_session_id is not None and new_session_id != session_id, posts
                assert await session_status(direct, survivor, new_session_id, token) == 200
        print(f"the dead replica's session answered 404 through the balancer {answered_s:.3f} s after the kill")
