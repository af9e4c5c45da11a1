"""A station of in-process servers for the adapter tests: `demo` and `media` for everyone, `secret` for admins."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from media_server import build_media_server

from mcpstation import Caller, Face, InProcessServerSpec, Role, Station, StationConfig
from mcpstation.testing._media import beep_wav, red_square_png
from mcpstation.testing.demo_server import build_demo_server

PAYLOADS = Path(__file__).resolve().parents[1] / "integrations" / "payloads"
RED_SQUARE_PNG = red_square_png()
BEEP_WAV = beep_wav()
USER = Caller("test-user", Role.USER, Face.LLM)
ADMIN = Caller.library()


def config(secret_role: Role = Role.ADMIN) -> StationConfig:
    return StationConfig(
        servers=[
            InProcessServerSpec(name="demo", server=build_demo_server("demo")),
            InProcessServerSpec(name="secret", server=build_demo_server("secret"), min_role=secret_role),
            InProcessServerSpec(name="media", server=build_media_server()),
        ]
    )


def with_secret_role(station: Station, role: Role) -> StationConfig:
    """The station's config with the `secret` server's `min_role` changed (same server objects)."""
    servers = [s.model_copy(update={"min_role": role}) if s.name == "secret" else s for s in station.config.servers]
    return station.config.model_copy(update={"servers": servers})


@asynccontextmanager
async def running_station(secret_role: Role = Role.ADMIN) -> AsyncIterator[Station]:
    """The station, both servers ready (start-up bounded by the station's own `startup_timeout_s`)."""
    async with Station(config(secret_role)) as station:
        assert {c.name for c in station.connections.values() if c.is_ready} == {"demo", "secret", "media"}
        yield station


def payload(name: str) -> Any:
    return json.loads((PAYLOADS / name).read_text())
