"""A sentinel secret planted in every secret-bearing field never shows in any output."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import anyio
import pytest
from fork_server import interpreter

from mcpstation import Station, load_config
from mcpstation.testing import serve_demo

SENTINEL = "sentinel-7f3a9c2e-do-not-print"
PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)

CONFIG = """
[servers.local]
command = "{python}"
args = ["-m", "mcpstation.testing.demo_server"]
env = {{ API_KEY = "${{SECRET}}" }}

[servers.remote]
transport = "http"
url = "{url}"
bearer_token = "${{SECRET}}"
headers = {{ X-Api-Key = "${{SECRET}}" }}

[servers.broken]
command = "{python}"
args = ["-c", "import sys; sys.exit(3)"]
env = {{ TOKEN = "${{SECRET}}" }}
"""


@pytest.mark.anyio
async def test_sentinel_never_reaches_status_logs_errors_or_cli_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    async with serve_demo("http") as remote:
        config_path = tmp_path / "mcpstation.toml"
        config_path.write_text(CONFIG.format(python=PY, url=remote.url))
        # Its own data directory: the user's default one may hold another checkout's newer schema.
        env = {**os.environ, "SECRET": SENTINEL, "MCPSTATION_DATA_DIR": str(tmp_path / "data")}
        env.pop("MCPSTATION_CONFIG", None)
        outputs: list[str] = []
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SECRET", SENTINEL)
            config = load_config(config_path)
            outputs.append(repr(config))
            outputs.append(str(config.model_dump()))
            outputs.append(config.model_dump_json())
            with anyio.fail_after(60):
                async with Station(config) as station:
                    status = station.status()
                    assert {s.name: s.state for s in status.servers}["remote"] == "READY"
                    outputs.append(json.dumps(status.to_dict()))
                    outputs.append(repr(status))
                    outputs.append(repr(station.connection("local")))
                    result = await station.call_tool("mcp_remote_echo", {"message": "hello"})
                    outputs.append(json.dumps(result.to_dict()))
                    failed = await station.call_tool("mcp_broken_x", {})
                    outputs.append(failed.text)
        for args in (["status", "--json"], ["tools", "list", "--json"], ["-vv", "status"]):
            command = [PY, "-m", "mcpstation", "--config", str(config_path), *args]
            with anyio.fail_after(120):
                done = await anyio.run_process(command, env=env, check=False)
            assert done.returncode == 0, done.stderr.decode()
            outputs.extend([done.stdout.decode(), done.stderr.decode()])
        outputs.append(caplog.text)
    leaks = [i for i, text in enumerate(outputs) if SENTINEL in text]
    assert leaks == [], f"sentinel found in outputs {leaks}"
