"""YAML client files (Continue, goose, LibreChat) edited in place: every other key, comment and the order stay."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from mcpstation.config import StdioServerSpec, StreamableHttpServerSpec, load_config
from mcpstation.config._yaml_edit import YamlText
from mcpstation.config.editor import ServerFileEditor
from mcpstation.errors import UsageError

CLIENTS = Path(__file__).parents[1] / "fixtures" / "clients"
FIXTURES = ("continue/.continue/config.yaml", "goose/goose/config.yaml", "librechat/librechat.yaml")

CONTINUE = """\
# Continue: my assistant for this repository.
name: Repo assistant
version: 1.0.0
schema: v1

models:
  - name: Claude Sonnet   # the default chat model
    provider: anthropic
    model: claude-sonnet-4
    apiKey: ${{ secrets.ANTHROPIC_API_KEY }}
    roles: [chat, edit]

# MCP servers, started by Continue in agent mode.
mcpServers:
  # The team's notes
  - name: Notes
    command: python3
    args: ["-m", "mcpstation.testing.demo_server", "--name", notes]
    env:
      NOTES_TOKEN: ${{ secrets.DEMO_TOKEN }}
  # Remote docs search
  - name: Docs
    type: streamable-http
    url: https://docs.example/mcp
    connectionTimeout: 60000

rules:
  - Always answer in English.   # keep this
"""

GOOSE = """\
GOOSE_PROVIDER: anthropic
GOOSE_MODEL: claude-sonnet-4
# extensions goose loads at start
extensions:
  developer:
    bundled: true
    display_name: Developer
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  # notes for the whole team
  notes:
    args:
    - -m
    - mcpstation.testing.demo_server
    bundled: null
    cmd: python3
    description: Notes for the team
    enabled: true
    env_keys:
    - DEMO_TOKEN
    envs:
      NOTES_DIR: /tmp
    name: Team notes
    timeout: 300
    type: stdio
GOOSE_MODE: smart_approve  # ask before writing
"""

LIBRECHAT = """\
# For more information, see the Configuration Guide:
# https://www.librechat.ai/docs/configuration/librechat_yaml

# Configuration version (required)
version: 1.2.8

# Cache settings: Set to true to enable caching
cache: true

interface:
  mcpServers:
    use: true
    create: false

mcpServers:
  # Local notes server
  notes:
    type: stdio
    command: python3
    args:
      - -m
      - mcpstation.testing.demo_server
    env:
      NOTES_TOKEN: "${DEMO_TOKEN}"
    timeout: 60000   # ms
  # Per-user event feed
  events:
    type: sse
    url: "${DEMO_SSE_URL}"
    headers:
      X-User-ID: "{{LIBRECHAT_USER_ID}}"

# Custom endpoints
endpoints:
  custom: []
