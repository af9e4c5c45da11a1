"""What `mcpstation gateway --stdio` costs a call, and how soon it is ready (issue 20 §2).

    .venv/bin/python bench/gateway_cost.py [--rounds 3] [--calls 300] [--ready-runs 5]
        [--fastmcp PYTHON] [--json out.json]

The catalog caches are warm (one `tools list --refresh` first). The SDK's own `Client` drives every
side from this process over stdio:

- **direct**: the `Client` spawns the tiny server itself;
- **gateway**: the `Client` spawns `mcpstation gateway --stdio`, which runs the tiny server behind
  its pipeline, with the store on (audit, pins), as a user's editor does;
- **SDK server floor**: the `Client` spawns `bench/servers/sdk_echo_server.py`, the SDK's own
  low-level `Server` with an `echo` handler that answers at once, on the gateway's stdio wire
  (`SDK server, our wire`) and on the SDK's `stdio_server` (`SDK server, SDK wire`). The gateway is
  that same `Server` with the station's pipeline and an upstream client behind its handler, so
  these rows are what the SDK's request handling costs before the station does anything;
- **FastMCP proxy** (when `--fastmcp PYTHON` names an interpreter with `fastmcp` installed, kept
  out of the project's environment): the `Client` spawns `PYTHON -c <create_proxy(...).run()>`
  in front of the tiny server, as FastMCP's docs show a stdio proxy.

Per call: each side holds one `Client` open; each round runs `--calls` sequential `echo` calls per
side after a warm-up, the sides in turns, the order rotated each round. The figure is the p50 of a
round's calls; the table gives the median over rounds and the ratio to direct, with its spread over
the rounds (the noise). CPU per call is the CPU the side's processes (the proxy and the server
behind it, from `/proc`) used during the block, divided by the calls: the client is the same on
every side and not counted.

Ready: a fresh `Client` spawns a gateway with three cached servers (the tiny server and two
SDK-built demo servers) until `tools/list` answers,
against the same `Client` spawning one demo server directly (the SDK-built server a user would
otherwise run); `--ready-runs` each, interleaved. Leaving the `Client` is not timed.

Targets: gateway p50 ≤ 2.0× direct (moonshot 1.5×); gateway ready ≤ 1.0× the demo server direct.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from harness import TINY_SERVER, percentile
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.stdio import stdio_client

PY = sys.executable
DEMO = ["-m", "mcpstation.testing.demo_server"]
WARMUP_CALLS = 50
TIMEOUT_S = 120.0
SDK_ECHO = str(Path(__file__).resolve().parent / "servers" / "sdk_echo_server.py")
P50_TARGET = 2.0
READY_TARGET = 1.0
FASTMCP_PROXY = """
import sys
from fastmcp.server import create_proxy
config = {"mcpServers": {"tiny": {"command": sys.argv[1], "args": [sys.argv[2]]}}}
create_proxy(config, mode="auto", name="proxy").run(show_banner=False)  # the backend speaks one era
"""


def config_text(*, demos: bool) -> str:
    """The tiny server, and with `demos` two demo servers beside it."""
    demo = json.dumps(DEMO)
    text = f'[station]\nnaming = "prefix"\n\n[servers.tiny]\ncommand = "{PY}"\nargs = ["{TINY_SERVER}"]\n'
    if demos:
        text += (
            f'\n[servers.demo]\ncommand = "{PY}"\nargs = {demo}\n\n[servers.demo2]\ncommand = "{PY}"\nargs = {demo}\n'
        )
    return text


def tree_cpu_s(root: int) -> float:
    """User + system CPU of `root` and every live descendant (`/proc`), in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
        todo.extend(children.get(pid, ()))
    return total


