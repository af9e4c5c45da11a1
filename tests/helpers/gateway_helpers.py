"""Helpers for gateway tests: a station fronted by the gateway over HTTP (in-process uvicorn) or stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from fork_server import interpreter
from mcp import StdioServerParameters
from starlette.types import ASGIApp
from station_helpers import demo

from mcpstation import Station, StationConfig
from mcpstation.gateway import GatewayRelay, gateway_asgi_app
from mcpstation.gateway.stdio import LOCAL_CALLER

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
PUSH_SERVER = Path(__file__).resolve().parent / "push_server.py"
START_TIMEOUT_S = 60.0  # whole-station start plus gateway start on a loaded machine
CALL_TIMEOUT_S = 30.0


def push(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """The push-style upstream (elicitation, sampling, roots, logs), pinned to the handshake era."""
    return {"name": name, "command": PY, "args": [str(PUSH_SERVER), *args], "protocol": "legacy", **fields}


def station_config(*servers: dict[str, Any], naming: str = "prefix") -> StationConfig:
    return StationConfig(servers=servers or (demo("a"), demo("b")), station={"naming": naming})


def toml_config(path: Path, *servers: dict[str, Any], naming: str = "prefix") -> Path:
    """The same servers as a TOML file, for the `gateway --stdio` subprocess."""
    lines = ["[station]", f'naming = "{naming}"', ""]
    for server in servers:
        lines.append(f"[servers.{server['name']}]")
        for key, value in server.items():
            if key == "name":
                continue
            if isinstance(value, list):
                rendered = "[" + ", ".join(f'"{v}"' for v in value) + "]"
            else:
                rendered = f'"{value}"'
            lines.append(f"{key} = {rendered}")
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def stdio_gateway(config_path: Path) -> StdioServerParameters:
    """`mcpstation gateway --stdio` as a subprocess, its store next to its config file."""
    return StdioServerParameters(
        command=PY,
        args=["-m", "mcpstation.cli.gateway", "--stdio", "--config", str(config_path)],
        env={"MCPSTATION_DATA_DIR": str(config_path.parent / "data")},
    )


class _Server(uvicorn.Server):
    """Uvicorn that says when it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    @property
    def port(self) -> int:
        return self.servers[0].sockets[0].getsockname()[1]


@asynccontextmanager
async def serve_http(app: ASGIApp) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 at a free port; yields the `/mcp` URL."""
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(START_TIMEOUT_S):
            await server.ready.wait()
        try:
            yield f"http://127.0.0.1:{server.port}/mcp"
        finally:
            server.should_exit = True


@asynccontextmanager
async def http_gateway(config: StationConfig, **app_options: Any) -> AsyncIterator[tuple[Station, str]]:
    """A running station with the relay, fronted by the gateway over HTTP as the local admin; yields (station, url)."""
    relay = GatewayRelay()
    app_options.setdefault("caller", LOCAL_CALLER)
    async with Station(config, hooks=relay) as station, serve_http(gateway_asgi_app(station, **app_options)) as url:
        yield station, url