"""

ENV = {"DEMO_TOKEN": "t", "DEMO_SSE_URL": "http://127.0.0.1:1/sse", "ANTHROPIC_API_KEY": "k"}


def write(tmp_path: Path, where: str, text: str) -> Path:
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines taken out of `before` and the lines put into `after`."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [line[2:] for line in diff if line.startswith("- ")], [line[2:] for line in diff if line.startswith("+ ")]


@pytest.mark.parametrize("text", [CONTINUE, GOOSE, LIBRECHAT, *((CLIENTS / f).read_text() for f in FIXTURES)])
def test_a_yaml_file_read_and_written_back_is_unchanged(text: str) -> None:
    assert YamlText(text).dumps() == text


def test_continue_gets_a_server_at_the_end_of_its_list_in_its_own_keys(tmp_path: Path) -> None:
    path = write(tmp_path, ".continue/config.yaml", CONTINUE)
    editor = ServerFileEditor(path)
    editor.add({"name": "time", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}})
    editor.add({"name": "api", "transport": "streamable_http", "url": "https://api.example/mcp",
                "headers": {"Authorization": "Bearer ${{ secrets.API }}"}})  # fmt: skip
    after = path.read_text()
    removed, added = changed_lines(CONTINUE, after)
    assert removed == []
    assert added == [
        "  - name: time",
        "    command: uvx",
        "    args: [mcp-server-time]",
        "    env:",
        "      TZ: UTC",
        "  - name: api",
        "    type: streamable-http",
        "    url: https://api.example/mcp",
        "    requestOptions:",
        "      headers:",
        "        Authorization: Bearer ${{ secrets.API }}",
    ]
    assert after.index("- name: api") < after.index("\nrules:")  # inside the list, before the next key
    config = load_config(path, environ={**ENV, "API": "secret"})
    assert [spec.name for spec in config.servers] == ["Notes", "Docs", "time", "api"]
    api = config.server("api")
    assert (
        isinstance(api, StreamableHttpServerSpec) and api.headers["Authorization"].get_secret_value() == "Bearer secret"
    )


def test_continue_loses_one_server_and_its_comment_only(tmp_path: Path) -> None:
    path = write(tmp_path, ".continue/config.yaml", CONTINUE)
    ServerFileEditor(path).remove("Notes")
    removed, added = changed_lines(CONTINUE, path.read_text())
    assert added == []
    assert removed == [
        "  # The team's notes",
        "  - name: Notes",
        "    command: python3",
        '    args: ["-m", "mcpstation.testing.demo_server", "--name", notes]',
        "    env:",
        "      NOTES_TOKEN: ${{ secrets.DEMO_TOKEN }}",
    ]
    with pytest.raises(UsageError, match="Continue has no switch for one server"):
        ServerFileEditor(path).set_enabled("Docs", False)


def test_goose_gets_an_extension_goose_can_load(tmp_path: Path) -> None:
    path = write(tmp_path, "goose/config.yaml", GOOSE)
    editor = ServerFileEditor(path)
    editor.add({"name": "time", "title": "Clock", "command": "uvx", "args": ["mcp-server-time"]})
    editor.add({"name": "feed", "transport": "sse", "url": "http://127.0.0.1:1/sse"})
    after = path.read_text()
    removed, added = changed_lines(GOOSE, after)
    assert removed == []
    assert added == [
        "  time:",
        "    type: stdio",
        "    name: Clock",
        "    cmd: uvx",
        "    args: [mcp-server-time]",
        "    enabled: true",
        "    envs: {}",
        "    timeout: 300",
        "  feed:",
        "    type: sse",
        "    uri: http://127.0.0.1:1/sse",
        "    name: feed",
        "    enabled: true",
        "    envs: {}",
        "    timeout: 300",
    ]
    assert after.endswith("GOOSE_MODE: smart_approve  # ask before writing\n")  # the key after the block stays last
    time = load_config(path, environ=ENV).server("time")
    assert isinstance(time, StdioServerSpec) and (time.title, time.target) == ("Clock", "uvx mcp-server-time")


def test_goose_switches_an_extension_off_and_removes_one_in_place(tmp_path: Path) -> None:
    path = write(tmp_path, "goose/config.yaml", GOOSE)
    editor = ServerFileEditor(path)
    editor.set_enabled("notes", False)
    removed, added = changed_lines(GOOSE, path.read_text())
    assert (removed, added) == (["    enabled: true"], ["    enabled: false"])  # notes' own line; developer's stays
    assert path.read_text().count("enabled: true") == 1
    editor.remove("notes")
    removed, added = changed_lines(GOOSE, path.read_text())
    assert added == [] and removed[0] == "  # notes for the whole team" and removed[-1] == "    type: stdio"
    assert "bundled: null" not in path.read_text() and "GOOSE_MODE" in path.read_text()
    assert [entry.name for entry in editor.list()] == ["developer"]


def test_librechat_keeps_its_comments_and_order(tmp_path: Path) -> None:
    path = write(tmp_path, "librechat.yaml", LIBRECHAT)
    editor = ServerFileEditor(path)
    editor.add({"name": "web", "transport": "streamable_http", "url": "https://web.example/mcp"})
    editor.remove("notes")
    after = path.read_text()
    removed, added = changed_lines(LIBRECHAT, after)
    assert added == ["  web:", "    type: streamable-http", "    url: https://web.example/mcp"]
    assert removed[0] == "  # Local notes server" and removed[-1] == "    timeout: 60000   # ms"
    assert "  # Per-user event feed\n  events:" in after  # the next server keeps the comment above it
    assert after.index("  web:") < after.index("# Custom endpoints")
    config = load_config(path, environ=ENV)
    assert [spec.name for spec in config.servers] == ["events", "web"]


def test_removing_the_last_server_leaves_an_empty_table(tmp_path: Path) -> None:
    path = write(tmp_path, "librechat.yaml", LIBRECHAT)
    editor = ServerFileEditor(path)
    editor.remove("notes")
    editor.remove("events")
    assert "mcpServers: {}\n" in path.read_text() and "# Custom endpoints" in path.read_text()
    assert load_config(path, environ=ENV).servers == ()
