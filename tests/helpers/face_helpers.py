"""Helpers for the face tests on both databases: server entries, the CLI and `mcpstation up` as real
subprocesses pointed at one database with `--db-url`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from fork_server import interpreter

from mcpstation import StationConfig

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TINY_SERVER = Path(__file__).resolve().parents[2] / "bench" / "servers" / "tiny_server.py"
START_TIMEOUT_S = 120.0  # a station, its servers and the HTTP server starting on a loaded 2-core machine
CLI_TIMEOUT_S = 120.0  # one CLI verb: its own interpreter, store and station start and stop
STOP_TIMEOUT_S = 60.0  # `up` stopping after SIGTERM, servers and store included
POLICY = {"allowed_dynamic_stdio_commands": [PY], "allowed_dynamic_url_prefixes": ["http://127.0.0.1:"]}
# A server's start-up on this machine under other engineers' load has taken over 10 s (the default).
STATION = {"server_startup_timeout_s": 90.0, "startup_timeout_s": 100.0}
# The line `up` logs once the HTTP API, console and gateway are served.
SERVING = re.compile(r"serving the console at (http://127\.0\.0\.1:\d+)/ ")
_OUR_ENV = ("MCPSTATION_CONFIG", "MCPSTATION_DB_URL", "MCPSTATION_DATA_DIR")


def demo(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio entry running our demo server (12 tools)."""
    return {"name": name, "command": PY, "args": ["-m", "mcpstation.testing.demo_server", *args], **fields}


def time_server(name: str) -> dict[str, Any]:
    """A stdio entry running `mcp-server-time` from PyPI: a module off the allowlist, so added as pending."""
    return {"name": name, "command": PY, "args": ["-m", "mcp_server_time"]}


def tiny(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio entry running the stdlib-only tiny server (`echo`, `add`; starts in milliseconds)."""
    return {"name": name, "command": PY, "args": [str(TINY_SERVER), *args], **fields}


def station_config(servers: list[dict[str, Any]], policy: dict[str, Any] | None = None) -> StationConfig:
    return StationConfig(servers=servers, policy={**POLICY, **(policy or {})}, station=STATION)


def toml_config(path: Path, servers: list[dict[str, Any]], policy: dict[str, Any] | None = None) -> Path:
    """A config file with `servers` and `policy` (every value JSON-compatible TOML)."""
    lines = ["[station]"] + [f"{key} = {json.dumps(value)}" for key, value in STATION.items()]
    lines += ["[policy]"] + [f"{key} = {json.dumps(value)}" for key, value in {**POLICY, **(policy or {})}.items()]
    for server in servers:
        lines.append(f"\n[servers.{server['name']}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in server.items() if key != "name"]
    path.write_text("\n".join(lines) + "\n")
    return path


def environment(tmp_path: Path) -> dict[str, str]:
    """The test's environment without our own settings, and a data directory of its own."""
    env = {key: value for key, value in os.environ.items() if key not in _OUR_ENV}
    return env | {"MCPSTATION_DATA_DIR": str(tmp_path / "data")}


async def cli(tmp_path: Path, db_url: str, *args: str, config: Path | None = None) -> Any:
    """Run `mcpstation --db-url DB_URL [--config CONFIG] ARGS... --json`; its JSON output.

    Fails the test with the command's stderr if it exits non-zero.
    """
    command = [PY, "-m", "mcpstation", "--db-url", db_url]
    if config is not None:
        command += ["--config", str(config)]
    command += list(args)
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await anyio.run_process(command, env=environment(tmp_path), cwd=tmp_path, check=False)
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{stderr}"
    assert "StoreError" not in stderr and "Traceback" not in stderr, stderr
    return json.loads(done.stdout)


@dataclass
class RunningUp:
    """`mcpstation up` serving on `url`; `log` is everything it wrote to stderr so far."""

    url: str
    process: Process
    log: list[str] = field(default_factory=list)
    killed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.log)

    async def kill(self) -> None:
        """SIGKILL it, as when its machine dies, and wait until it is gone; `running_up` then
        checks no exit code."""
        self.killed = True
        self.process.kill()
        with anyio.fail_after(STOP_TIMEOUT_S):
            await self.process.wait()


@asynccontextmanager
async def running_up(
    tmp_path: Path,
    db_url: str,
    config: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    *,
    fresh: bool = False,
) -> AsyncIterator[RunningUp]:
    """`mcpstation --db-url DB_URL --config CONFIG up --port 0 ARGS...`, until the block ends; then
    SIGTERM, and the exit code must be 0 (unless the test killed it). `env` adds to the environment.

    `fresh` runs it in a fresh interpreter rather than a fork of the tests' fork server: a test that
    kills it needs the station itself to die with the process it holds, not a moment later."""
    command = [
        sys.executable if fresh else PY,
        "-m",
        "mcpstation",
        "--db-url",
        db_url,
        "--config",
        str(config),
        "up",
        "--port",
        "0",
        *args,
    ]
    process = await anyio.open_process(
        command,
        env=environment(tmp_path) | dict(env or {}),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    log: list[str] = []
    serving: list[str] = []
    served = anyio.Event()

    async def read_log() -> None:
        assert process.stderr is not None
        async for chunk in TextReceiveStream(process.stderr, errors="replace"):
            log.append(chunk)
            found = SERVING.search("".join(log))
            if found and not served.is_set():
                serving.append(found.group(1))
                served.set()
        served.set()  # it exited: the check below reports what it said

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_log)
            with anyio.fail_after(START_TIMEOUT_S):
                await served.wait()
            assert serving, f"`up` exited before serving:\n{''.join(log)}"
            up = RunningUp(serving[0], process, log)
            yield up
            if not up.killed:
                process.send_signal(signal.SIGTERM)
                with anyio.fail_after(STOP_TIMEOUT_S):
                    code = await process.wait()
                assert code == 0, f"`up` exited {code}:\n{''.join(log)}"
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
