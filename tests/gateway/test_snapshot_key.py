"""The key of a stdio gateway's list snapshot: every input that can change the lists changes it."""

from __future__ import annotations

from pathlib import Path

from mcpstation.gateway._snapshot import snapshot_key

OPTIONS: dict[str, str | None] = {"data_dir": None, "db_url": None}


def key(config: Path | None, cwd: Path, environ: dict[str, str], **options: str | None) -> str | None:
    return snapshot_key(config, options=OPTIONS | options, environ=environ, cwd=cwd)


def test_the_key_follows_the_config_its_variables_and_the_station_settings(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text('[servers.a]\ncommand = "${TOOL_BIN}/server"\nenv = { TOKEN = "${env:TOKEN}" }\n')
    environ = {"TOOL_BIN": "/opt/a", "TOKEN": "t1", "HOME": "/root", "MCPSTATION_DATA_DIR": "/data"}
    base = key(config, tmp_path, environ)
    assert base is not None and base == key(config, tmp_path, environ)

    assert key(config, tmp_path, environ | {"HOME": "/elsewhere", "TERM": "dumb"}) == base  # not named
    assert key(config, tmp_path, environ | {"TOOL_BIN": "/opt/b"}) != base
    assert key(config, tmp_path, environ | {"TOKEN": "t2"}) != base
    assert key(config, tmp_path, {k: v for k, v in environ.items() if k != "TOKEN"}) != base
    assert key(config, tmp_path, environ | {"MCPSTATION_REPLICA_ID": "r2"}) != base
    assert key(config, tmp_path / "sub", environ) != base  # relative paths resolve elsewhere
    assert key(config, tmp_path, environ, db_url="postgresql://db/x") != base

    config.write_text(config.read_text() + "\n[servers.b]\ncommand = 'b'\n")
    assert key(config, tmp_path, environ) != base


def test_no_config_file_has_a_key_and_an_unreadable_one_has_none(tmp_path: Path):
    assert key(None, tmp_path, {}) is not None
    assert key(None, tmp_path, {}) != key(None, tmp_path / "other", {})
    assert key(tmp_path / "missing.toml", tmp_path, {}) is None
