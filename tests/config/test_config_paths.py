"""Which file is loaded, and the built-in default."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcpstation.config import StdioServerSpec, default_config, load_config, resolve_config_path
from mcpstation.errors import ConfigError


def test_explicit_beats_environment_beats_local_file(tmp_path: Path) -> None:
    (tmp_path / "mcpstation.toml").write_text("")
    env = {"MCPSTATION_CONFIG": "from-env.json"}
    assert resolve_config_path("given.yaml", environ=env, cwd=tmp_path) == tmp_path / "given.yaml"
    assert resolve_config_path(None, environ=env, cwd=tmp_path) == tmp_path / "from-env.json"
    assert resolve_config_path(None, environ={}, cwd=tmp_path) == tmp_path / "mcpstation.toml"


def test_no_file_anywhere_means_the_default(tmp_path: Path) -> None:
    assert resolve_config_path(None, environ={}, cwd=tmp_path) is None
    assert resolve_config_path(None, environ={"MCPSTATION_CONFIG": ""}, cwd=tmp_path) is None


def test_default_config_runs_the_demo_server() -> None:
    config = default_config()
    (demo,) = config.servers
    assert isinstance(demo, StdioServerSpec)
    assert demo.name == "demo"
    assert (demo.command, demo.args) == (sys.executable, ("-m", "mcpstation.testing.demo_server"))


def test_missing_file_and_unknown_extension_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "absent.toml")
    (tmp_path / "c.ini").write_text("")
    with pytest.raises(ConfigError, match="unknown config format"):
        load_config(tmp_path / "c.ini")
