"""docs/integrations.md: every example compiles and imports what mcpstation has; the pydantic-ai one runs
offline exactly as the page says (its model swapped for "test") against the demo server the page configures."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest
import tomlkit

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
START_TIMEOUT_S = 60  # a stdio server's start on a loaded 2-core machine (the default 10 s is for people)
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == language]


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_every_example_compiles_and_its_mcpstation_imports_exist(index: int):
    source = _blocks("python")[index]
    tree = ast.parse(source)
    ours = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.module.startswith("mcpstation")
    ]
    compile(tree, f"{DOC.name} example {index}", "exec")
    exec(compile(ast.Module(body=ours, type_ignores=[]), DOC.name, "exec"), {})


def test_the_pydantic_ai_example_runs_offline_against_the_documented_config(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pydantic_ai")
    [toml] = _blocks("toml")
    config = tomlkit.parse(toml)
    assert tomllib.loads(toml)["servers"]["demo"]["command"] == "python"
    config["servers"]["demo"]["command"] = sys.executable  # what `python` is in the reader's environment
    config["station"] = {"startup_timeout_s": START_TIMEOUT_S, "server_startup_timeout_s": START_TIMEOUT_S}
    (tmp_path / "mcpstation.toml").write_text(tomlkit.dumps(config))
    [example] = [block for block in _blocks("python") if "station_toolset(station)" in block]
    assert '"openai:gpt-4.1"' in example and 'Agent("test", ...)' in example  # the swap the page tells of
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCPSTATION_CONFIG", raising=False)

    exec(compile(example.replace('"openai:gpt-4.1"', '"test"'), DOC.name, "exec"), {"__name__": "__main__"})

    printed = capsys.readouterr().out
    assert '"mcp_demo_add":{"result":0}' in printed  # TestModel called the tool in the real server
    assert "Error executing tool fail" in printed
