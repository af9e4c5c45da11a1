"""A fleet on one machine: a hundred stdio servers, eager and lazy, and what each costs.

    python bench/fleet.py [--servers N] [--rounds R] [--json FILE]

Each round, on a fresh SQLite store in a temporary data directory, with N tiny stdio servers
(`bench/servers/tiny_server.py`, 2 tools each), all `start = "lazy"`:
  cold        `Station` entry with an empty catalog cache: never listed, every server starts at
              boot (`max_concurrent_starts` at a time) and its listing is cached;
  warm        `Station` entry again: every server IDLE, the catalog from the cache;
  warm+store  the same with `Store.open` inside the clock;
  tools list  `mcpstation --config F --data-dir D tools list --json` in a fresh process (wall
              time of the whole command, interpreter start included), one-shot: the command
              starts a station of its own (all IDLE);
  imports     a fresh interpreter importing only what that command imports (the floor of a one-shot);
  tools list, running   the same while `mcpstation up` runs for D (the CLI asks it over the
              control socket and imports no station);
  first call  the first call to one IDLE server (its start-up, paid once), then the median of
              20 later calls to it.
The clock of the entry rows runs from entering `Station(config, store=store)` (config validated
before) until entry returns with the catalog complete (2·N tools).

Memory (a fresh interpreter per figure, `--probe`): VmRSS growth of this process per READY
connection (N eager servers, each called once) and per IDLE lazy server (N cached, none started),
after a warm-up; the servers' own processes are not counted (their RSS is reported apart).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from mcpstation import Station, StationConfig
from mcpstation.connection import ConnectionState
from mcpstation.store import Store

HERE = Path(__file__).resolve().parent
TINY = HERE / "servers" / "tiny_server.py"
SETTINGS = {"health_interval_s": 0, "startup_timeout_s": 180}
LATER_CALLS = 20
CPU: list[float] = []  # process CPU seconds of the last entry timed (the figure least moved by other load)
MCPSTATION = Path(sys.executable).with_name("mcpstation")


def specs(count: int, start: str) -> list[dict[str, Any]]:
    return [{"name": f"s{i:03d}", "command": sys.executable, "args": [str(TINY)], "start": start} for i in range(count)]


def config(count: int, start: str = "lazy") -> StationConfig:
    return StationConfig(servers=specs(count, start), station=SETTINGS)


def write_config(path: Path, count: int) -> None:
    lines = ["[station]", "health_interval_s = 0", ""]
    for spec in specs(count, "lazy"):
        lines += [
            "[[servers]]",
            f"name = {json.dumps(spec['name'])}",
            f"command = {json.dumps(spec['command'])}",
            f"args = {json.dumps(spec['args'])}",
            'start = "lazy"',
            "",
        ]
    path.write_text("\n".join(lines))


async def entry(data: Path, count: int, *, with_store_open: bool = False) -> tuple[float, dict[str, int]]:
    """Seconds from entering the station until entry returned; how many servers were in which state.
    The CPU seconds this process spent meanwhile go to `CPU[-1]`."""
    started, cpu = time.perf_counter(), time.process_time()
    store = await Store.open(data_dir=data)
    if not with_store_open:
        started, cpu = time.perf_counter(), time.process_time()
    try:
        async with Station(config(count), store=store) as station:
            elapsed = time.perf_counter() - started
            CPU.append(time.process_time() - cpu)
            assert len(station.tools) == 2 * count, len(station.tools)
            states: dict[str, int] = {}
            for connection in station.connections.values():
                states[str(connection.state)] = states.get(str(connection.state), 0) + 1
    finally:
        await store.aclose()
    return elapsed, states


async def calls(data: Path, count: int) -> tuple[float, float]:
    """The first call to an IDLE server (its start-up included), then the median of later calls."""
    async with await Store.open(data_dir=data) as store, Station(config(count), store=store) as station:
        name = f"mcp_s{count - 1:03d}_add"
        assert station.connection(f"s{count - 1:03d}").state is ConnectionState.IDLE
        started = time.perf_counter()
        result = await station.call_tool(name, {"a": 2, "b": 3})
        first = time.perf_counter() - started
        assert result.ok and result.text == "5", result
        later = []
        for _ in range(LATER_CALLS):
            started = time.perf_counter()
            assert (await station.call_tool(name, {"a": 1, "b": 1})).ok
            later.append(time.perf_counter() - started)
    return first, statistics.median(later)


def cli(config_file: Path, data: Path, *args: str) -> list[str]:
    return [str(MCPSTATION), "--config", str(config_file), "--data-dir", str(data), *args]


def tools_list(config_file: Path, data: Path, count: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(cli(config_file, data, "tools", "list", "--json"), capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    assert len(json.loads(done.stdout)) == 2 * count, done.stdout[:200]
    return elapsed


def imports_only() -> float:
    """A fresh interpreter importing what a one-shot `tools list` imports, and nothing else."""
    started = time.perf_counter()
    code = "import mcpstation.cli.app, mcpstation.station, mcpstation.store, mcpstation.host"
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


UP_READY_S = 120.0  # bound on `mcpstation up` opening its control socket


def tools_list_running(config_file: Path, data: Path, count: int) -> float:
    """`tools list` against a running `mcpstation up` for the same data directory (median of 3)."""
    up = subprocess.Popen(
        cli(config_file, data, "up", "--port", "0"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + UP_READY_S
        while not (data / "control" / "station.sock").exists():  # bound once `up` listens
            if time.monotonic() > deadline or up.poll() is not None:
                raise RuntimeError("mcpstation up did not open its control socket")
            time.sleep(0.1)
        timings = []
        for _ in range(3):
            timings.append(tools_list(config_file, data, count))
        return statistics.median(timings)
    finally:
        up.terminate()
        up.wait(timeout=30)


async def one_round(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcps-fleet-") as directory:
        data = Path(directory) / "data"
        config_file = Path(directory) / "mcpstation.toml"
        write_config(config_file, count)
        cold, cold_states = await entry(data, count)
        assert cold_states == {"READY": count}, cold_states
        cold_cpu = CPU[-1]
        warm, warm_states = await entry(data, count)
        assert warm_states == {"IDLE": count}, warm_states
        warm_cpu = CPU[-1]
        warm_store, _ = await entry(data, count, with_store_open=True)
        listed = tools_list(config_file, data, count)
        imported = imports_only()
        listed_running = tools_list_running(config_file, data, count)
        first, later = await calls(data, count)
    return {
        "cold": cold,
        "cold CPU": cold_cpu,
        "warm": warm,
        "warm CPU": warm_cpu,
        "warm+store": warm_store,
        "tools list": listed,
        "imports": imported,
        "tools list, running": listed_running,
        "first call": first,
        "later call": later,
    }


# -- memory, one fresh interpreter per figure ------------------------------------------------------


def rss_bytes(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def probe(kind: str, count: int, data: Path) -> dict[str, Any]:
    """RSS growth per server of a station of `count` READY (eager) or IDLE (lazy, cached in `data`) servers."""
    if kind == "fill":  # its own interpreter, so the probe's allocator has not seen a hundred connections
        async with await Store.open(data_dir=data) as store, Station(config(count), store=store):
            return {"kind": kind, "count": count}
    async with await Store.open(data_dir=data) as store:
        async with Station(config(1, "eager"), store=store) as station:  # warm-up: imports, pools
            assert (await station.call_tool("mcp_s000_echo", {"message": "hi"})).ok
        gc.collect()
        before = rss_bytes()
        start = "lazy" if kind == "idle" else "eager"
        async with Station(config(count, start), store=store) as station:
            expected = ConnectionState.IDLE if kind == "idle" else ConnectionState.READY
            assert all(c.state is expected for c in station.connections.values())
            servers = 0
            if kind == "ready":
                for i in range(count):
                    assert (await station.call_tool(f"mcp_s{i:03d}_echo", {"message": "hi"})).ok
                servers = sum(rss_bytes(c.pid) for c in station.connections.values() if c.pid)
            gc.collect()
            after = rss_bytes()
    return {"kind": kind, "count": count, "per_server_bytes": (after - before) / count, "server_rss_bytes": servers}


def memory(kind: str, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mcps-fleet-") as directory:
        steps = ["fill", kind] if kind == "idle" else [kind]
        for step in steps:
            done = subprocess.run(
                [sys.executable, __file__, "--probe", step, "--servers", str(count), "--data", f"{directory}/data"],
                capture_output=True,
                text=True,
                check=True,
            )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--probe", choices=["ready", "idle", "fill"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(anyio.run(probe, args.probe, args.servers, args.data)))
        return
    load_before = os.getloadavg()
    rounds = []
    for index in range(args.rounds):
        rounds.append(anyio.run(one_round, args.servers))
        done = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in rounds[-1].items())
        print(f"round {index + 1} (load {os.getloadavg()[0]:.1f}): {done}", flush=True)
    ready, idle = memory("ready", args.servers), memory("idle", args.servers)
    load_after = os.getloadavg()
    slots = config(1).station.concurrent_starts
    targets = {"warm": 0.2, "tools list": 1.0, "tools list, running": 1.0}
    print(f"\n{args.servers} lazy tiny stdio servers, median of {args.rounds} (min-max); {slots} start-up slots")
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {os.cpu_count()} CPUs")
    print(f"{'row':<52}{'median':>10}{'range':>20}{'target':>10}")
    labels = {
        "cold": "Station entry, cache empty: all start (cold)",
        "cold CPU": "  its CPU (this process)",
        "warm": "Station entry, cache full: catalog at once (warm)",
        "warm CPU": "  its CPU (this process)",
        "warm+store": "  the same with Store.open",
        "tools list": "`mcpstation tools list --json`, one-shot",
        "imports": "  its floor: a fresh interpreter's imports alone",
        "tools list, running": "  the same with `mcpstation up` running",
        "first call": "first call to an IDLE server (its start-up)",
        "later call": f"later calls to it (median of {LATER_CALLS})",
    }
    for key, label in labels.items():
        values = [r[key] for r in rounds]
        target = f"<= {targets[key] * 1000:.0f} ms" if key in targets else ""
        spread = f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f} ms"
        print(f"{label:<52}{statistics.median(values) * 1000:>7.0f} ms{spread:>20}{target:>10}")
    print(f"{'client memory per READY connection':<52}{ready['per_server_bytes'] / 1024:>7.0f} KiB")
    print(f"{'  each tiny server process (RSS)':<52}{ready['server_rss_bytes'] / args.servers / 1024:>7.0f} KiB")
    print(f"{'client memory per IDLE lazy server':<52}{idle['per_server_bytes'] / 1024:>7.1f} KiB")
    if args.json:
        record = {
            "servers": args.servers,
            "rounds": rounds,
            "memory": {"ready": ready, "idle": idle},
            "start_slots": slots,
            "load_before": load_before,
            "load_after": load_after,
            "cpus": os.cpu_count(),
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
