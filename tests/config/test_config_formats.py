"""Every supported shape loads into the expected specs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcpstation.config import (
    SseServerSpec,
    StationConfig,
    StdioServerSpec,
    StreamableHttpServerSpec,
    WebSocketServerSpec,
    load_config,
    parse_config,
)
from mcpstation.errors import ConfigError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "configs"
ENV = {
    "REMOTE_API_KEY": "remote-secret",
    "GITHUB_TOKEN": "ghp-secret",
    "API_TOKEN": "api-secret",
    "SEARCH_TOKEN": "search-secret",
    "LINEAR_TOKEN": "linear-secret",
}


def load(name: str) -> StationConfig:
    return load_config(FIXTURES / name, environ=ENV)


def test_native_toml_loads_every_section_in_order() -> None:
    config = load("mcpstation.toml")
    assert config.source == str(FIXTURES / "mcpstation.toml")
    assert [s.name for s in config.servers] == ["github", "search", "clock"]
    assert config.station.naming == "namespace"
    assert config.station.reserved_names == ("reply", "stop")
    assert config.station.max_list_pages == 10
    github, search, clock = config.servers
    assert isinstance(github, StdioServerSpec)
    assert github.title == "GitHub"
    assert github.env["GITHUB_TOKEN"].get_secret_value() == "ghp-secret"
    assert github.exclude_tools == ("delete_*",)
    assert isinstance(search, StreamableHttpServerSpec)
    assert search.bearer_token is not None
    assert search.bearer_token.get_secret_value() == "search-secret"
    assert search.http_timeout_s == 15
    assert isinstance(clock, WebSocketServerSpec)
    assert clock.enabled is False
    assert config.host.roots[0].uri == "file:///srv/data"
    assert config.host.sampling.enabled and config.host.sampling.task_name == "summarize"
    assert config.policy.allowed_dynamic_stdio_commands == ("uvx",)
    assert config.policy.fetch_block_internal is False


def test_seed000_mcp_section_keeps_presets_and_http_alias(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpstation.config.loader"):
        config = load("seed000.toml")
    assert config.enabled is True
    assert config.presets.fetch_enabled and config.presets.exa_enabled
    assert config.presets.fetch_user_agent is not None
    assert config.policy.fetch_block_internal is True
    fetch, exa, files, remote = config.servers
    assert (fetch.name, exa.name) == ("fetch", "exa")  # presets are explicit entries, first
    assert isinstance(files, StdioServerSpec) and files.command == "npx"
    assert isinstance(remote, StreamableHttpServerSpec)
    assert remote.url == "https://tools.example.org/mcp"
    assert remote.headers["Authorization"].get_secret_value() == "Bearer remote-secret"
    assert "presets enabled: fetch, exa" in caplog.text


def test_seed001_client_capabilities_and_bearer_authorization() -> None:
    config = load("seed001.toml")
    roots = config.host.roots
    assert [(r.uri, r.name, r.enabled) for r in roots] == [
        ("file:///home/bot/data", "bot data", True),
        ("file:///home/bot/archive", None, False),
    ]
    assert config.host.sampling.enabled and config.host.sampling.tool_support
    assert config.host.sampling.task_name == "planner"
    assert config.host.elicitation.enabled and not config.host.elicitation.allow_url
    api = config.server("api")
    assert isinstance(api, StreamableHttpServerSpec)
    assert api.bearer_token is not None and api.bearer_token.get_secret_value() == "api-secret"
    assert api.http_timeout_s == 20
    events = config.server("events")
    assert isinstance(events, SseServerSpec)
    assert events.bearer_token is not None and events.bearer_token.get_secret_value() == "sse-token-literal"
    github = config.server("github")
    assert isinstance(github, StdioServerSpec)
    assert github.env["GITHUB_TOKEN"].get_secret_value() == "ghp-secret"


def test_seed001_roots_switch_off_disables_every_root() -> None:
    text = '[mcp.client.roots]\nenable = false\n[[mcp.client.roots.items]]\nuri = "file:///a"\n'
    config = parse_config(text, fmt="toml")
    assert config.host.roots[0].enabled is False


def test_seed002_list_maps_id_to_name_and_infers_transport() -> None:
    config = load("seed002.json")
    names = [(s.name, s.title, s.transport) for s in config.servers]
    assert names == [
        ("tester", "Local test server", "stdio"),
        ("search", "Hosted search", "streamable_http"),
        ("legacy", None, "sse"),
        ("socket", None, "websocket"),
        ("explicit", None, "websocket"),
    ]
    search = config.server("search")
    assert isinstance(search, StreamableHttpServerSpec)
    assert search.enabled is False
    assert search.headers["X-Api-Key"].get_secret_value() == "anonymous"


def test_seed003_yaml_mapping_and_allowlists() -> None:
    config = load("seed003.yaml")
    assert config.policy.allowed_dynamic_url_prefixes == ("http://localhost:3000/",)
    assert config.policy.allowed_dynamic_stdio_commands == ("npx",)
    local, notes = config.servers
    assert isinstance(local, SseServerSpec)
    assert (local.name, local.url, local.namespace) == ("local-api", "http://localhost:3000/sse", "local")
    assert isinstance(notes, StdioServerSpec) and notes.enabled is False
    assert notes.env["NOTES_DIR"].get_secret_value() == "/tmp/notes"


def test_seed003_yaml_servers_as_a_list_with_server_key() -> None:
    text = "mcp:\n  servers:\n    - server_key: a\n      command: npx\n    - name: b\n      url: http://h/mcp\n"
    config = parse_config(text, fmt="yaml")
    assert [(s.name, s.transport) for s in config.servers] == [("a", "stdio"), ("b", "streamable_http")]


def test_claude_desktop_types_disabled_and_timeout() -> None:
    config = load("claude_desktop.json")
    filesystem, linear, legacy = config.servers
    assert isinstance(filesystem, StdioServerSpec) and filesystem.cwd == "/Users/me"
    assert isinstance(linear, StreamableHttpServerSpec)
    assert linear.call_timeout_s == 45
    assert linear.headers["Authorization"].get_secret_value() == "Bearer linear-secret"
    assert isinstance(legacy, SseServerSpec) and legacy.enabled is False


def test_vs_code_servers_mapping_is_accepted() -> None:
    text = '{"servers": {"web": {"type": "streamable-http", "url": "https://x/mcp"}, "cli": {"command": "uvx"}}}'
    config = parse_config(text, fmt="json")
    assert [(s.name, s.transport) for s in config.servers] == [("web", "streamable_http"), ("cli", "stdio")]


def test_native_shape_in_yaml_and_json() -> None:
    yaml_text = "station:\n  naming: bare\nservers:\n  echo:\n    command: python\n"
    json_text = '{"station": {"naming": "bare"}, "servers": {"echo": {"command": "python"}}}'
    for config in (parse_config(yaml_text, fmt="yaml"), parse_config(json_text, fmt="json")):
        assert config.station.naming == "bare"
        assert config.server("echo").target == "python"


def test_mcp_enabled_false_is_kept() -> None:
    assert parse_config("[mcp]\nenable = false\n", fmt="toml").enabled is False


def test_empty_files_give_an_empty_config() -> None:
    for fmt in ("toml", "yaml"):
        config = parse_config("", fmt=fmt)  # type: ignore[arg-type]
        assert config.servers == () and config.enabled


def test_a_jsonc_file_loads_as_json_with_comments(tmp_path: Path) -> None:
    native = tmp_path / "servers.jsonc"
    native.write_text(
        '// our servers\n{\n  "servers": {\n    "demo": {"command": "/usr/bin/true", /* no args */},\n  },\n}\n'
    )
    assert load_config(native, environ={}).server("demo").target == "/usr/bin/true"
    claude = tmp_path / "claude.jsonc"
    claude.write_text('{\n  // Claude\n  "mcpServers": {"fs": {"command": "/usr/bin/true", "args": ["x",],},},\n}\n')
    assert load_config(claude, environ={}).server("fs").target == "/usr/bin/true x"
    broken = tmp_path / "broken.jsonc"
    broken.write_text('{\n  // fine\n  "servers": {\n    "demo": {"command": }\n  }\n}\n')
    with pytest.raises(ConfigError, match=r"broken\.jsonc:4: invalid JSON"):
        load_config(broken, environ={})
