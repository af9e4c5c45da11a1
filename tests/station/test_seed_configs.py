"""Every seed's configuration shape loads and starts against servers that run here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from station_helpers import PY, START_TIMEOUT_S

from mcpstation import Station, load_config
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

RUNNABLE = Path(__file__).parent.parent / "fixtures" / "runnable"

EXPECTED = {
    "seed000.toml": {"local": "READY", "remote-api": "READY"},
    "seed001.toml": {"browser": "READY", "remote-api": "READY", "remote-sse": "READY"},
    "seed002.json": {"tester": "READY", "socket": "READY", "off": "DISABLED"},
    "seed003.yaml": {"local-api": "READY", "notes": "READY"},
    "claude_desktop.json": {"demo": "READY", "web": "READY"},
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so that the remote demo servers below serve every seed of a worker


@pytest.fixture(scope="module")
async def remote_demos() -> AsyncIterator[dict[str, str]]:
    """One demo server over HTTP, SSE and WebSocket for the module: the seeds only list and start."""
    async with serve_demo("http") as http, serve_demo("sse") as sse, serve_demo("ws") as ws:
        yield {"http": http.url, "sse": sse.url, "ws": ws.url}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
async def test_seed_config_loads_and_starts(
    fixture: str, remote_demos: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PYTHON", PY)  # the seeds' stdio servers: their config shape is the subject, not start-up
    monkeypatch.setenv("DEMO_HTTP_URL", remote_demos["http"])
    monkeypatch.setenv("DEMO_SSE_URL", remote_demos["sse"])
    monkeypatch.setenv("DEMO_WS_URL", remote_demos["ws"])
    config = load_config(RUNNABLE / fixture)
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            states = {s.name: s.state for s in station.status().servers}
            assert states == EXPECTED[fixture], station.status().to_dict()
            assert station.tools


async def test_seed003_namespaces_render_in_namespace_mode(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTHON", PY)
    monkeypatch.setenv("DEMO_SSE_URL", "http://127.0.0.1:9/sse")
    config = load_config(RUNNABLE / "seed003.yaml")
    config = config.model_copy(update={"station": config.station.model_copy(update={"naming": "namespace"})})
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            assert "notes__add" in {t.name for t in station.tools}
