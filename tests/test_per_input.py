"""The key of a command's input (`per_input`): every input that can change what it sees changes it."""

from __future__ import annotations

from pathlib import Path

from mcpstation.per_input import input_key

OPTIONS: dict[str, str | None] = {"data_dir": None, "db_url": None}


def key(config: Path | None, environ: dict[str, str], **options: str | None) -> str | None:
    return input_key(config, options=OPTIONS | options, environ=environ)


def test_the_key_follows_the_config_its_variables_and_the_station_settings(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text('[servers.a]\ncommand = "${TOOL_BIN}/server"\nenv = { TOKEN = "${env:TOKEN}" }\n')
    environ = {"TOOL_BIN": "/opt/a", "TOKEN": "t1", "HOME": "/root", "MCPSTATION_DATA_DIR": "/data"}
    base = key(config, environ)
    assert base is not None and base == key(config, environ)

    assert key(config, environ | {"HOME": "/elsewhere", "TERM": "dumb"}) == base  # not named
    assert key(config, environ | {"TOOL_BIN": "/opt/b"}) != base
    assert key(config, environ | {"TOKEN": "t2"}) != base
    assert key(config, {k: v for k, v in environ.items() if k != "TOKEN"}) != base
    assert key(config, environ | {"MCPSTATION_REPLICA_ID": "r2"}) != base
    assert key(config, environ, db_url="postgresql://db/x") != base

    copy = tmp_path / "copy.toml"  # the same bytes elsewhere: relative paths in it mean other files
    copy.write_bytes(config.read_bytes())
    assert key(copy, environ) != base
    config.write_text(config.read_text() + "\n[servers.b]\ncommand = 'b'\n")
    assert key(config, environ) != base


def test_no_config_file_has_a_key_and_an_unreadable_one_has_none(tmp_path: Path):
    assert key(None, {}) is not None
    assert key(None, {}) != key(None, {"MCPSTATION_DATA_DIR": "/elsewhere"})
    assert key(tmp_path / "missing.toml", {}) is None
