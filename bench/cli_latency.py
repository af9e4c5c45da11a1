"""How long one `mcpstation` command takes, as a whole process, with `up` running six servers.

    .venv/bin/python bench/cli_latency.py --npm-prefix DIR [--runs 20] [--json out.json]

The six servers are the ones a new user starts with: filesystem, memory and sequential-thinking
(npm), git, fetch and time (PyPI). They are not test dependencies; install them once:

    npm install --prefix DIR @modelcontextprotocol/server-filesystem@2026.8.31 \\
        @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-sequential-thinking@2026.8.31
    .venv/bin/pip install mcp-server-git==2026.10.19     # fetch and time come with .[test]

Rows, each a fresh process timed from outside (monotonic wall clock around spawn and reap; CPU
from the kernel's accounting of the reaped child, user + system):

- `--help`
- `call <time tool> --args ...` answered by the running station over its control socket, plain
  and `--json`
- the same call with a malformed `--args` (refused before any station is asked or started)
- yardsticks, interleaved with the call (A B A B ...): `python -c pass` (the interpreter's floor),
  and the raw SDK (`mcp.client.Client`) starting mcp-server-time over stdio for one call, which
  is what a script pays without a running station
- `--one-shot call`: a station of its own with all six servers, as every command did before

The machine's load average is printed before and after: on a shared machine the wall times move
with it, the CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

PY = sys.executable
UP_START_TIMEOUT_S = 240.0  # six servers, two of them npm packages, on a loaded 2-core machine
COMMAND_TIMEOUT_S = 120.0  # one timed command
UP_STOP_TIMEOUT_S = 60.0
POLL_S = 0.1
RAW_SDK_CALL = """
import anyio, sys
from mcp import StdioServerParameters
from mcp.client import Client

async def main():
    async with Client(StdioServerParameters(command=sys.executable, args=["-m", "mcp_server_time"])) as client:
        result = await client.call_tool("get_current_time", {"timezone": "UTC"})
        print(result.content[0].text)

anyio.run(main)
"""


@dataclass
class Row:
    label: str
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    exit_codes: set[int] = field(default_factory=set)

    def line(self) -> str:
        def triple(values: list[float]) -> str:
            ms = [v * 1e3 for v in values]
            return f"{min(ms):7.0f} {statistics.median(ms):7.0f} {max(ms):7.0f}"

        codes = ",".join(str(c) for c in sorted(self.exit_codes))
        return f"{self.label:44s} {len(self.wall_s):3d}  {triple(self.wall_s)}   {triple(self.cpu_s)}   exit {codes}"


def timed(row: Row, argv: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, timeout=COMMAND_TIMEOUT_S)
    row.wall_s.append(time.monotonic() - started)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row.cpu_s.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    row.exit_codes.add(done.returncode)
    return done


def six_servers(npm_prefix: Path, workdir: Path) -> str:
    bin_dir = npm_prefix / "node_modules" / ".bin"
    for name in ("mcp-server-filesystem", "mcp-server-memory", "mcp-server-sequential-thinking"):
        if not (bin_dir / name).exists():
            sys.exit(f"{bin_dir / name} is missing: install the npm servers first (see this file's docstring)")
    repo = workdir / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    files = workdir / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n")
    return f"""
[servers.filesystem]
command = "{bin_dir / "mcp-server-filesystem"}"
args = ["{files}"]

[servers.memory]
command = "{bin_dir / "mcp-server-memory"}"
env = {{ MEMORY_FILE_PATH = "{workdir / "memory.json"}" }}

[servers.sequential-thinking]
command = "{bin_dir / "mcp-server-sequential-thinking"}"

[servers.git]
command = "{PY}"
args = ["-m", "mcp_server_git", "--repository", "{repo}"]

[servers.fetch]
command = "{PY}"
args = ["-m", "mcp_server_fetch"]

[servers.time]
command = "{PY}"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
"""


def start_up(config: Path, env: dict[str, str], workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = workdir / "up.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [PY, "-m", "mcpstation", "--config", str(config), "up", "--port", "0"],
            env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    deadline = time.monotonic() + UP_START_TIMEOUT_S
    while b"serving this user's CLI on" not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            sys.exit(f"up did not start:\n{log.read_text()}")
        time.sleep(POLL_S)
    return process, log


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=UP_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npm-prefix", type=Path, required=True, help="where the three npm servers are installed")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per row (one-shot: a quarter)")
    parser.add_argument("--json", type=Path, help="write every number here")
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="mcps-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {
        "MCPSTATION_DATA_DIR": str(workdir / "data"),
        "COLUMNS": "100",
    }
    config = workdir / "mcpstation.toml"
    config.write_text(six_servers(options.npm_prefix.resolve(), workdir))
    cli = [PY, "-m", "mcpstation", "--config", str(config)]
    load_before = os.getloadavg()
    process, log = start_up(config, env, workdir)
    rows: dict[str, Row] = {}
    try:
        tools = json.loads(subprocess.run([*cli, "tools", "list", "--json"], env=env, capture_output=True).stdout)
        ready = subprocess.run([*cli, "status", "--json"], env=env, capture_output=True).stdout
        states = {s["name"]: s["state"] for s in json.loads(ready)["servers"]}
        print(f"up: {len(tools)} tools; {states}")
        time_tool = next(t["name"] for t in tools if t["server"] == "time" and t["tool"] == "get_current_time")
        call = [*cli, "call", time_tool, "--args", '{"timezone": "UTC"}']

        def row(label: str) -> Row:
            return rows.setdefault(label, Row(label))

        for _ in range(2):  # warm-up: the page cache, the station's first call
            timed(Row("warm-up"), call, env, workdir)
        for i in range(options.runs):
            plan = [
                ("mcpstation --help", [*cli, "--help"]),
                ("mcpstation call (running station)", call),
                ("mcpstation call --json (running station)", [*call, "--json"]),
                ("mcpstation call --args '{bad' (exit 2)", [*cli, "call", time_tool, "--args", "{bad"]),
                ("python -c pass (yardstick)", [PY, "-c", "pass"]),
                ("raw SDK: start mcp-server-time, 1 call", [PY, "-c", RAW_SDK_CALL]),
            ]
            for label, argv in plan[i % len(plan) :] + plan[: i % len(plan)]:  # the order rotates each round
                timed(row(label), argv, env, workdir)
        for _ in range(max(2, options.runs // 4)):
            timed(row("mcpstation --one-shot call (6 servers)"), [*cli, "--one-shot", *call[len(cli) :]], env, workdir)
    finally:
        stop(process)
    load_after = os.getloadavg()

    print(f"\nload average before {load_before[0]:.1f} / after {load_after[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':44s} {'n':>3s}  {'wall ms: min  median     max':>24s}   {'cpu ms: min  median     max':>24s}")
    for r in rows.values():
        print(r.line())
    if options.json is not None:
        data = {
            "load_before": load_before,
            "load_after": load_after,
            "cores": os.cpu_count(),
            "rows": {
                r.label: {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "exit": sorted(r.exit_codes)} for r in rows.values()
            },
        }
        options.json.write_text(json.dumps(data, indent=2))
    if b"Traceback" in log.read_bytes():
        print(f"note: up logged a traceback; see {log}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
