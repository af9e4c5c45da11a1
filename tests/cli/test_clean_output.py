"""Every CLI command against a modern and a legacy server: stderr holds only our own lines.

Library warnings (the SDK's deprecations for the era a server speaks, asyncio's, anyone's) never
reach a person's terminal or a `--json` stream; warnings raised by our own code are errors here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from fork_server import interpreter

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
TIMEOUT_S = 120
OUR_LINE = re.compile(r"^\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) +mcpstation[.\w]*: ")

CONFIG = f"""
[station]
server_startup_timeout_s = 60

[servers.modern]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]
log_level = "info"

[servers.legacy]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]
protocol = "legacy"
log_level = "info"
"""

# One command per distinct path through the SDK, per era: connect and list (status), a call, a call
# with progress, a prompt, a resource, a reconnect. The listing verbs share status's path.
COMMANDS: list[tuple[str, ...]] = [
    ("status",),
    ("call", "mcp_modern_add", "--args", '{"a": 1, "b": 2}'),
    ("call", "mcp_legacy_slow", "--args", '{"seconds": 0.2}'),
    ("prompt", "get", "mcp_legacy_greet", "--args", '{"name": "Ada"}'),
    ("resource", "read", "demo://readme"),
    ("reconnect", "legacy"),
]


CASES = [(command, False) for command in COMMANDS] + [(command, True) for command in COMMANDS[:2]]


@pytest.mark.parametrize(
    "command, as_json", CASES, ids=lambda v: " ".join(v[:2]) if isinstance(v, tuple) else ("json" if v else "text")
)
def test_stderr_holds_only_our_own_lines(command: tuple[str, ...], as_json: bool, tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
        "MCPSTATION_DATA_DIR": str(tmp_path / "data"),
        "PYTHONWARNINGS": "error:::mcpstation",  # a warning our own code raises fails the command
    }
    args = [PY, "-m", "mcpstation", "--config", str(config), *(["--json"] if as_json else []), *command]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    foreign = [line for line in done.stderr.splitlines() if line.strip() and not OUR_LINE.match(line)]
    assert foreign == [], "\n".join(foreign)
    if as_json:
        json.loads(done.stdout)  # nothing but JSON on stdout
