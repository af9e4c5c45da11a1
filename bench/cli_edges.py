"""What a process a user spawns costs before it answers: the one-shot CLI and the stdio gateway,
each beside the raw SDK doing the same work, in one interleaved run (issue 20 §2 and §3).

    .venv/bin/python bench/cli_edges.py [--runs 10] [--json out.json]

Three demo servers (`mcpstation.testing.demo_server`, an SDK `MCPServer` over stdio) are
configured, and the catalog cache is warm (one `tools list --refresh` first). No station runs
for the data directory, so every `mcpstation` command starts a station of its own.

Rows (the order rotates each round, so drift on the machine hits every row alike):

- `mcpstation call mcp_demo_add` (one-shot; only the server that owns the tool starts) against
  a raw SDK script that spawns the one demo server and calls it: target ≤ 1.3×.
- `mcpstation tools list` (three servers, answered from the catalog cache) against a raw SDK
  script that spawns the one demo server and lists its tools: target ≤ 1.0×.
- `mcpstation gateway --stdio` ready: spawned and driven by the SDK's own `Client` from this
  process, until `tools/list` answers; against the same `Client` spawning the demo server
  directly: target ≤ 1.0×.

Each script row is a whole process timed from outside (wall clock around spawn and reap; CPU from
the kernel's accounting of the reaped children, user + system). The gateway rows are timed in
this process from entering `Client` until `list_tools()` returns; leaving it (the shutdown) is
not timed. The load average is printed before and after: on a shared machine wall times move
with it, and CPU times much less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client

PY = sys.executable
COMMAND_TIMEOUT_S = 180.0  # one timed command on a loaded 2-core machine
DEMO = ["-m", "mcpstation.testing.demo_server"]
SERVERS = ("demo", "demo2", "demo3")
RAW_CALL = """
import anyio, sys
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client

async def main():
    demo = StdioServerParameters(command=sys.executable, args=["-m", "mcpstation.testing.demo_server"])
    async with Client(demo) as c:
        result = await c.call_tool("add", {"a": 2, "b": 3})
        print(result.content[0].text)

anyio.run(main)
"""
RAW_LIST = """
import anyio, sys
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client

async def main():
    demo = StdioServerParameters(command=sys.executable, args=["-m", "mcpstation.testing.demo_server"])
    async with Client(demo) as c:
        for tool in (await c.list_tools()).tools:
            print(tool.name)

