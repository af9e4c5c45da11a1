"""Other clients' files are read leniently and faithfully: their keys mapped, the rest left alone."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mcpstation.config import (
    SseServerSpec,
    StationConfig,
    StdioServerSpec,
    StreamableHttpServerSpec,
    load_config,
    parse_config,
)
from mcpstation.config._inputs import InputSpec
from mcpstation.config.clients import FoundFile, ImportStatus, import_servers
from mcpstation.errors import ConfigError, MissingVariablesError

CLIENTS = Path(__file__).parents[1] / "fixtures" / "clients"
ENV = {
    "DEMO_TOKEN": "tok-123",
    "DEMO_HTTP_URL": "http://127.0.0.1:1/mcp",
    "DEMO_SSE_URL": "http://127.0.0.1:2/sse",
    "MCPSTATION_INPUT_DEMO_TOKEN": "input-tok",
    "HOME": "/home/dev",
}


def load(fixture: str, **kwargs: object) -> StationConfig:
    return load_config(CLIENTS / fixture, environ=ENV, ask=None, **kwargs)  # type: ignore[arg-type]


def secret(mapping: object, key: str) -> str:
    return mapping[key].get_secret_value()  # type: ignore[index, no-any-return]


# -- the four files the issue names ----------------------------------------------------------------


def test_real_claude_desktop_file_with_other_keys_loads(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcpstation.config"):
        config = load("claude-desktop/claude_desktop_config.json")
    assert [server.name for server in config.servers] == ["notes", "weather"]
    assert "globalShortcut, preferences, isUsingBuiltInNodeForMcp" in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


def test_vs_code_inputs_come_from_the_environment() -> None:
    config = load("vscode/.vscode/mcp.json")
    demo, web = config.servers
    assert isinstance(demo, StdioServerSpec) and isinstance(web, StreamableHttpServerSpec)
    assert secret(demo.env, "DEMO_TOKEN") == "input-tok"
    assert secret(web.headers, "Authorization") == "Bearer input-tok"
    assert secret(demo.env, "HOME_DIR") == "/home/dev"
    assert demo.args[-1] == "vscode"  # ${workspaceFolderBasename}: the folder holding .vscode/


def test_vs_code_input_is_asked_once_when_nothing_gives_it() -> None:
    asked: list[InputSpec] = []

    def ask(spec: InputSpec) -> str:
        asked.append(spec)
        return "typed"

    environ = {key: value for key, value in ENV.items() if not key.startswith("MCPSTATION_INPUT_")}
    config = load_config(CLIENTS / "vscode/.vscode/mcp.json", environ=environ, ask=ask)
    assert [(spec.id, spec.description, spec.password) for spec in asked] == [("demo-token", "Demo API token", True)]
    assert secret(config.server("web").headers, "Authorization") == "Bearer typed"  # type: ignore[union-attr]


def test_vs_code_input_without_a_value_names_the_input_and_its_description() -> None:
    environ = {key: value for key, value in ENV.items() if not key.startswith("MCPSTATION_INPUT_")}
    with pytest.raises(ConfigError) as caught:
        load_config(CLIENTS / "vscode/.vscode/mcp.json", environ=environ, ask=None)
    assert str(caught.value) == (
        f"{CLIENTS / 'vscode/.vscode/mcp.json'}:17: servers.demo.env.DEMO_TOKEN: input 'demo-token' "
        "('Demo API token') has no value. Set MCPSTATION_INPUT_DEMO_TOKEN to give it, or run in a terminal to be asked."
    )


def test_cline_entry_with_auto_approve_loads() -> None:
    config = load("cline/cline_mcp_settings.json")
    notes, events, web = config.servers
    assert isinstance(notes, StdioServerSpec) and notes.call_timeout_s == 30  # Cline's timeout is in seconds
    assert isinstance(events, SseServerSpec)  # Cline reads a URL without a type as SSE
    assert isinstance(web, StreamableHttpServerSpec) and web.call_timeout_s == 120  # "streamableHttp"


def test_seed_002_list_keeps_its_unrelated_top_level_keys_to_itself() -> None:
    text = '{"version": 3, "servers": [{"id": "a", "name": "A", "command": "uvx"}]}'
    config = parse_config(text, fmt="json", source="mcp_servers.json", environ={})
    assert [(spec.name, spec.title) for spec in config.servers] == [("a", "A")]


# -- what each client's keys mean ------------------------------------------------------------------


def test_claude_code_timeout_is_milliseconds_and_project_servers_join_the_user_ones() -> None:
    assert load("claude-code/.mcp.json").server("web").call_timeout_s == 30
    config = load("claude-code/.claude.json", workspace="/home/dev/shop/src")  # the nearest project entry
    assert [(spec.name, spec.enabled) for spec in config.servers] == [
        ("events", False),  # in the project's disabledMcpServers
        ("notes", True),
        ("shop-db", True),
    ]
    elsewhere = load("claude-code/.claude.json", workspace="/srv/other")
    assert [spec.name for spec in elsewhere.servers] == ["events", "notes"]


def test_cursor_env_file_joins_env_and_the_entry_wins() -> None:
    docs = load("cursor/.cursor/mcp.json").server("docs")
    assert isinstance(docs, StdioServerSpec)
    assert {key: value.get_secret_value() for key, value in docs.env.items()} == {
        "DOCS_REGION": "eu",
        "DOCS_LANG": "en",
        "DOCS_TOKEN": "tok-123",
    }


def test_windsurf_server_url_and_disabled_tools() -> None:
    config = load("windsurf/mcp_config.json")
    search = config.server("search")
    assert isinstance(search, StreamableHttpServerSpec) and search.url == ENV["DEMO_HTTP_URL"]
    assert search.exclude_tools == ("slow",)
    assert config.server("legacy").enabled is False


def test_roo_code_relative_cwd_is_the_workspace() -> None:
    notes = load("roo-code/.roo/mcp.json").server("notes")
    assert isinstance(notes, StdioServerSpec)
    assert notes.cwd == str(CLIENTS / "roo-code")
    assert notes.exclude_tools == ("fail",) and notes.call_timeout_s == 60


def test_zed_custom_servers_in_both_shapes_and_extensions_left_to_zed() -> None:
    config = load("zed/zed/settings.json")
    assert [spec.name for spec in config.servers] == ["notes", "archive", "mcp-server-github", "web"]
    extension = config.server("mcp-server-github")  # listed, with why mcpstation does not run it
    assert not extension.enabled and extension.unusable == "a Zed extension's server (extension); Zed starts it itself"
    archive = config.server("archive")
    assert isinstance(archive, StdioServerSpec) and archive.command == "python3"
    assert secret(archive.env, "ARCHIVE_DIR") == "/tmp"
    assert config.server("web").enabled is False


def test_codex_tables_map_timeouts_tools_and_env_vars() -> None:
    notes = load("codex/.codex/config.toml").server("notes")
    assert isinstance(notes, StdioServerSpec)
    assert (notes.startup_timeout_s, notes.call_timeout_s) == (60, 45)
    assert notes.include_tools == ("add", "echo", "get_time")
    assert secret(notes.env, "DEMO_TOKEN") == "tok-123"  # env_vars hands the variable on


def test_codex_bearer_token_and_header_variables() -> None:
    text = (
        'model = "o3"\n[mcp_servers.api]\nurl = "https://api.example/mcp"\nbearer_token_env_var = "API_TOKEN"\n'
        'http_headers = { X-Team = "core" }\nenv_http_headers = { X-Key = "API_KEY", X-Optional = "UNSET_ONE" }\n'
    )
    api = parse_config(text, fmt="toml", source="/p/.codex/config.toml", environ={"API_TOKEN": "t", "API_KEY": "k"})
    spec = api.server("api")
    assert isinstance(spec, StreamableHttpServerSpec) and spec.bearer_token is not None
    assert spec.bearer_token.get_secret_value() == "t"
    assert {key: value.get_secret_value() for key, value in spec.headers.items()} == {"X-Team": "core", "X-Key": "k"}
    with pytest.raises(MissingVariablesError, match="API_TOKEN"):
        parse_config(text, fmt="toml", source="/p/.codex/config.toml", environ={})


def test_gemini_cli_urls_bare_variables_tool_lists_and_excluded_servers() -> None:
    config = load("gemini-cli/.gemini/settings.json")
    notes, web, events, experimental = config.servers
    assert isinstance(notes, StdioServerSpec) and secret(notes.env, "NOTES_TOKEN") == "tok-123"  # $VAR
    assert notes.call_timeout_s == 30 and notes.include_tools == ("add", "echo", "get_time")
    assert isinstance(web, StreamableHttpServerSpec)  # httpUrl
    assert isinstance(events, SseServerSpec)  # url
    assert experimental.enabled is False  # mcp.excluded


def test_continue_secrets_are_expanded_in_servers_only() -> None:
    config = load("continue/.continue/config.yaml")  # models[0].apiKey names an unset secret: never read
    notes, web = config.servers
    assert notes.name == "Notes" and secret(notes.env, "NOTES_TOKEN") == "tok-123"  # type: ignore[union-attr]
    assert isinstance(web, StreamableHttpServerSpec) and web.startup_timeout_s == 60
    assert secret(web.headers, "Authorization") == "Bearer tok-123"


def test_goose_extensions_builtins_skipped_env_keys_required() -> None:
    config = load("goose/goose/config.yaml")
    listed = [(spec.name, spec.title, spec.unusable) for spec in config.servers]
    assert listed == [
        ("developer", "developer", "a goose builtin extension; it runs inside goose"),
        ("notes", "Team notes", None),
        ("web", "web", None),
    ]
    notes = config.server("notes")
    assert isinstance(notes, StdioServerSpec) and notes.call_timeout_s == 300
    assert secret(notes.env, "DEMO_TOKEN") == "tok-123" and secret(notes.env, "NOTES_DIR") == "/tmp"
    with pytest.raises(MissingVariablesError, match="DEMO_TOKEN"):
        load_config(CLIENTS / "goose/goose/config.yaml", environ={})


def test_librechat_milliseconds_and_per_user_placeholders(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpstation.config"):
        config = load("librechat/librechat.yaml")
    notes = config.server("notes")
    assert (notes.call_timeout_s, notes.startup_timeout_s) == (60, 60)
    assert "mcpServers.events.headers: a LibreChat per-user placeholder" in caplog.text


def test_vs_code_settings_expand_only_the_mcp_block() -> None:
    config = load("vscode/User/settings.json")  # terminal env names ${input:never-asked}: never asked
    (events,) = config.servers
    assert isinstance(events, SseServerSpec) and events.url == ENV["DEMO_SSE_URL"]


def test_disabled_server_needs_none_of_its_variables() -> None:
    text = '{"mcpServers": {"off": {"command": "x", "env": {"K": "${UNSET_VAR}"}, "disabled": true}}}'
    config = parse_config(text, fmt="json", source=".mcp.json", environ={})
    assert config.server("off").enabled is False


# -- syntax and variables -------------------------------------------------------------------------


def test_comments_and_trailing_commas_only_where_the_client_allows_them() -> None:
    text = '{\n  // mine\n  "mcpServers": {"a": {"command": "x",},},\n}\n'
    assert parse_config(text, fmt="json", source="/p/.gemini/settings.json", environ={}).server("a").target == "x"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, fmt="json", source="/p/.mcp.json", environ={})
    message = str(caught.value)
    assert message.startswith("/p/.mcp.json:2: invalid JSON") and "VS Code, Zed, Gemini CLI" in message


def test_errors_in_a_jsonc_file_have_the_users_line_and_key() -> None:
    text = '{\n  /* a\n     block */\n  "servers": {\n    "a": {"type": "stdio", "command": 5}\n  }\n}\n'
    with pytest.raises(ConfigError) as caught:
        parse_config(text, fmt="json", source="/p/.vscode/mcp.json", environ={})
    assert str(caught.value).startswith("/p/.vscode/mcp.json:5: servers.a.command: Input should be a valid string")


def test_a_clients_value_of_the_wrong_kind_is_named() -> None:
    text = '{"mcpServers": {"a": {"httpUrl": "https://x/mcp", "timeout": "30s"}}}'
    with pytest.raises(ConfigError, match=r"mcpServers\.a\.timeout: expected a number of milliseconds"):
        parse_config(text, fmt="json", source="/p/.gemini/settings.json", environ={})


def test_every_variable_form(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "token.txt").write_text("from-file\n")
    args = ["${A}", "${B:-fallback}", "${env:A}", "${userHome}", "${file:token.txt}", "${config:editor.x}", "$$"]
    text = json.dumps({"mcpServers": {"s": {"command": "x", "args": args}}})
    path = tmp_path / "mcp_config.json"  # Windsurf's file: it reads ${file:...}
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="mcpstation.config"):
        spec = load_config(path, environ={"A": "a", "HOME": "/h"})
    assert isinstance(spec.server("s"), StdioServerSpec)
    assert spec.server("s").args == ("a", "fallback", "a", "/h", "from-file", "${config:editor.x}", "$$")  # type: ignore[union-attr]
    assert "${config:editor.x} is not a variable mcpstation knows" in caplog.text


def test_every_missing_variable_of_a_client_file_is_reported_at_once() -> None:
    text = '{"mcpServers": {"a": {"command": "${CMD}", "env": {"K": "${env:KEY}"}}, "b": {"url": "${URL}"}}}'
    with pytest.raises(MissingVariablesError) as caught:
        parse_config(text, fmt="json", source="/p/.cursor/mcp.json", environ={})
    assert caught.value.names == ("CMD", "KEY", "URL")


def test_forced_client_reads_a_file_of_any_name() -> None:
    text = '{"mcpServers": {"a": {"url": "https://x/mcp"}}}'
    config = parse_config(text, fmt="json", source="servers.json", environ={}, client="cline")
    assert config.server("a").transport == "sse"
    with pytest.raises(ConfigError, match="unknown client 'clyde'"):
        parse_config(text, fmt="json", source="servers.json", environ={}, client="clyde")


def test_native_toml_stays_strict() -> None:
    with pytest.raises(ConfigError, match=r"servers\.a\.comand: unknown key\. Did you mean 'command'\?"):
        parse_config('[servers.a]\ncomand = "x"\n', fmt="toml", source="mcpstation.toml", environ={})


# -- one server at a time ---------------------------------------------------------------------------


def test_an_entry_that_cannot_be_read_is_listed_and_the_others_load(caplog: pytest.LogCaptureFixture) -> None:
    text = (
        '{"mcpServers": {\n'
        '  "ok": {"command": "uvx", "args": ["mcp-server-time"]},\n'
        '  "wrong": {"command": "x", "timeout": "30s"},\n'
        '  "typed": {"command": 5},\n'
        '  "unset": {"command": "x", "env": {"K": "${env:NOT_SET_HERE}"}}\n'
        "}}\n"
    )
    with caplog.at_level(logging.WARNING, logger="mcpstation.config"):
        config = parse_config(text, fmt="json", source="/p/.gemini/settings.json", environ={})
    ok, wrong, typed, unset = config.servers
    assert ok.enabled and ok.unusable is None
    assert not wrong.enabled and wrong.unusable is not None
    assert wrong.unusable.startswith("/p/.gemini/settings.json:3: mcpServers.wrong.timeout: expected a number")
    assert typed.unusable is not None and "mcpServers.typed.command: Input should be a valid string" in typed.unusable
    assert typed.target == "(none)" and wrong.target == "x"  # listed by what the file writes; wrong values left out
    assert unset.unusable is not None and "NOT_SET_HERE" in unset.unusable and unset.target == "x"
    assert "'unset' cannot run and is left out" in caplog.text


def test_a_file_none_of_whose_servers_can_run_is_refused_as_before() -> None:
    text = '{"mcpServers": {"a": {"command": "x", "timeout": "30s"}, "b": {"command": "x", "env": {"K": "${B}"}}}}'
    with pytest.raises(ConfigError, match=r"mcpServers\.a\.timeout: expected a number"):
        parse_config(text, fmt="json", source="/p/.gemini/settings.json", environ={})
    only_off = '{"mcpServers": {"a": {"command": "${A}"}, "off": {"command": "x", "disabled": true}}}'
    with pytest.raises(MissingVariablesError, match="A"):
        parse_config(only_off, fmt="json", source="/p/.mcp.json", environ={})


def test_an_import_keeps_the_readable_servers_of_a_file_with_a_bad_one(tmp_path: Path) -> None:
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"a": {"command": "uvx"}, "b": {"command": "x", "envFile": 5}}}')
    result = import_servers([FoundFile("cursor", "Cursor", path, "project")], environ={}, project=str(tmp_path))
    assert not result.failed
    decided = {server.name: (server.status, server.reason) for server in result.servers}
    assert decided["a"] == (ImportStatus.IMPORTED, None)
    assert decided["b"][0] is ImportStatus.INVALID and "mcpServers.b.envFile" in str(decided["b"][1])
