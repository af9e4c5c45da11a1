"""Which servers the URL guard judges: those that say so, and every fetch server however it is launched."""

from __future__ import annotations

import sys
from typing import Any

from mcpstation.config.models import StationConfig
from mcpstation.pipeline import needs_url_guard


def guarded(**data: Any) -> set[str]:
    return {spec.name for spec in StationConfig.model_validate(data).servers if needs_url_guard(spec)}


def test_every_fetch_server_is_guarded_however_it_is_launched() -> None:
    servers = [
        {"name": "pypi-fetch", "command": "python3", "args": ["-m", "mcp_server_fetch"]},
        {"name": "joined-m", "command": "python3", "args": ["-mmcp_server_fetch"]},
        {"name": "uvx-fetch", "command": "uvx", "args": ["mcp-server-fetch"]},
        {"name": "pinned", "command": "uvx", "args": ["mcp-server-fetch==2025.1.1"]},
        {"name": "script-fetch", "command": "/usr/local/bin/mcp-server-fetch"},
        {"name": "own", "command": sys.executable, "args": ["-m", "mcpstation.servers.fetch"]},
        {"name": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
        {"name": "remote", "transport": "http", "url": "https://x.example/mcp"},
    ]
    assert guarded(presets={"fetch_enabled": True}, servers=servers) == {
        "fetch", "pypi-fetch", "joined-m", "uvx-fetch", "pinned", "script-fetch", "own",
    }  # fmt: skip
    assert guarded(presets={"fetch_enabled": True, "fetch_server": "mcp-server-fetch"}) == {"fetch"}
    assert guarded() == set()


def test_a_servers_own_url_guard_setting_wins() -> None:
    servers = [
        {"name": "fetch-off", "command": "uvx", "args": ["mcp-server-fetch"], "url_guard": False},
        {"name": "browser", "transport": "http", "url": "https://x.example/mcp", "url_guard": True},
    ]
    assert guarded(servers=servers) == {"browser"}