def own_children() -> set[int]:
    """Pids whose parent is this process."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        found.add(int(entry))
            except OSError:
                continue
    return found


@asynccontextmanager
async def side(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[tuple[Client, int]]:
    """A `Client` over stdio to `params`, and the pid of the process it spawned."""
    before = own_children()
    async with Client(stdio_client(params, errlog=errlog)) as client:
        spawned = own_children() - before
        if len(spawned) != 1:
            raise RuntimeError(f"expected one new child, found {spawned}")
        yield client, spawned.pop()


async def per_call(
    sides: dict[str, StdioServerParameters], names: dict[str, str], rounds: int, calls: int, errlog: TextIO
) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    async with _Sides(sides, errlog) as clients:
        calls_of: dict[str, Callable[[], Awaitable[None]]] = {}
        for label, (client, _pid) in clients.items():

            async def call(client: Client = client, tool: str = names[label], label: str = label) -> None:
                result = await client.call_tool(tool, {"message": "hi"})
                if result.is_error or result.content[0].text != "hi":  # type: ignore[union-attr]
                    raise RuntimeError(f"{label}: wrong answer {result}")

            calls_of[label] = call
        for call in calls_of.values():
            for _ in range(WARMUP_CALLS):
                await call()
        order = list(sides)
        for round_no in range(rounds):
            turn = order[round_no % len(order) :] + order[: round_no % len(order)]
            for label in turn:
                pid = clients[label][1]
                cpu = tree_cpu_s(pid)
                wall = []
                for _ in range(calls):
                    started = time.perf_counter()
                    await calls_of[label]()
                    wall.append(time.perf_counter() - started)
                cpu = tree_cpu_s(pid) - cpu
                results[label].append(
                    {"p50_us": percentile(wall, 50) * 1e6, "p99_us": percentile(wall, 99) * 1e6,
                     "cpu_us": cpu / calls * 1e6}
                )  # fmt: skip
            print(f"round {round_no + 1}: " + ", ".join(f"{k} {v[-1]['p50_us']:.0f} us" for k, v in results.items()))
    return results


class _Sides:
    """Every side's `Client`, entered together."""

    def __init__(self, sides: dict[str, StdioServerParameters], errlog: TextIO) -> None:
        self.sides = sides
        self.errlog = errlog
        self._stack: Any = None

    async def __aenter__(self) -> dict[str, tuple[Client, int]]:
        from contextlib import AsyncExitStack

        self._stack = AsyncExitStack()
        clients = {}
        for label, params in self.sides.items():
            clients[label] = await self._stack.enter_async_context(side(params, self.errlog))
        return clients

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


