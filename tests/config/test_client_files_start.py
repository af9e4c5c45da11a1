"""Each client's own file, as that client writes it, loads and starts the servers it names.

The fixtures in `tests/fixtures/clients/` are realistic files of each client (their other keys
included), at the paths the clients use. Their stdio servers run `python3 -m
mcpstation.testing.demo_server` (PATH finds this interpreter's `python3`); their remote servers
are demo servers over HTTP and SSE whose URLs reach the file through each client's own
variable syntax.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mcpstation import Station, load_config
from mcpstation.testing import serve_demo

pytestmark = pytest.mark.anyio

CLIENTS = Path(__file__).parents[1] / "fixtures" / "clients"
START_TIMEOUT_S = 120.0  # every server of one file on a loaded 2-core machine
SERVER_START_S = 60.0  # one stdio demo server (a Python interpreter importing the SDK) under load
DEMO_TOKEN = "demo-token-value"

# fixture → the state of each server the station knows from it (one the client runs itself is REFUSED, with why).
EXPECTED: dict[str, dict[str, str]] = {
    "claude-desktop/claude_desktop_config.json": {"notes": "READY", "weather": "READY"},
    "claude-code/.mcp.json": {"demo": "READY", "web": "READY"},
    "claude-code/.claude.json": {"events": "DISABLED", "notes": "READY", "shop-db": "READY"},
    "cursor/.cursor/mcp.json": {"docs": "READY", "web": "READY"},
    "vscode/.vscode/mcp.json": {"demo": "READY", "web": "READY"},
    "vscode/User/settings.json": {"events": "READY"},
    "windsurf/mcp_config.json": {"search": "READY", "notes": "READY", "legacy": "DISABLED"},
    "cline/cline_mcp_settings.json": {"notes": "READY", "events": "READY", "web": "READY"},
    "roo-code/.roo/mcp.json": {"notes": "READY", "web": "READY"},
    "zed/zed/settings.json": {"notes": "READY", "archive": "READY", "mcp-server-github": "REFUSED", "web": "DISABLED"},
    "codex/.codex/config.toml": {"notes": "READY", "docs": "DISABLED"},
    "gemini-cli/.gemini/settings.json": {
        "notes": "READY",
        "web": "READY",
        "events": "READY",
        "experimental": "DISABLED",
    },
    "continue/.continue/config.yaml": {"Notes": "READY", "Web": "READY"},
    "goose/goose/config.yaml": {"developer": "REFUSED", "notes": "READY", "web": "DISABLED"},
    "librechat/librechat.yaml": {"notes": "READY", "events": "READY", "web": "READY"},
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so that the remote demo servers below serve every file of a worker


@pytest.fixture(scope="module")
async def remote_demos() -> AsyncIterator[dict[str, str]]:
    """One demo server over HTTP and one over SSE for the module: the files only read their lists."""
    async with serve_demo("http") as http, serve_demo("sse") as sse:
        yield {"http": http.url, "sse": sse.url}


@pytest.fixture
def demo_urls(remote_demos: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    interpreter_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", interpreter_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("DEMO_HTTP_URL", remote_demos["http"])
    monkeypatch.setenv("DEMO_SSE_URL", remote_demos["sse"])
    monkeypatch.setenv("DEMO_TOKEN", DEMO_TOKEN)
    monkeypatch.setenv("MCPSTATION_INPUT_DEMO_TOKEN", DEMO_TOKEN)
    return remote_demos


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
async def test_client_file_loads_and_starts_its_servers(fixture: str, demo_urls: dict[str, str]) -> None:
    assert (Path(sys.executable).parent / "python3").exists()
    workspace = "/home/dev/shop" if fixture.endswith(".claude.json") else None
    config = load_config(CLIENTS / fixture, workspace=workspace, ask=None)
    settings = config.station.model_copy(update={"server_startup_timeout_s": SERVER_START_S})
    config = config.model_copy(update={"station": settings})
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            states = {status.name: status.state for status in station.status().servers}
            assert states == EXPECTED[fixture], station.status().to_dict()
            ready = {name for name, state in states.items() if state == "READY"}
            assert ready <= {tool.server for tool in station.tools}, "a READY server offers no tool"


VS_CODE_WITH_BAD_ENTRIES = """{
  "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
  "servers": {
    "demo": {"type": "stdio", "command": "python3", "args": ["-m", "mcpstation.testing.demo_server"],
             "envFile": "${workspaceFolder}/.env"},
    "asks": {"type": "stdio", "command": "python3", "args": ["-m", "mcpstation.testing.demo_server"],
             "env": {"API_KEY": "${input:api-key}"}},
    "good": {"type": "stdio", "command": "python3", "args": ["-m", "mcpstation.testing.demo_server"]}
  }
}
"""


async def test_one_entry_that_cannot_run_never_refuses_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("MCPSTATION_INPUT_API_KEY", raising=False)
    folder = tmp_path / "project" / ".vscode"
    folder.mkdir(parents=True)
    (folder / "mcp.json").write_text(VS_CODE_WITH_BAD_ENTRIES)
    config = load_config(folder / "mcp.json", ask=None)  # nobody to ask: no terminal
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            status = {entry.name: entry for entry in station.status().servers}
            assert (await station.call_tool("mcp_good_add", {"a": 1, "b": 2})).ok
    assert {name: entry.state for name, entry in status.items()} == {
        "demo": "REFUSED",
        "asks": "REFUSED",
        "good": "READY",
    }
    demo, asks = status["demo"].error, status["asks"].error
    assert demo is not None and "servers.demo.envFile: cannot read the env file" in demo
    assert str(tmp_path / "project" / ".env") in demo
    assert asks is not None and "input 'api-key' ('API key') has no value" in asks
    assert status["demo"].target == "python3 -m mcpstation.testing.demo_server"