anyio.run(main)
"""


@dataclass
class Row:
    label: str
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)

    def summary(self) -> str:
        def triple(values: list[float]) -> str:
            ms = [v * 1e3 for v in values]
            return f"{min(ms):6.0f} {statistics.median(ms):6.0f} {max(ms):6.0f}"

        counts = f"{self.label:46s} {len(self.wall_s):3d}"
        return f"{counts}  {triple(self.wall_s)}   {triple(self.cpu_s)}   {self.noise():4.0%}"

    def noise(self) -> float:
        """The interquartile range of the wall times, as a share of their median."""
        q1, _, q3 = statistics.quantiles(self.wall_s, n=4) if len(self.wall_s) > 1 else (0.0, 0.0, 0.0)
        return (q3 - q1) / statistics.median(self.wall_s)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(row: Row, argv: list[str], env: dict[str, str], cwd: Path, expect: str) -> None:
    cpu = children_cpu_s()
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    row.wall_s.append(time.monotonic() - started)
    row.cpu_s.append(children_cpu_s() - cpu)
    if done.returncode != 0 or expect not in done.stdout:
        sys.exit(f"{row.label}: exit {done.returncode}, stdout {done.stdout[-300:]!r}\nstderr {done.stderr[-2000:]}")


def run_ready(row: Row, params: StdioServerParameters, expect: str) -> None:
    """Time one `Client` from entering until `list_tools()` answers; then leave it (untimed)."""
    timing: list[float] = []

    async def main(stderr: TextIO) -> None:
        with anyio.fail_after(COMMAND_TIMEOUT_S):
            started = time.monotonic()
            async with Client(stdio_client(params, errlog=stderr)) as client:
                tools = (await client.list_tools()).tools
                timing.append(time.monotonic() - started)
        if not any(tool.name == expect for tool in tools):
            sys.exit(f"{row.label}: no tool {expect!r} in {[t.name for t in tools]}")

    cpu = children_cpu_s()
    with open(os.devnull, "w") as stderr:  # the server's log lines
        anyio.run(main, stderr)
    row.wall_s.append(timing[0])
    row.cpu_s.append(children_cpu_s() - cpu)


def config_text() -> str:
    servers = "".join(f'\n[servers.{name}]\ncommand = "{PY}"\nargs = {json.dumps(DEMO)}\n' for name in SERVERS)
    return f'[station]\nnaming = "prefix"\n{servers}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per row")
    parser.add_argument("--json", type=Path, help="write every number here")
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="mcps-edges-"))
    config = workdir / "mcpstation.toml"
    config.write_text(config_text())
    env = {k: v for k, v in os.environ.items() if k not in ("MCPSTATION_CONFIG", "COLUMNS")} | {
        "MCPSTATION_DATA_DIR": str(workdir / "data")
    }
    cli = [PY, "-m", "mcpstation", "--config", str(config)]
    warm = subprocess.run([*cli, "tools", "list", "--refresh", "--json"], env=env, cwd=workdir, capture_output=True)
    if warm.returncode != 0:
        sys.exit(f"warming the catalog cache failed:\n{warm.stderr.decode()}")
    gateway = StdioServerParameters(command=PY, args=[*cli[1:], "gateway", "--stdio"], env=env, cwd=str(workdir))
    direct = StdioServerParameters(command=PY, args=DEMO, env=env, cwd=str(workdir))

    rows: dict[str, Row] = {}

    def row(label: str) -> Row:
        return rows.setdefault(label, Row(label))

    plan: list[tuple[str, Callable[[Row], None]]] = [
        ("mcpstation call (3 servers, cache warm)", lambda r: run_process(
            r, [*cli, "call", "mcp_demo_add", "--args", '{"a": 2, "b": 3}'], env, workdir, "5")),
        ("raw SDK: spawn the demo server, 1 call", lambda r: run_process(r, [PY, "-c", RAW_CALL], env, workdir, "5")),
        ("mcpstation tools list (3 servers, cache warm)", lambda r: run_process(
            r, [*cli, "tools", "list", "--json"], env, workdir, "mcp_demo3_add")),
        ("raw SDK: spawn the demo server, list tools", lambda r: run_process(
            r, [PY, "-c", RAW_LIST], env, workdir, "add")),
        ("gateway --stdio ready (3 servers, cache warm)", lambda r: run_ready(r, gateway, "mcp_demo3_add")),
        ("SDK Client: demo server ready (direct)", lambda r: run_ready(r, direct, "add")),
    ]  # fmt: skip
    load_before = os.getloadavg()
    for label, measure in plan:  # one warm-up each: the page cache, Python's bytecode cache
        measure(Row(label))
    for i in range(options.runs):
        for label, measure in plan[i % len(plan) :] + plan[: i % len(plan)]:
            measure(row(label))
    load_after = os.getloadavg()

    print(f"\nload average before {load_before[0]:.1f} / after {load_after[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':46s} {'n':>3s}  {'wall ms: min median  max':>20s}   {'cpu ms: min median  max':>20s}   IQR/med")
    for r in rows.values():
        print(r.summary())
    pairs = [
        ("call, one-shot / raw SDK", "mcpstation call (3 servers, cache warm)",
         "raw SDK: spawn the demo server, 1 call", 1.3),
        ("tools list, 3 cached / raw SDK listing 1", "mcpstation tools list (3 servers, cache warm)",
         "raw SDK: spawn the demo server, list tools", 1.0),
        ("gateway ready / demo server direct", "gateway --stdio ready (3 servers, cache warm)",
         "SDK Client: demo server ready (direct)", 1.0),
    ]  # fmt: skip
    print(f"\n{'ratio of medians (wall; cpu)':46s}  wall    cpu   target")
    ratios = {}
    for name, ours, theirs, target in pairs:
        wall = statistics.median(rows[ours].wall_s) / statistics.median(rows[theirs].wall_s)
        cpu = statistics.median(rows[ours].cpu_s) / statistics.median(rows[theirs].cpu_s)
        ratios[name] = {"wall": wall, "cpu": cpu, "target": target}
        print(f"{name:46s} {wall:5.2f}  {cpu:5.2f}   ≤ {target}")
    if options.json is not None:
        data = {
            "load_before": load_before,
            "load_after": load_after,
            "cores": os.cpu_count(),
            "rows": {r.label: {"wall_s": r.wall_s, "cpu_s": r.cpu_s} for r in rows.values()},
            "ratios": ratios,
        }
        options.json.write_text(json.dumps(data, indent=2))
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
