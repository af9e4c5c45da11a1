"""Helpers for API tests: a station with demo servers, served by uvicorn on 127.0.0.1:0."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from fork_server import interpreter

from mcpstation import Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port, build_app
from mcpstation.store import Store

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
START_TIMEOUT_S = 60.0  # a whole station plus HTTP server start on a loaded 2-core machine
POLICY = {"allowed_dynamic_stdio_commands": [PY], "allowed_dynamic_url_prefixes": ["http://127.0.0.1:"]}


def demo(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running our demo server."""
    return {"name": name, "command": PY, "args": ["-m", "mcpstation.testing.demo_server", *args], **fields}


@dataclass
class RunningApi:
    """A served station: its base URL, its parts, and tokens by role (empty when `tokens=False`)."""

    url: str
    port: int
    station: Station
    store: Store
    server: ApiServer
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, role: str | None = None, **kwargs: Any) -> httpx2.AsyncClient:
        headers = dict(kwargs.pop("headers", {}))
        if role is not None:
            headers["Authorization"] = f"Bearer {self.tokens[role]}"
        return httpx2.AsyncClient(base_url=self.url, headers=headers, timeout=30.0, **kwargs)


@asynccontextmanager
async def running_api(
    tmp_path: Path,
    servers: Sequence[Any] = (),
    *,
    tokens: bool = True,
    public_health: bool = False,
    allowed_hosts: Sequence[str] = (),
    policy: dict[str, Any] | None = None,
    station_settings: dict[str, Any] | None = None,
) -> AsyncIterator[RunningApi]:
    """Start a store, a station and the app on a real socket; stop them all on exit."""
    config = StationConfig(servers=tuple(servers), policy={**POLICY, **(policy or {})}, station=station_settings or {})
    async with await Store.open(data_dir=tmp_path) as store:
        issued: dict[str, str] = {}
        if tokens:
            issued["admin"], _ = await store.create_token("admin-token", "admin")
            issued["user"], _ = await store.create_token("user-token", "user")
        sock = bind_socket("127.0.0.1", 0)
        port = bound_port(sock)
        with sock:
            async with Station(config, store=store) as station:
                app = build_app(
                    station, host="127.0.0.1", port=port, public_health=public_health, allowed_hosts=allowed_hosts
                )
                server = ApiServer(app)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.serve, [sock])
                    with anyio.fail_after(START_TIMEOUT_S):
                        await server.wait_started()
                    try:
                        yield RunningApi(f"http://127.0.0.1:{port}", port, station, store, server, issued)
                    finally:
                        server.should_exit = True


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event, data) pairs from Server-Sent Events lines; comments and `retry:` skipped."""
    kind = None
    async for line in lines:
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: ") and kind is not None:
            yield kind, json.loads(line.removeprefix("data: "))
            kind = None
