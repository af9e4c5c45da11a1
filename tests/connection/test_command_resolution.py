"""How a stdio server's command is found: PATH, then the station's own environment; paths from the config's folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from mcpstation import Station
from mcpstation.config import load_config, parse_config
from mcpstation.config.models import StdioServerSpec
from mcpstation.connection._launch import own_scripts_folder, resolve_command
from mcpstation.connection.transports import command_not_found

START_TIMEOUT_S = 60.0  # a whole station start with one real server, on a loaded 2-core machine
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # what an editor or the Inspector hands a gateway: no venv on it
TINY_SERVER = Path(__file__).resolve().parents[2] / "bench" / "servers" / "tiny_server.py"


@pytest.fixture
def system_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The station runs from its venv's interpreter, but the venv is not on PATH (not activated)."""
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    assert own_scripts_folder() not in SYSTEM_PATH.split(os.pathsep)


def test_a_bare_command_of_the_stations_own_environment_is_found_off_path(system_path: None) -> None:
    spec = StdioServerSpec(name="time", command="mcp-server-time")
    assert resolve_command(spec) == os.path.join(own_scripts_folder(), "mcp-server-time")
    assert resolve_command(StdioServerSpec(name="sh", command="sh")) in ("/usr/bin/sh", "/bin/sh")  # PATH first


def test_command_not_found_says_where_it_looked_and_the_nearest_name(system_path: None) -> None:
    spec = StdioServerSpec(name="time", command="mcp-server-tme")
    assert resolve_command(spec) is None
    message = str(command_not_found(spec))
    assert message.startswith("command not found: mcp-server-tme (looked on PATH (/usr/local/bin:/usr/bin:/bin)")
    assert f"and in {own_scripts_folder()}" in message
    assert message.endswith(f"nearest: {os.path.join(own_scripts_folder(), 'mcp-server-time')})")
    missing = StdioServerSpec(name="x", command="/opt/nowhere/server")
    assert str(command_not_found(missing)) == "command not found: /opt/nowhere/server (looked for /opt/nowhere/server)"


@pytest.mark.anyio
async def test_a_venv_only_server_starts_from_the_config_without_an_active_venv(
    system_path: None, tmp_path: Path
) -> None:
    path = tmp_path / "mcpstation.toml"
    path.write_text('[servers.time]\ncommand = "mcp-server-time"\nargs = ["--local-timezone", "UTC"]\n')
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(load_config(path)) as station:
            result = await station.call_tool("mcp_time_get_current_time", {"timezone": "UTC"})
    assert result.ok, result.error
    assert '"timezone": "UTC"' in result.text


@pytest.mark.anyio
async def test_a_missing_command_fails_its_server_with_where_it_looked(system_path: None) -> None:
    config = parse_config('[servers.time]\ncommand = "mcp-server-tme"\n', fmt="toml", environ={})
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(config) as station:
            (status,) = [s for s in station.status().servers if s.name == "time"]
    assert status.state == "FAILED"
    assert status.error is not None and "command not found: mcp-server-tme (looked on PATH" in status.error
    assert "nearest: " in status.error and status.error.endswith("mcp-server-time)")


def write_launcher(folder: Path) -> Path:
    """`bin/server`: a script starting the stdlib tiny server with this interpreter."""
    script = folder / "bin" / "server"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TINY_SERVER}" "$@"\n')
    script.chmod(0o755)
    return script


def test_relative_commands_and_folders_are_taken_from_the_config_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "mcpstation.toml"
    path.write_text(
        '[servers.a]\ncommand = "./bin/server"\n\n'
        '[servers.b]\ncommand = "./run"\ncwd = "work"\n\n'
        '[servers.c]\ncommand = "python3"\ncwd = "/srv"\n\n'
        '[servers.d]\ncommand = "~/bin/server"\n'
    )
    config = load_config(path)
    assert config.server("a").command == str(project / "bin" / "server")  # type: ignore[union-attr]
    b = config.server("b")
    assert (b.command, b.cwd) == (str(project / "work" / "run"), str(project / "work"))  # type: ignore[union-attr]
    c = config.server("c")
    assert (c.command, c.cwd) == ("python3", "/srv")  # type: ignore[union-attr]
    assert config.server("d").command == str(Path.home() / "bin" / "server")  # type: ignore[union-attr]


def test_a_relative_command_in_a_clients_project_file_is_taken_from_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "project" / ".vscode"
    folder.mkdir(parents=True)
    (folder / "mcp.json").write_text('{"servers": {"local": {"type": "stdio", "command": "./bin/server"}}}')
    config = load_config(folder / "mcp.json", ask=None)
    assert config.server("local").command == str(tmp_path / "project" / "bin" / "server")  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_relative_command_runs_when_the_station_starts_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write_launcher(project)
    path = project / "mcpstation.toml"
    path.write_text('[servers.tiny]\ncommand = "./bin/server"\n')
    monkeypatch.chdir("/")  # where an editor starts the gateway
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(load_config(path)) as station:
            result = await station.call_tool("mcp_tiny_add", {"a": 2, "b": 3})
    assert result.ok, result.error
    assert result.text == "5"


def test_a_path_command_resolves_to_an_absolute_path_from_its_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_launcher(tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    spec = StdioServerSpec(name="tiny", command="./bin/server", cwd="project")  # as a run-time add could say
    assert resolve_command(spec) == str(script)
    assert resolve_command(spec.model_copy(update={"cwd": None})) is None
