"""A one-shot command starts only what it needs: lists answer from the catalog cache and say how old
it is, a call starts the one server that owns its tool, a name the cache lacks starts servers to
look for it (and says so), and `--refresh` starts them and updates the cache. Real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_probe import run_loading, under
from fork_server import interpreter

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 180  # one command on a loaded 2-core machine
COUNTED = Path(__file__).with_name("counted_server.py")


class Project:
    """A config of two counted servers, `a` and `b`, in `root`, with its own data directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "mcpstation.toml"
        servers = ""
        for name, tools in (("a", "add sub"), ("b", "mul")):
            (root / f"{name}.tools").write_text(tools)
            args = [str(COUNTED), str(root / f"{name}.starts"), str(root / f"{name}.tools")]
            servers += f'\n[servers.{name}]\ncommand = "{PY}"\nargs = {json.dumps(args)}\n'
        self.config.write_text(f'[station]\nnaming = "prefix"\n{servers}')

    def starts(self, name: str) -> int:
        path = self.root / f"{name}.starts"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"}
        env["MCPSTATION_DATA_DIR"] = str(self.root / "data")
        argv = [PY, "-m", "mcpstation", "--config", str(self.config), *args]
        return subprocess.run(argv, cwd=self.root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)

    def tool_names(self, *args: str) -> tuple[set[str], str]:
        done = self.run("tools", "list", "--json", *args)
        assert done.returncode == 0, done.stderr
        return {tool["name"] for tool in json.loads(done.stdout)}, done.stderr


def test_lists_answer_from_the_cache_and_a_call_starts_only_its_server(tmp_path: Path):
    project = Project(tmp_path)
    names, said = project.tool_names()  # never listed: both start, and their listings are cached
    assert names == {"mcp_a_add", "mcp_a_sub", "mcp_b_mul"} and "catalog cache" not in said
    assert (project.starts("a"), project.starts("b")) == (1, 1)

    names, said = project.tool_names()
    assert names == {"mcp_a_add", "mcp_a_sub", "mcp_b_mul"}
    assert (project.starts("a"), project.starts("b")) == (1, 1)  # nothing started
    assert "from the catalog cache for a, b (listed " in said and " ago; --refresh starts them)" in said

    done = project.run("call", "mcp_a_add")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran add"
    assert (project.starts("a"), project.starts("b")) == (2, 1)  # only the owner of the tool


def test_a_name_the_cache_lacks_starts_servers_to_look_for_it_and_refresh_updates_the_cache(tmp_path: Path):
    project = Project(tmp_path)
    project.tool_names()  # fills the cache
    (tmp_path / "a.tools").write_text("add sub div")  # `a` changed since it was listed

    done = project.run("call", "mcp_a_div")  # not in the cache: its server (by the name's prefix) starts
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran div"
    assert "tool 'mcp_a_div' is not in the catalog cache; starting 'a' to look for it" in done.stderr
    assert (project.starts("a"), project.starts("b")) == (2, 1)

    (tmp_path / "b.tools").write_text("mul pow")
    names, said = project.tool_names()
    assert "mcp_b_pow" not in names  # `b` did not run: its cached listing answered

    names, said = project.tool_names("--refresh")
    assert {"mcp_a_div", "mcp_b_pow"} <= names and "catalog cache" not in said
    assert (project.starts("a"), project.starts("b")) == (3, 2)
    names, said = project.tool_names()  # the refreshed listings are the cache now
    assert {"mcp_a_div", "mcp_b_pow"} <= names and "from the catalog cache for a, b" in said
    assert (project.starts("a"), project.starts("b")) == (3, 2)


def test_a_name_nobody_has_is_not_found_after_looking(tmp_path: Path):
    project = Project(tmp_path)
    project.tool_names()
    done = project.run("call", "mcp_nothing_here")  # no server's prefix: every stopped server is asked
    assert done.returncode == 4
    assert "is not in the catalog cache; starting 'a', 'b' to look for it" in done.stderr
    assert "no tool 'mcp_nothing_here'" in done.stderr + done.stdout
    assert (project.starts("a"), project.starts("b")) == (2, 2)


def test_a_command_that_needs_only_the_store_loads_neither_the_sdk_nor_a_server(tmp_path: Path):
    project = Project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
        "MCPSTATION_DATA_DIR": str(tmp_path / "data")
    }
    done, loaded = run_loading(
        ["--config", str(project.config), "audit", "--json"], cwd=tmp_path, env=env, timeout_s=TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"calls": [], "actions": []}
    assert "mcpstation.store" in loaded  # it did read the store
    # The config's protocol versions come from mcp_types; the SDK's sessions and the station do not load.
    assert not under(loaded, ("mcp", "mcpstation.station", "mcpstation.pipeline", "mcpstation.pool"))
    assert (project.starts("a"), project.starts("b")) == (0, 0)


def owners_file(project: Project) -> Path:
    (path,) = (project.root / "data" / "call-owners").glob("*.json")
    return path


def running_for(marker: Path) -> list[int]:
    """The pids of processes whose command line names `marker` (a counted server's starts file)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(marker).encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue  # it ended meanwhile
    return pids


def test_a_call_starts_its_server_before_the_station_when_the_last_one_shot_saw_which(tmp_path: Path):
    project = Project(tmp_path)
    project.tool_names()  # fills the catalog cache, and the owners of its tools
    kept = owners_file(project)
    assert kept.stat().st_mode & 0o777 == 0o600
    assert json.loads(kept.read_text())["body"] == {"mcp_a_add": "a", "mcp_a_sub": "a", "mcp_b_mul": "b"}

    done = project.run("-v", "call", "mcp_a_add")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran add"
    assert "server 'a' started before the station" in done.stderr
    assert (project.starts("a"), project.starts("b")) == (2, 1)  # adopted: one start, not two

    envelope = json.loads(kept.read_text())
    envelope["body"]["mcp_a_add"] = "b"  # says another server owns it: that one starts, for nothing
    kept.write_text(json.dumps(envelope))
    done = project.run("-v", "call", "mcp_a_add")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran add"
    assert "server 'b' started before the station" in done.stderr
    assert "server 'b' was started early but not used; stopping it" in done.stderr
    assert (project.starts("a"), project.starts("b")) == (3, 2)
    assert running_for(tmp_path / "b.starts") == []  # stopped before the command ended
    assert json.loads(kept.read_text())["body"]["mcp_a_add"] == "a"  # the catalog set it right
