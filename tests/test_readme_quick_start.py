"""The README's quick start, as a user pastes it, so the README cannot drift from what works.

Its shell block runs command by command in a fresh folder, with mcpstation's venv first on
`PATH` (an active venv) and a data directory of its own. Its editor snippets are then taken at
their word: the gateway started as they say, from another folder with an editor's small
environment, answers a call through the SDK.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client import Client

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- The block below is run line by line by tests/test_readme_quick_start.py"
VENV_BIN = Path(sys.executable).parent
COMMAND_TIMEOUT_S = 240.0  # one command, npx's first download included, on a loaded 2-core machine
SESSION_TIMEOUT_S = 120.0


def quick_start() -> str:
    """The README's quick-start section: from its heading to the next one."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Quick start")
    return text[start : text.index("\n## ", start + 1)]


def shell_commands(section: str) -> list[str]:
    """The commands of the first `sh` block after the marker, as a terminal takes them: one a line,
    a here-document with its lines; blank lines and comments skipped."""
    block = re.search(r"```sh\n(.*?)```", section.split(MARKER, 1)[1], re.S)
    assert block is not None, "no sh block after the quick-start marker"
    lines = block.group(1).splitlines()
    commands: list[str] = []
    while lines:
        line = lines.pop(0)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)", line)
        if heredoc is not None:
            end = lines.index(heredoc.group(1))
            line = "\n".join([line, *lines[: end + 1]])
            del lines[: end + 1]
        commands.append(line)
    return commands


def json_snippets(section: str) -> list[dict[str, dict[str, dict[str, object]]]]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


def user_env(data: Path) -> dict[str, str]:
    """A terminal with the venv active; no config named, no width set, a data directory of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCPSTATION_CONFIG", "COLUMNS", "VIRTUAL_ENV")}
    return env | {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MCPSTATION_DATA_DIR": str(data),
        # npx takes server-filesystem from npm's cache, where `npm ci` of package.json put it; the
        # station hands npm_config_* to the servers of the user's own config.
        "npm_config_prefer_offline": "true",
    }


def needs_what_the_quick_start_installs() -> None:
    try:
        importlib.metadata.version("mcp-server-time")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("mcp-server-time is not installed (make test installs it); this test installs nothing")
    if shutil.which("npx") is None:
        pytest.skip("npx is not on PATH (Node.js): the quick start's npm server needs it")


def test_the_quick_start_block_splits_into_the_commands_a_user_pastes() -> None:
    commands = shell_commands(quick_start())
    assert commands[0] == "pip install mcp-server-time"
    assert commands[1].startswith("cat > mcpstation.toml <<'EOF'\n") and commands[1].endswith("\nEOF")
    assert [c.split()[:2] for c in commands[2:]] == [["mcpstation", "status"], *[["mcpstation", "call"]] * 2]


@pytest.mark.long
@pytest.mark.timeout(900)
def test_the_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    needs_what_the_quick_start_installs()
    folder = tmp_path / "quickstart"
    folder.mkdir()
    env = user_env(tmp_path / "data")
    said: dict[str, str] = {}
    for command in shell_commands(quick_start()):
        done = subprocess.run(
            ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        said[command.split("\n")[0]] = done.stdout
    status = next(out for command, out in said.items() if command == "mcpstation status")
    rows = {line.split()[1]: line for line in status.splitlines() if line.startswith("│")}
    assert "READY" in rows["time"] and "READY" in rows["files"], status
    time_call, files_call = (out for command, out in said.items() if command.startswith("mcpstation call"))
    assert json.loads(time_call)["timezone"] == "Europe/Paris"
    assert "[FILE] mcpstation.toml" in files_call  # the config's folder, as `cwd = "."` says


@pytest.mark.anyio
async def test_the_editor_snippets_start_a_gateway_from_anywhere_with_a_small_environment(tmp_path: Path) -> None:
    needs_what_the_quick_start_installs()
    claude, vscode = json_snippets(quick_start())
    entry = claude["mcpServers"]["mcpstation"]
    assert vscode["servers"]["mcpstation"] == {"type": "stdio", **entry}  # one command for every editor
    config = tmp_path / "quickstart" / "mcpstation.toml"
    config.parent.mkdir()
    config.write_text('[servers.time]\ncommand = "mcp-server-time"\n')  # the quick start's PyPI server
    args = [str(config) if str(arg).endswith("mcpstation.toml") else str(arg) for arg in entry["args"]]  # type: ignore[attr-defined]
    elsewhere = tmp_path / "editor"
    elsewhere.mkdir()
    # An editor's environment: the SDK's short list, a PATH without the venv, a data directory of its own.
    params = StdioServerParameters(
        command=str(VENV_BIN / "mcpstation"),
        args=args,
        cwd=elsewhere,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "MCPSTATION_DATA_DIR": str(tmp_path / "data")},
    )
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(params) as client:
            result = await client.call_tool("mcp_time_get_current_time", {"timezone": "Europe/Paris"})
    assert not result.is_error, result
    assert "Europe/Paris" in result.content[0].text  # type: ignore[union-attr]
