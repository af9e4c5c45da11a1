"""`mcpstation tools export` and `tools check`, as a user (or CI) runs them: subprocesses, real servers."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from fork_server import interpreter

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 90
SCHEMA_SERVER = Path(__file__).with_name("schema_server.py")

GOOD = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 10}}, "required": ["q"]}
# Each definition refers to the next twice: small as sent, over a million nodes once inlined. (The
# connection already drops circular and remote $refs; this one passes it and is refused here.)
BOMB = {
    "type": "object",
    "properties": {"x": {"$ref": "#/$defs/d0"}},
    "$defs": {
        **{
            f"d{i}": {"type": "array", "items": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
            for i in range(20)
        },
        "d20": {"type": "string"},
    },
}


def run(tmp_path: Path, *args: str, bomb: bool = False) -> subprocess.CompletedProcess[str]:
    tools = [{"name": "find", "inputSchema": GOOD}]
    if bomb:
        tools.append({"name": "bomb", "inputSchema": BOMB})
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    config = tmp_path / "mcpstation.toml"
    config.write_text(
        f'[station]\nnaming = "prefix"\n\n'
        f'[servers.demo]\ncommand = "{PY}"\nargs = ["-m", "mcpstation.testing.demo_server"]\n\n'
        f'[servers.odd]\ncommand = "{PY}"\nargs = ["{SCHEMA_SERVER}", "{tmp_path / "tools.json"}"]\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [PY, "-m", "mcpstation", "--config", str(config), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_export_openai_strict_compiles_each_tool_for_structured_outputs(tmp_path: Path):
    done = run(tmp_path, "tools", "export", "--format", "openai", "--strict")
    assert done.returncode == 0, done.stderr
    tools = {tool["function"]["name"]: tool["function"] for tool in json.loads(done.stdout)}
    add = tools["mcp_demo_add"]
    assert add["strict"] is True and add["parameters"]["additionalProperties"] is False
    find = tools["mcp_odd_find"]
    assert "maxLength" not in find["parameters"]["properties"]["q"]  # strict mode has none: kept as a hint
    assert "maxLength: 10" in find["parameters"]["properties"]["q"]["description"]


def test_export_gemini_gives_function_declarations_and_leaves_out_a_refused_tool(tmp_path: Path):
    done = run(tmp_path, "tools", "export", "--format", "gemini", bomb=True)
    assert done.returncode == 0, done.stderr
    [tool] = json.loads(done.stdout)
    names = [declaration["name"] for declaration in tool["functionDeclarations"]]
    assert "mcp_odd_find" in names and "mcp_odd_bomb" not in names
    assert "left out mcp_odd_bomb: fatal too-large" in done.stderr


def test_check_reports_each_tool_and_passes_when_none_is_refused(tmp_path: Path):
    done = run(tmp_path, "tools", "check", "--target", "openai-strict", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["target"] == "openai-strict"
    find = next(tool for tool in report["tools"] if tool["name"] == "mcp_odd_find")
    assert find["strict"] is True
    assert any(
        d["code"] == "constraint-dropped" and d["pointer"] == "/properties/q/maxLength" for d in find["diagnostics"]
    )
    assert report["summary"]["lossy"] == {"constraint-dropped": 1}


def test_check_exits_1_on_a_fatal_diagnostic_and_names_the_tool(tmp_path: Path):
    as_json = run(tmp_path, "tools", "check", "--target", "anthropic", "--json", bomb=True)
    assert as_json.returncode == 1, as_json.stderr
    bomb = next(tool for tool in json.loads(as_json.stdout)["tools"] if tool["name"] == "mcp_odd_bomb")
    assert bomb["refused"] is True and bomb["diagnostics"][-1]["code"] == "too-large"
    table = run(tmp_path, "tools", "check", "--target", "anthropic", bomb=True)
    assert table.returncode == 1
    assert "mcp_odd_bomb" in table.stdout and "refused" in table.stdout


def test_an_unknown_format_or_target_is_a_usage_error(tmp_path: Path):
    assert run(tmp_path, "tools", "export", "--format", "mistral").returncode == 2
    assert run(tmp_path, "tools", "check", "--target", "gemini-strict").returncode == 2
