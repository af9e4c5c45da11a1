"""Presets: which built-in servers join the config, and in what order."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mcpstation.config.models import StationConfig, StdioServerSpec, StreamableHttpServerSpec
from mcpstation.config.presets import DEFAULT_FETCH_USER_AGENT, EXA_URL, FetchOptions, preset_servers


@pytest.fixture(autouse=True)
def _no_exa_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXA_API_KEY", raising=False)


def config(**data: Any) -> StationConfig:
    return StationConfig.model_validate(data)


def test_no_presets_enabled_leaves_the_config_alone() -> None:
    base = config(servers=[{"name": "a", "command": "x"}])
    assert [s.name for s in base.servers] == ["a"]
    assert preset_servers(fetch=None, exa=False, names={"a"}, urls=()) == []


def test_presets_are_explicit_in_the_validated_config_and_added_once() -> None:
    base = config(presets={"fetch_enabled": True}, servers=[{"name": "a", "command": "x"}])
    assert [s.name for s in base.servers] == ["fetch", "a"]
    again = StationConfig.model_validate(base.model_dump())
    assert [s.name for s in again.servers] == ["fetch", "a"]
    assert preset_servers(fetch=FetchOptions(), exa=False, names={s.name for s in base.servers}, urls=()) == []


def test_enabled_presets_come_first_then_user_servers() -> None:
    base = config(
        presets={"fetch_enabled": True, "exa_enabled": True},
        servers=[{"name": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}],
    )
    resolved = base
    assert [s.name for s in resolved.servers] == ["fetch", "exa", "files"]
    fetch, exa = resolved.servers[0], resolved.servers[1]
    assert isinstance(fetch, StdioServerSpec)
    assert fetch.command == sys.executable
    assert fetch.args[:2] == ("-m", "mcpstation.servers.fetch")
    assert fetch.args[2:4] == ("--user-agent", DEFAULT_FETCH_USER_AGENT)
    assert fetch.env["PYTHONIOENCODING"].get_secret_value() == "utf-8"
    assert isinstance(exa, StreamableHttpServerSpec)
    assert exa.url == EXA_URL and exa.headers == {}


def test_exa_key_comes_from_the_environment_as_x_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXA_API_KEY", "k-123")
    exa = config(presets={"exa_enabled": True}).servers[0]
    assert isinstance(exa, StreamableHttpServerSpec)
    assert exa.headers["x-api-key"].get_secret_value() == "k-123"
    assert "k-123" not in repr(exa)


def test_fetch_preset_carries_user_agent_robots_and_guard_exceptions() -> None:
    base = config(
        presets={"fetch_enabled": True, "fetch_user_agent": "MyBot/2", "fetch_ignore_robots_txt": True},
        policy={"allowed_internal_hosts": ["wiki.corp"], "allowed_internal_cidrs": ["10.0.0.0/8"]},
    )
    fetch = base.servers[0]
    assert isinstance(fetch, StdioServerSpec)
    assert fetch.args == (
        "-m", "mcpstation.servers.fetch", "--user-agent", "MyBot/2", "--ignore-robots-txt",
        "--allow-host", "wiki.corp", "--allow-cidr", "10.0.0.0/8",
    )  # fmt: skip
    off = config(presets={"fetch_enabled": True, "fetch_user_agent": ""}, policy={"fetch_block_internal": False})
    fetch_off = off.servers[0]
    assert isinstance(fetch_off, StdioServerSpec)
    assert fetch_off.args == ("-m", "mcpstation.servers.fetch", "--allow-internal")


def test_mcp_server_fetch_is_an_option() -> None:
    base = config(presets={"fetch_enabled": True, "fetch_server": "mcp-server-fetch"})
    fetch = base.servers[0]
    assert isinstance(fetch, StdioServerSpec)
    assert fetch.args == ("-m", "mcp_server_fetch", "--user-agent", DEFAULT_FETCH_USER_AGENT)


def test_user_server_with_a_preset_name_replaces_it() -> None:
    base = config(
        presets={"fetch_enabled": True, "exa_enabled": True},
        servers=[
            {"name": "fetch", "command": "uvx", "args": ["mcp-server-fetch"]},
            {"name": "exa", "transport": "http", "url": "https://search.example/mcp"},
        ],
    )
    resolved = base
    assert [s.name for s in resolved.servers] == ["fetch", "exa"]
    assert resolved.servers[0].target == "uvx mcp-server-fetch"
    assert resolved.servers[1].target == "https://search.example/mcp"


def test_user_server_with_the_exa_url_replaces_the_preset() -> None:
    base = config(
        presets={"exa_enabled": True},
        servers=[{"name": "websearch", "transport": "http", "url": "https://mcp.exa.ai/mcp/?tools=web_search_exa"}],
    )
    resolved = base
    assert [s.name for s in resolved.servers] == ["websearch"]


def test_policy_rejects_a_bad_cidr() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not a network"):
        config(policy={"allowed_internal_cidrs": ["10.0.0.0/33"]})