async def ready_once(params: StdioServerParameters, expect: str, errlog: TextIO) -> float:
    with anyio.fail_after(TIMEOUT_S):
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = (await client.list_tools()).tools
            took = time.perf_counter() - started
    if not any(tool.name == expect for tool in tools):
        raise RuntimeError(f"no tool {expect!r} in {[t.name for t in tools]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--ready-runs", type=int, default=5)
    parser.add_argument("--fastmcp", help="a Python interpreter with fastmcp installed (its own venv)")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="mcps-gwcost-"))
    env = {k: v for k, v in os.environ.items() if k not in ("MCPSTATION_CONFIG", "COLUMNS")}

    def gateway_for(name: str, *, demos: bool) -> StdioServerParameters:
        """A gateway on its own config and data directory, its catalog cache warmed."""
        config = workdir / f"{name}.toml"
        config.write_text(config_text(demos=demos))
        cli = ["-m", "mcpstation", "--config", str(config)]
        own = env | {"MCPSTATION_DATA_DIR": str(workdir / name)}
        warm = subprocess.run([PY, *cli, "tools", "list", "--refresh", "--json"], env=own, capture_output=True)
        if warm.returncode != 0:
            sys.exit(f"warming the catalog cache failed:\n{warm.stderr.decode()}")
        return StdioServerParameters(command=PY, args=[*cli, "gateway", "--stdio"], env=own, cwd=str(workdir))

    gateway = gateway_for("three", demos=True)  # ready: three cached servers
    sides = {
        "direct": StdioServerParameters(command=PY, args=[TINY_SERVER], env=env, cwd=str(workdir)),
        "gateway": gateway_for("one", demos=False),  # per call: the tiny server alone behind it
    }
    names = {"direct": "echo", "gateway": "mcp_tiny_echo"}
    for wire, label in (("ours", "SDK server, our wire"), ("sdk", "SDK server, SDK wire")):
        sides[label] = StdioServerParameters(command=PY, args=[SDK_ECHO, "--wire", wire], env=env, cwd=str(workdir))
        names[label] = "echo"
    if options.fastmcp:
        sides["FastMCP proxy"] = StdioServerParameters(
            command=options.fastmcp, args=["-c", FASTMCP_PROXY, PY, TINY_SERVER], env=env, cwd=str(workdir)
        )
        names["FastMCP proxy"] = "echo"
    demo = StdioServerParameters(command=PY, args=DEMO, env=env, cwd=str(workdir))

    load_before = os.getloadavg()
    with open(workdir / "stderr.log", "w") as errlog:
        calls = anyio.run(per_call, sides, names, options.rounds, options.calls, errlog)
        ready: dict[str, list[float]] = {"gateway, 3 cached servers": [], "demo server direct": []}
        plan = [("gateway, 3 cached servers", gateway, "mcp_demo2_add"), ("demo server direct", demo, "add")]
        for _label, params, expect in plan:  # warm-up: page cache, bytecode
            anyio.run(ready_once, params, expect, errlog)
        for run in range(options.ready_runs):
            for label, params, expect in plan[run % 2 :] + plan[: run % 2]:
                ready[label].append(anyio.run(ready_once, params, expect, errlog))
    load_after = os.getloadavg()

    print(f"\nload average before {load_before[0]:.1f} / after {load_after[0]:.1f} on {os.cpu_count()} cores")
    print(f"{options.rounds} rounds x {options.calls} sequential calls per side")
    print(f"{'side':<22}{'p50':>10}{'p99':>10}{'proxy+server CPU':>18}{'p50 / direct':>14}{'spread':>12}")
    direct = calls["direct"]
    ratios: dict[str, Any] = {}
    for label, rows in calls.items():
        p50 = statistics.median(r["p50_us"] for r in rows)
        p99 = statistics.median(r["p99_us"] for r in rows)
        cpu = statistics.median(r["cpu_us"] for r in rows)
        per_round = [r["p50_us"] / d["p50_us"] for r, d in zip(rows, direct, strict=True)]
        ratio = p50 / statistics.median(d["p50_us"] for d in direct)
        ratios[label] = {"p50": ratio, "spread": [min(per_round), max(per_round)]}
        spread = f"{min(per_round):.2f}-{max(per_round):.2f}"
        print(f"{label:<22}{p50:>7.0f} us{p99:>7.0f} us{cpu:>15.0f} us{ratio:>14.2f}{spread:>12}")
    print(f"\n{'ready (until tools/list answers)':<34}{'min':>8}{'median':>8}{'max':>8}")
    for label, values in ready.items():
        ms = [v * 1e3 for v in values]
        print(f"{label:<34}{min(ms):>6.0f}ms{statistics.median(ms):>6.0f}ms{max(ms):>6.0f}ms")
    ready_ratio = statistics.median(ready["gateway, 3 cached servers"]) / statistics.median(ready["demo server direct"])
    print(f"\ngateway p50 / direct: {ratios['gateway']['p50']:.2f} (target <= {P50_TARGET})")
    print(f"gateway ready / demo server direct: {ready_ratio:.2f} (target <= {READY_TARGET})")
    if options.json is not None:
        data = {
            "load_before": load_before,
            "load_after": load_after,
            "cores": os.cpu_count(),
            "rounds": options.rounds,
            "calls": options.calls,
            "per_call": calls,
            "ready_s": ready,
            "ratios": ratios | {"ready": ready_ratio},
            "git": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
        }
        options.json.write_text(json.dumps(data, indent=2))
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
