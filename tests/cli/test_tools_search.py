"""`mcpstation tools search`, and schema tokens in `tools list` and `status`, as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from fork_server import interpreter

from mcpstation.catalog import CatalogTool, estimate_tool_tokens, format_tokens

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 90

CONFIG = f"""
[station]
naming = "prefix"

[servers.demo]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]

[servers.other]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]
always_visible = ["echo"]
"""


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "mcpstation.toml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [PY, "-m", "mcpstation", "--config", str(config), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def as_tool(entry: dict[str, Any]) -> CatalogTool:
    return CatalogTool(
        entry["name"],
        entry["server"],
        entry["tool"],
        entry["description"],
        entry["input_schema"],
        None,  # type: ignore[arg-type]
    )


def test_tools_search_json_is_best_first_within_the_server_and_limit_asked(tmp_path: Path):
    done = run(tmp_path, "tools", "search", "add two integers", "--server", "other", "--limit", "2", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert [set(hit) for hit in hits] == [{"name", "server", "tool", "score", "description"}] * 2
    assert (hits[0]["name"], hits[0]["server"], hits[0]["tool"]) == ("mcp_other_add", "other", "add")
    assert hits[1]["server"] == "other" and hits[0]["score"] > hits[1]["score"]
    too_many = run(tmp_path, "tools", "search", "add", "--limit", "0")
    assert too_many.returncode == 2 and "--limit" in too_many.stderr


def test_tools_list_and_status_count_schema_tokens_and_the_llm_surface(tmp_path: Path):
    listed = run(tmp_path, "tools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)
    assert len(tools) == 24
    for entry in tools:
        assert entry["tokens"] == estimate_tool_tokens(as_tool(entry)) > 0

    status = run(tmp_path, "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    for server in report["servers"]:
        assert server["tokens"] == sum(t["tokens"] for t in tools if t["server"] == server["name"])
    surface = report["surface"]
    total = sum(t["tokens"] for t in tools)
    assert surface["tool_search"] == "auto" and surface["search"] is False  # 24 tools, ~1.2k tokens: under both
    assert surface["without_search"] == {"tools": 24, "tokens": total} and surface["tokens"] == total
    assert surface["with_search"]["tools"] == 3  # mcp_other_echo, pinned, and the two meta-tools

    people = run(tmp_path, "status")
    assert people.returncode == 0, people.stderr
    assert f"catalog: 24 tools (~{format_tokens(total)} tokens); LLM surface: 24 tools" in people.stdout
