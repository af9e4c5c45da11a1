"""The server-file editor: in-place edits of JSON and TOML files, safe across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fork_server import interpreter

from mcpstation.config import load_config
from mcpstation.config.editor import ServerFileEditor
from mcpstation.errors import ConfigError, UsageError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
PROCESS_TIMEOUT_S = 60.0  # the whole multi-process edit run

NATIVE_TOML = """\
# Station config, hand-written.
enabled = true  # keep the station on

[station]
naming = "prefix"

# The GitHub server: needs a token.
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]  # pinned later
env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }

[servers.clock]
url = "ws://127.0.0.1:8765/mcp"

[policy]
allowed_dynamic_stdio_commands = ["uvx"]  # nothing else
"""


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


def test_toml_edit_keeps_comments_and_unrelated_tables(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)
    editor = ServerFileEditor(path)

    editor.add({"name": "time", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}})
    editor.set_enabled("clock", False)

    text = path.read_text()
    for kept in (
        "# Station config, hand-written.",
        "enabled = true  # keep the station on",
        "# The GitHub server: needs a token.",
        "# pinned later",
        "# nothing else",
    ):
        assert kept in text
    assert text.startswith(NATIVE_TOML.split("[servers.clock]")[0])
    config = load_config(path, environ={"GITHUB_TOKEN": "t"})
    assert [spec.name for spec in config.servers] == ["github", "clock", "time"]
    assert not config.server("clock").enabled
    assert config.policy.allowed_dynamic_stdio_commands == ("uvx",)


def test_toml_remove_leaves_the_rest_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)

    ServerFileEditor(path).remove("clock")

    expected = NATIVE_TOML.replace('[servers.clock]\nurl = "ws://127.0.0.1:8765/mcp"\n\n', "")
    assert path.read_text() == expected


def test_seed_002_json_is_edited_by_id_keeping_order_and_keys(tmp_path: Path) -> None:
    path = _copy(tmp_path, "seed002.json")
    editor = ServerFileEditor(path)
    before = json.loads(path.read_text())

    entry = editor.add({"name": "time", "title": "Clock", "command": "uvx", "args": ["mcp-server-time"]})
    editor.set_enabled("tester", False)
    editor.remove("legacy")

    assert entry.name == "time" and entry.title == "Clock" and entry.transport == "stdio"
    after = json.loads(path.read_text())
    assert after["servers"][-1] == {"id": "time", "name": "Clock", "command": "uvx", "args": ["mcp-server-time"]}
    tester = after["servers"][0]
    assert list(tester) == list(before["servers"][0])  # same keys, same order
    assert tester["enabled"] is False
    assert [server.get("id", server.get("name")) for server in after["servers"]] == [
        "tester",
        "search",
        "socket",
        "explicit",
        "time",
    ]
    assert path.read_text().startswith('{\n  "servers": [\n    {\n      "id"')  # its indentation kept


def test_claude_desktop_shape_uses_its_own_keys(tmp_path: Path) -> None:
    path = _copy(tmp_path, "claude_desktop.json")
    editor = ServerFileEditor(path)

    editor.add({"name": "remote", "transport": "sse", "url": "https://x.example/sse"})
    editor.set_enabled("remote", False)
    editor.set_enabled("legacy-sse", True)
    with pytest.raises(UsageError, match="no place for 'namespace'"):
        editor.add({"name": "other", "command": "uvx", "namespace": "x"})

    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["remote"] == {"type": "sse", "url": "https://x.example/sse", "disabled": True}
    assert "disabled" not in servers["legacy-sse"]
    states = {entry.name: entry.enabled for entry in editor.list()}
    assert states == {"filesystem": True, "linear": True, "legacy-sse": True, "remote": False}


def test_invalid_result_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)
    before = path.read_bytes()

    with pytest.raises(ConfigError, match=r"not saved.*servers\.bad\.comand: unknown key"):
        ServerFileEditor(path).add({"name": "bad", "comand": "npx"})

    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcpstation.toml", "mcpstation.toml.lock"]


def test_invalid_first_server_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"

    with pytest.raises(ConfigError):
        ServerFileEditor(path).add({"name": "bad", "transport": "carrier-pigeon"})

    assert not path.exists()


def test_missing_file_is_created_in_the_native_shape(tmp_path: Path) -> None:
    toml_path, json_path = tmp_path / "new.toml", tmp_path / "new.json"

    ServerFileEditor(toml_path).add({"name": "a", "url": "https://a.example/mcp"})
    ServerFileEditor(json_path).add({"name": "a", "url": "https://a.example/mcp"})

    assert toml_path.read_text() == '[servers.a]\nurl = "https://a.example/mcp"\n\n'
    assert json.loads(json_path.read_text()) == {"servers": [{"id": "a", "url": "https://a.example/mcp"}]}
    assert os.stat(json_path).st_mode & 0o777 == 0o600
    assert load_config(toml_path).servers[0].name == "a"


def test_unset_variables_do_not_block_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)

    ServerFileEditor(path).set_enabled("github", False)

    assert "enabled = false" in path.read_text()


def test_duplicate_and_missing_names_are_usage_errors(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)
    editor = ServerFileEditor(path)

    with pytest.raises(UsageError, match="already has a server 'github'"):
        editor.add({"name": "github", "command": "uvx"})
    with pytest.raises(UsageError, match=r"no server 'ghost'.*'github', 'clock'"):
        editor.remove("ghost")
    with pytest.raises(UsageError, match="no server"):
        editor.set_enabled("ghost", True)
    assert path.read_text() == NATIVE_TOML


def test_unsupported_shapes_and_formats_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"edits \.json, \.jsonc, \.toml and \.yaml server files, not \.ini"):
        ServerFileEditor(tmp_path / "config.ini")
    seed003 = _copy(tmp_path, "seed003.yaml")  # a YAML `mcp:` block
    with pytest.raises(ConfigError, match="`mcp` block"):
        ServerFileEditor(seed003).add({"name": "x", "command": "uvx"})
    seed000 = _copy(tmp_path, "seed000.toml")
    with pytest.raises(ConfigError, match="`mcp` block"):
        ServerFileEditor(seed000).add({"name": "x", "command": "uvx"})


def test_list_is_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text(NATIVE_TOML)
    editor = ServerFileEditor(path)

    first = editor.list()
    assert editor.list() is first
    ServerFileEditor(path).remove("clock")  # another editor, as another process would

    assert [entry.name for entry in editor.list()] == ["github"]
    assert first[0].target == "npx -y @modelcontextprotocol/server-github"


_WORKER = textwrap.dedent(
    """
    import sys
    from mcpstation.config.editor import ServerFileEditor

    path, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    editor = ServerFileEditor(path, lock_timeout_s=60)
    for index in range(count):
        editor.add({"name": f"w{worker}-{index}", "command": "uvx", "args": [str(index)]})
    """
)


@pytest.mark.parametrize("name", ["servers.json", "mcpstation.toml"])
def test_concurrent_processes_lose_no_edit(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    workers, adds = 4, 10
    processes = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(worker), str(adds)], stderr=subprocess.PIPE)
        for worker in range(workers)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=PROCESS_TIMEOUT_S)
        assert process.returncode == 0, stderr.decode()

    names = {entry.name for entry in ServerFileEditor(path).list()}
    assert names == {f"w{worker}-{index}" for worker in range(workers) for index in range(adds)}
    assert len(load_config(path).servers) == workers * adds


# -- other clients' files: their vocabulary, every key they own, their comments --------------------

CLIENTS = Path(__file__).parents[1] / "fixtures" / "clients"


def _client_copy(tmp_path: Path, fixture: str) -> Path:
    target = tmp_path / fixture
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((CLIENTS / fixture).read_bytes())
    return target


def test_seed_002_file_with_an_unrelated_top_level_key_is_edited_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text('{\n  "schemaVersion": 2,\n  "servers": [\n    {"id": "tester", "command": "node"}\n  ]\n}\n')
    command = [interpreter(), "-m", "mcpstation", "servers", "add", "time", "--config-file", str(path)]
    done = subprocess.run([*command, "--", "uvx", "mcp-server-time"], capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    after = json.loads(path.read_text())
    assert after["schemaVersion"] == 2
    assert after["servers"][-1] == {"id": "time", "transport": "stdio", "command": "uvx", "args": ["mcp-server-time"]}
    assert path.read_text().startswith(
        '{\n  "schemaVersion": 2,\n  "servers": [\n    {"id": "tester", "command": "node"},'
    )


def test_claude_desktop_file_keeps_every_other_byte(tmp_path: Path) -> None:
    path = _client_copy(tmp_path, "claude-desktop/claude_desktop_config.json")
    before = path.read_text()
    editor = ServerFileEditor(path)

    editor.add({"name": "time", "command": "uvx", "args": ["mcp-server-time"]})
    editor.remove("time")

    assert path.read_text() == before


def test_vs_code_jsonc_keeps_comments_and_gets_servers_in_its_keys(tmp_path: Path) -> None:
    path = _client_copy(tmp_path, "vscode/.vscode/mcp.json")
    editor = ServerFileEditor(path)

    editor.add({"name": "time", "transport": "stdio", "command": "uvx", "args": ["mcp-server-time"]})
    editor.add({"name": "api", "transport": "streamable_http", "url": "https://api.example/mcp"})
    editor.remove("web")

    text = path.read_text()
    for kept in ("// Servers for this workspace.", '"inputs": [', '"dev": {"watch": "src/**/*.py"},'):
        assert kept in text
    assert "/* remote, same token */" not in text  # it belonged to the server removed
    assert [entry.name for entry in editor.list()] == ["demo", "time", "api"]
    assert '"time": {\n      "type": "stdio",\n      "command": "uvx",' in text
    assert '"api": {\n      "type": "http",\n      "url": "https://api.example/mcp"' in text
    with pytest.raises(UsageError, match="VS Code has no switch for one server"):
        editor.set_enabled("demo", False)


def test_zed_settings_switch_a_server_off_in_place(tmp_path: Path) -> None:
    path = _client_copy(tmp_path, "zed/zed/settings.json")
    before = path.read_text()
    editor = ServerFileEditor(path)

    editor.set_enabled("notes", False)
    editor.set_enabled("web", True)

    after = path.read_text()
    assert after.startswith("// Zed settings\n//\n// For information")
    assert '"theme": "One Dark",' in after and "// the older shape: a command table" in after
    states = {entry.name: entry.enabled for entry in editor.list()}
    assert states == {"notes": False, "archive": True, "mcp-server-github": True, "web": True}
    assert len(after.splitlines()) == len(before.splitlines()) + 1  # notes' `"enabled": false` added
    assert '"enabled": true\n    },\n  },\n}' in after  # web's switch flipped where it stood


def test_codex_toml_gets_its_own_keys_and_keeps_the_rest(tmp_path: Path) -> None:
    path = _client_copy(tmp_path, "codex/.codex/config.toml")
    editor = ServerFileEditor(path)

    editor.add({"name": "api", "transport": "streamable_http", "url": "https://api.example/mcp", "headers": {"X": "1"}})
    editor.set_enabled("notes", False)
    with pytest.raises(UsageError, match="does not speak the 'sse' transport"):
        editor.add({"name": "old", "transport": "sse", "url": "https://old.example/sse"})

    text = path.read_text()
    assert text.startswith('# Codex CLI configuration\nmodel = "gpt-5-codex"\n')
    assert '[profiles.deep]\nmodel = "o3"' in text and '[projects."/home/dev/shop"]' in text
    assert '[mcp_servers.api]\nurl = "https://api.example/mcp"\nhttp_headers = {X = "1"}' in text
    config = load_config(path, environ={"DEMO_TOKEN": "t"})
    assert config.server("notes").enabled is False
    assert config.server("api").headers["X"].get_secret_value() == "1"  # type: ignore[union-attr]


def test_windsurf_and_gemini_use_their_own_keys_and_switches(tmp_path: Path) -> None:
    windsurf = _client_copy(tmp_path, "windsurf/mcp_config.json")
    ServerFileEditor(windsurf).add({"name": "api", "transport": "streamable_http", "url": "https://a.example/mcp"})
    assert json.loads(windsurf.read_text())["mcpServers"]["api"] == {"serverUrl": "https://a.example/mcp"}

    gemini = _client_copy(tmp_path, "gemini-cli/.gemini/settings.json")
    editor = ServerFileEditor(gemini)
    editor.set_enabled("notes", False)
    editor.set_enabled("experimental", True)
    assert "// servers listed here are not started" in gemini.read_text()
    assert {entry.name: entry.enabled for entry in editor.list()} == {
        "notes": False,
        "web": True,
        "events": True,
        "experimental": True,
    }


def test_a_jsonc_server_file_is_edited_with_its_comments(tmp_path: Path) -> None:
    path = tmp_path / "servers.jsonc"
    path.write_text('{\n  // mine\n  "mcpServers": {\n    "a": {"command": "/usr/bin/true"}, // first\n  },\n}\n')
    editor = ServerFileEditor(path)
    editor.add({"name": "b", "command": "/usr/bin/false"})
    assert [entry.name for entry in editor.list()] == ["a", "b"]
    assert "// mine" in path.read_text() and "// first" in path.read_text()


def test_a_client_file_keeps_its_broken_entry_but_an_edit_never_writes_one(tmp_path: Path) -> None:
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"old": {"command": "x", "envFile": "/nowhere/.env"}}}\n')
    editor = ServerFileEditor(path)
    editor.add({"name": "time", "command": "uvx", "args": ["mcp-server-time"]})  # the old entry's problem is its own
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=r"not saved: server 'bad' could not run \(.*mcpServers\.bad\.args"):
        editor.add({"name": "bad", "command": "uvx", "args": "mcp-server-time"})
    assert path.read_bytes() == before
