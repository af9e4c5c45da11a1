"""One change (add a server) walked through every face finds the same result and the same audit record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import httpx2
import pytest
from api_helpers import PY, START_TIMEOUT_S, demo, running_api
from fork_server import interpreter
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.anyio


def stdio_entry(name: str) -> dict[str, object]:
    return {"name": name, "transport": "stdio", "command": PY, "args": ["-m", "mcpstation.testing.demo_server"]}


async def test_add_server_is_the_same_change_through_every_face(tmp_path: Path):
    messages: dict[str, str] = {}
    with anyio.fail_after(START_TIMEOUT_S * 3):
        async with running_api(tmp_path, station_settings={"management_tools": True}) as api:
            messages["library"] = (await api.station.add_server(demo("via_library"))).message
            async with api.client("admin") as http:
                response = await http.post("/api/mcp/servers", json=demo("via_http"))
                assert response.status_code in (200, 201), response.text
                messages["http"] = response.json()["message"]
            llm = await api.station.call_tool("mcp_add_server", stdio_entry("via_llm"))
            messages["llm"] = llm.text
            headers = {"Authorization": f"Bearer {api.tokens['admin']}"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http_client:
                transport = streamable_http_client(f"{api.url}/mcp", http_client=http_client)
                async with Client(transport, mode="legacy") as gateway:
                    result = await gateway.call_tool("mcp_add_server", stdio_entry("via_gateway"))
                    messages["gateway"] = result.content[0].text
            config = tmp_path / "cli.toml"
            config.write_text(f'[policy]\nallowed_dynamic_stdio_commands = ["{PY}"]\n')
            env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
                "MCPSTATION_DATA_DIR": str(tmp_path)
            }
            done = await anyio.run_process(
                [interpreter(), "-m", "mcpstation", "--config", str(config), "servers", "add", "via_cli", "--json",
                 "--", PY, "-m", "mcpstation.testing.demo_server"],
                env=env, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr.decode()
            messages["cli"] = json.loads(done.stdout)["message"]
            actions = await api.store.list_actions()
    for face, message in messages.items():
        assert message == f"connected 'via_{face}': 12 tools", (face, message)
    adds = {a.server: a for a in actions if a.action == "add"}
    assert set(adds) == {f"via_{face}" for face in messages}
    details = {json.dumps(a.detail, sort_keys=True) for a in adds.values()}
    assert len(details) == 1, details  # the same record, whoever asked
    actors = {server: a.actor for server, a in adds.items()}
    assert actors["via_cli"] == "cli" and actors["via_llm"].startswith("llm:")
