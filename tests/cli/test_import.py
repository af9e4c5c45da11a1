"""`mcpstation import` on a fake home directory holding several clients' files, and `--config` on one of them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fork_server import interpreter

from mcpstation.config import StdioServerSpec, StreamableHttpServerSpec, load_config

CLIENTS = Path(__file__).parents[1] / "fixtures" / "clients"
CLI_TIMEOUT_S = 120.0  # one CLI run on a loaded machine
TOKEN = "tok-never-written"
PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)


def run(args: list[str], *, home: Path, cwd: Path, appdata: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("XDG_CONFIG_HOME", "APPDATA", "CODEX_HOME")}
    env |= {"HOME": str(home), "DEMO_TOKEN": TOKEN, "COLUMNS": "200"}
    if appdata is not None:
        env["APPDATA"] = str(appdata)
    return subprocess.run(
        [PY, "-m", "mcpstation", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def place(fixture: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((CLIENTS / fixture).read_bytes())


@pytest.fixture
def machine(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A home with Cursor, Claude Desktop, Codex, goose and Gemini CLI files, Cline under APPDATA,
    and a project with a VS Code and a Claude Code file."""
    home, project, appdata = tmp_path / "home", tmp_path / "shop", tmp_path / "AppData" / "Roaming"
    place("cursor/.cursor/mcp.json", home / ".cursor" / "mcp.json")
    place("claude-desktop/claude_desktop_config.json", home / ".config" / "Claude" / "claude_desktop_config.json")
    place("codex/.codex/config.toml", home / ".codex" / "config.toml")
    place("goose/goose/config.yaml", home / ".config" / "goose" / "config.yaml")
    place("gemini-cli/.gemini/settings.json", home / ".gemini" / "settings.json")
    cline = appdata / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "settings"
    place("cline/cline_mcp_settings.json", cline / "cline_mcp_settings.json")
    place("vscode/.vscode/mcp.json", project / ".vscode" / "mcp.json")
    place("claude-code/.mcp.json", project / ".mcp.json")
    place("cursor/.env.mcp", project / ".env.mcp")  # Cursor's ${workspaceFolder}/.env.mcp
    return home, project, appdata


def test_import_auto_finds_every_clients_file_and_decides_each_server(machine: tuple[Path, Path, Path]) -> None:
    home, project, appdata = machine
    done = run(["import", "--from", "auto", "--json"], home=home, cwd=project, appdata=appdata)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    assert [(found["client"], found["scope"]) for found in report["files"]] == [
        ("claude-code", "project"),
        ("vscode", "project"),
        ("claude-desktop", "user"),
        ("cursor", "user"),
        ("cline", "user"),
        ("codex", "user"),
        ("gemini-cli", "user"),
        ("goose", "user"),
    ]
    decided = {(server["client"], server["name"]): server["status"] for server in report["servers"]}
    assert decided[("Claude Code", "demo")] == "imported"
    assert decided[("Claude Code", "web")] == "imported"  # project files first: it wins the name
    assert decided[("VS Code", "web")] == "conflict"
    assert decided[("Claude Desktop", "notes")] == "imported"
    assert decided[("Cline", "notes")] == "conflict"  # same name, another definition
    assert decided[("Cursor", "docs")] == "imported"
    assert decided[("OpenAI Codex CLI", "docs")] == "conflict"
    assert decided[("goose", "developer")] == "skipped"  # a goose builtin runs inside goose
    assert decided[("Gemini CLI", "experimental")] == "imported"
    assert {server["name"]: server["enabled"] for server in report["servers"] if server["client"] == "Gemini CLI"}[
        "experimental"
    ] is False
    assert report["failed"] == []


def test_import_into_writes_a_native_toml_that_loads_and_holds_no_secret(machine: tuple[Path, Path, Path]) -> None:
    home, project, appdata = machine
    into = project / "mcpstation.toml"
    done = run(["import", "--into", str(into)], home=home, cwd=project, appdata=appdata)
    assert done.returncode == 0, done.stderr
    assert "MCP servers found" in done.stdout and f"to {into}" in done.stdout

    text = into.read_text()
    assert TOKEN not in text
    assert "# from Cursor:" in text and 'Authorization = "Bearer ${DEMO_TOKEN}"' in text
    assert os.stat(into).st_mode & 0o777 == 0o600
    assert 'DOCS_REGION = "${DOCS_REGION}"' in text  # Cursor's envFile: its variables become references
    environ = {"DEMO_TOKEN": "t", "DEMO_HTTP_URL": "http://h/mcp", "DEMO_SSE_URL": "http://h/sse"}
    config = load_config(into, environ=environ | {"DOCS_REGION": "eu", "DOCS_LANG": "en"})
    docs = config.server("docs")
    assert isinstance(docs, StdioServerSpec) and docs.env["DOCS_REGION"].get_secret_value() == "eu"
    web = config.server("web")
    assert isinstance(web, StreamableHttpServerSpec) and web.call_timeout_s == 30  # Claude Code's 30000 ms


def test_import_from_one_client_into_an_existing_file_keeps_it(machine: tuple[Path, Path, Path]) -> None:
    home, project, appdata = machine
    into = project / "mcpstation.toml"
    into.write_text('# mine\n[station]\nnaming = "bare"  # short names\n\n[servers.docs]\ncommand = "mydocs"\n')
    done = run(["import", "--from", "cursor", "--into", str(into)], home=home, cwd=project, appdata=appdata)
    assert done.returncode == 0, done.stderr

    text = into.read_text()
    assert text.startswith('# mine\n[station]\nnaming = "bare"  # short names\n\n[servers.docs]\ncommand = "mydocs"\n')
    assert [spec.name for spec in load_config(into, environ={"DEMO_TOKEN": "t", "DEMO_HTTP_URL": "h"}).servers] == [
        "docs",
        "web",
    ]


def test_import_prints_the_toml_and_reports_on_stderr(machine: tuple[Path, Path, Path]) -> None:
    home, project, appdata = machine
    done = run(["import", "--from", "codex"], home=home, cwd=project, appdata=appdata)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Imported by `mcpstation import`.")
    assert "[servers.notes] # from OpenAI Codex CLI:" in done.stdout and "MCP servers found" in done.stderr
    vscode = run(["import", "--from", "vscode"], home=home, cwd=project, appdata=appdata)
    assert 'DEMO_TOKEN = "${MCPSTATION_INPUT_DEMO_TOKEN}"' in vscode.stdout  # an input stays a reference
    assert f'"-m", "mcpstation.testing.demo_server", "--name", "{project.name}"' in vscode.stdout


def test_import_with_nothing_to_find_says_so(tmp_path: Path) -> None:
    done = run(["import"], home=tmp_path, cwd=tmp_path)
    assert done.returncode == 3 and "no client's MCP config was found" in done.stderr
    unknown = run(["import", "--from", "clyde"], home=tmp_path, cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown client 'clyde'" in unknown.stderr


def test_config_reads_a_clients_file_in_place(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {"off": {"command": "never-started", "disabled": true}}, "theme": "x"}')
    done = run(["--config", str(config), "status", "--json"], home=tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (server,) = json.loads(done.stdout)["servers"]
    assert (server["name"], server["state"]) == ("off", "DISABLED")
