"""A bad config names the file, the line, the field path in the user's terms, and what was expected."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcpstation.config import load_config, parse_config
from mcpstation.errors import ConfigError

SECRET = "sk-live-0123456789"


def error_of(text: str, fmt: str, source: str = "mcpstation.toml") -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, fmt=fmt, source=source, environ={})  # type: ignore[arg-type]
    return str(caught.value)


def test_unknown_key_in_native_toml_has_line_and_did_you_mean() -> None:
    text = '[station]\nnaming = "prefix"\n\n[servers.github]\nargs = ["-y"]\n\ncomand = "npx"\n'
    message = error_of(text, "toml")
    assert message.splitlines()[0] == "mcpstation.toml:7: servers.github.comand: unknown key. Did you mean 'command'?"


def test_unknown_key_in_the_nth_mcp_server_table() -> None:
    text = (
        '[mcp]\nenable = true\n\n[[mcp.servers]]\nname = "a"\ncommand = "x"\n\n'
        '[[mcp.servers]]\nname = "b"\ntransport = "http"\nurll = "https://x"\n'
    )
    message = error_of(text, "toml", "bot_config.toml")
    assert message.startswith("bot_config.toml:11: mcp.servers[1].urll: unknown key. Did you mean 'url'?")


def test_typo_in_a_client_file_is_a_warning_with_its_line(caplog: pytest.LogCaptureFixture) -> None:
    text = '{\n  "mcpServers": {\n    "fs": {\n      "command": "npx",\n      "argz": []\n    }\n  }\n}\n'
    with caplog.at_level(logging.WARNING, logger="mcpstation.config"):
        config = parse_config(text, fmt="json", source="claude_desktop_config.json", environ={})
    assert config.server("fs").target == "npx"  # read leniently, as Claude Desktop would
    (record,) = caplog.records
    assert record.getMessage() == (
        "claude_desktop_config.json:5: mcpServers.fs.argz: not a key Claude Desktop knows; ignored. "
        "Did you mean 'args'?"
    )


def test_unknown_key_in_yaml_has_its_line() -> None:
    text = "mcp:\n  servers:\n    local:\n      transport: sse\n      url: http://h/sse\n      namespce: x\n"
    message = error_of(text, "yaml", "config.yaml")
    assert message.startswith("config.yaml:6: mcp.servers.local.namespce: unknown key. Did you mean 'namespace'?")


def test_unknown_top_level_and_section_keys() -> None:
    assert "mcpstation.toml:1: stations: unknown key. Did you mean 'station'?" in error_of("[stations]\n", "toml")
    message = error_of("mcp:\n  alowed_dynamic_url_prefixes: []\n", "yaml", "c.yaml")
    assert (
        message
        == "c.yaml:2: mcp.alowed_dynamic_url_prefixes: unknown key. Did you mean 'allowed_dynamic_url_prefixes'?"
    )


def test_bad_type_names_the_field_and_what_was_expected() -> None:
    message = error_of('[servers.a]\ncommand = 5\nargs = "x"\n', "toml")
    assert "mcpstation.toml:2: servers.a.command: Input should be a valid string (got int)." in message
    assert "mcpstation.toml:3: servers.a.args: Input should be a valid tuple (got str)." in message


def test_bad_transport_points_at_the_transport_key() -> None:
    text = '[mcp]\n[[mcp.servers]]\nname = "a"\ntransport = "carrier-pigeon"\ncommand = "x"\n'
    message = error_of(text, "toml")
    assert message.startswith("mcpstation.toml:4: mcp.servers[0].transport: Expected transport 'stdio'")
    assert "stdio" not in message.split(":")[2]  # the path has no pydantic union tag


def test_key_of_another_transport_says_so() -> None:
    message = error_of('[servers.a]\ncommand = "x"\nurl = "http://h"\n', "toml")
    assert message.startswith("mcpstation.toml:3: servers.a.url: unknown key. It belongs to transport")


def test_missing_required_key_points_at_the_server() -> None:
    message = error_of('[servers.a]\ntransport = "sse"\n', "toml")
    assert message == "mcpstation.toml:1: servers.a.url: required key is missing."


def test_duplicate_server_names_are_refused() -> None:
    text = '{\n "servers": [\n  {"id": "a", "command": "x"},\n  {"id": "a", "url": "http://h/mcp"}\n ]\n}'
    message = error_of(text, "json", "servers.json")
    assert message == "servers.json:4: servers[1].id: server name 'a' is used twice (first at servers[0].id)."
    message = error_of('{"mcpServers": {"a": {"command": "x"},\n "a": {"command": "y"}}}', "json", "c.json")
    assert message == "c.json:2: mcpServers.a: duplicate key."
    message = error_of("mcp:\n  servers:\n    a: {command: x}\n    a: {command: y}\n", "yaml", "c.yaml")
    assert message == "c.yaml:4: mcp.servers.a: duplicate key."


@pytest.mark.parametrize(
    ("fmt", "text", "line"),
    [
        ("toml", '[servers.a]\ncommand = "x\n', 2),
        ("json", '{\n "servers": {\n  "a": {"command": "x",}\n }\n}', 3),
        ("yaml", "mcp:\n  servers:\n    a: {command: x,\n  bad: : :\n", 4),
    ],
)
def test_syntax_error_gives_the_parser_line(fmt: str, text: str, line: int) -> None:
    message = error_of(text, fmt, f"c.{fmt}")
    assert message.startswith(f"c.{fmt}:{line}: invalid {fmt.upper()}")


def test_bearer_mode_other_than_bearer_or_none_is_refused() -> None:
    text = '[mcp]\n[[mcp.servers]]\nname = "a"\nurl = "https://x"\n[mcp.servers.authorization]\nmode = "oauth"\n'
    assert error_of(text, "toml").startswith("mcpstation.toml:6: mcp.servers[0].authorization.mode: expected")


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("toml", f'[servers.a]\ncommand = "x"\nenv = {{ K = ["{SECRET}"] }}\n'),
        ("toml", f'[servers.a]\nurl = "https://x"\ntransport = "http"\nbearer_token = ["{SECRET}"]\n'),
        ("toml", f'[servers.a]\ncommand = "x"\nheaders = {{ A = "{SECRET}" }}\n'),
        ("toml", f'[servers.a]\ncommand = "x"\nenv = {{ K = "{SECRET}" }}\nbogus = 1\n'),
        ("toml", f'[servers.a]\ncommand = "x"\nenv = {{ K = "{SECRET}\n'),
        ("json", f'{{"mcpServers": {{"a": {{"url": "https://x", "headers": {{"A": ["{SECRET}"]}}}}}}}}'),
        ("json", f'{{"mcpServers": {{"a": {{"command": "x", "env": {{"K": "{SECRET}",}}}}}}}}'),
        ("yaml", f"mcp:\n  servers:\n    a:\n      command: x\n      env: {{K: [{SECRET}]}}\n"),
        ("yaml", f"mcp:\n  servers:\n    a:\n      command: x\n      env: {{K: {SECRET}, : : }}\n"),
    ],
)
def test_secret_values_never_appear_in_messages(fmt: str, text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, fmt=fmt, source="c")  # type: ignore[arg-type]
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_repr_of_a_config_hides_secrets(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(
        '[servers.a]\ntransport = "http"\nurl = "https://x"\n'
        f'bearer_token = "{SECRET}"\nheaders = {{ A = "{SECRET}" }}\n'
        f'[servers.b]\ncommand = "x"\nenv = {{ K = "${{TOKEN}}" }}\n'
    )
    config = load_config(path, environ={"TOKEN": SECRET})
    assert SECRET not in repr(config)
    assert SECRET not in str(config)
    assert SECRET not in config.model_dump_json()


def test_a_near_miss_of_a_clients_root_key_suggests_that_key() -> None:
    text = '{\n  "mcpServer": {\n    "fs": {"command": "npx"}\n  }\n}\n'
    message = error_of(text, "json", "mcp.json")
    assert message.startswith("mcp.json:2: mcpServer: unknown key. Did you mean 'mcpServers'?")
    assert "Did you mean 'servers'" not in message
    assert "Did you mean 'servers'?" in error_of('{"server": {}}', "json", "mcp.json")  # ours still ours


def test_a_misspelt_root_key_in_a_named_client_file_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    text = '{"mcpServer": {"fs": {"command": "npx"}}, "theme": "dark"}'
    with caplog.at_level(logging.WARNING, logger="mcpstation.config"):
        config = parse_config(text, fmt="json", source="claude_desktop_config.json", environ={})
    assert config.servers == ()
    (record,) = caplog.records
    assert record.getMessage() == (
        "claude_desktop_config.json: mcpServer: not a key Claude Desktop knows; ignored. Did you mean 'mcpServers'?"
    )
