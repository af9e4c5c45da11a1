"""The URL guard judges every request kind of a guarded server, through every face alike.

A loopback listener stands for an internal service: a guarded request must never reach it (it
sees no connection), whoever sends it: the library, the CLI, the HTTP API or the gateway.
`mcp-server-fetch` runs with `--allow-private-ips`, so it would fetch the listener if asked.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from api_helpers import START_TIMEOUT_S, running_api
from fork_server import interpreter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from outcome_server import build_outcome_server
from station_helpers import inproc

from mcpstation import Station, StationConfig
from mcpstation.outcomes import Outcome

pytestmark = pytest.mark.anyio

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\ninside!"


def fetch_server(**fields: object) -> dict[str, object]:
    return {"name": "fetch", "command": PY, "args": ["-m", "mcp_server_fetch", "--allow-private-ips"], **fields}


class Listener:
    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    async def handle(self, stream: SocketStream) -> None:
        self.connections += 1
        async with stream:
            with anyio.move_on_after(5):
                await stream.receive()
                await stream.send(RESPONSE)


@asynccontextmanager
async def loopback_listener() -> AsyncIterator[Listener]:
    listener = Listener()
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    listener.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    async with tcp, anyio.create_task_group() as tg:
        tg.start_soon(tcp.serve, listener.handle)
        yield listener
        tg.cancel_scope.cancel()


async def test_an_unguarded_fetch_server_would_reach_the_listener():
    """The control: the same prompt with the guard turned off does fetch the internal address."""
    async with loopback_listener() as listener:
        config = StationConfig(servers=[fetch_server(url_guard=False)], station={"server_startup_timeout_s": 60})
        with anyio.fail_after(START_TIMEOUT_S):
            async with Station(config) as station:
                page = await station.get_prompt("mcp_fetch_fetch", {"url": f"http://127.0.0.1:{listener.port}/"})
        assert page.ok and "inside!" in json.dumps([m.model_dump(mode="json") for m in page.messages])
        assert listener.connections >= 1


async def test_guarded_requests_of_every_kind_are_refused_through_every_face(tmp_path: Path):
    opened: list[str] = []
    browser = inproc("browser", server=build_outcome_server(opened=opened), url_guard=True)
    async with loopback_listener() as listener:
        url = f"http://127.0.0.1:{listener.port}/"
        with anyio.fail_after(START_TIMEOUT_S * 2):
            async with running_api(
                tmp_path, [fetch_server(), browser], station_settings={"server_startup_timeout_s": 60}
            ) as api:
                station = api.station
                # the library
                for result in (
                    await station.get_prompt("mcp_fetch_fetch", {"url": url}),
                    await station.call_tool("mcp_fetch_fetch", {"url": url}),
                    await station.call_tool("mcp_browser_open_page", {"url": url}),
                    await station.get_prompt("mcp_browser_page", {"url": url}),
                    await station.read_resource(f"page://{url}"),
                ):
                    assert result.outcome is Outcome.REFUSED, result
                assert "Refused to fetch" in (result.error or "")
                # the HTTP API
                async with api.client("user") as http:
                    prompt = await http.post("/api/mcp/prompts/mcp_fetch_fetch/get", json={"url": url})
                    assert prompt.status_code == 403 and prompt.json()["type"] == "Refused", prompt.text
                    tool = await http.post("/api/mcp/tools/mcp_fetch_fetch/call", json={"url": url})
                    assert tool.status_code == 403 and tool.json()["outcome"] == "refused"
                # the gateway, as a user token's caller
                headers = {"Authorization": f"Bearer {api.tokens['user']}"}
                async with httpx2.AsyncClient(headers=headers, timeout=60) as http_client:
                    transport = streamable_http_client(f"{api.url}/mcp", http_client=http_client)
                    async with Client(transport) as gateway:
                        with pytest.raises(MCPError) as refused:
                            await gateway.get_prompt("mcp_fetch_fetch", {"url": url})
                        assert "Refused to fetch" in refused.value.error.message
                        called = await gateway.call_tool("mcp_browser_open_page", {"url": url})
                        assert called.is_error and "Refused to fetch" in called.content[0].text
                audited = [(c.kind, c.outcome) for c in await api.store.list_calls()]
        # the CLI, as its own one-shot station
        config = tmp_path / "fetch.toml"
        config.write_text(
            "[station]\nserver_startup_timeout_s = 60\n\n[servers.fetch]\n"
            f'command = "{PY}"\nargs = ["-m", "mcp_server_fetch", "--allow-private-ips"]\n'
        )
        env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
        with anyio.fail_after(START_TIMEOUT_S):
            done = await anyio.run_process(
                [PY, "-m", "mcpstation", "--config", str(config), "prompt", "get", "mcp_fetch_fetch",
                 "--args", json.dumps({"url": url})],
                env=env, check=False,
            )  # fmt: skip
        assert done.returncode == 4, done.stderr.decode()
        assert "Refused to fetch" in done.stderr.decode()
        assert listener.connections == 0
    assert opened == []
    assert ("prompts/get", Outcome.REFUSED) in audited and ("resources/read", Outcome.REFUSED) in audited
