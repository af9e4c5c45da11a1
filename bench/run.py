"""mcpstation against the raw MCP SDK on the same servers, in one run; prints one table.

    python bench/run.py [--quick] [--json FILE]

See bench/README.md for what each row measures and how to read it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import scenarios
import transport
from harness import descendants

LEFTOVER_GRACE_S = 3.0  # time a leftover child gets between SIGTERM and SIGKILL

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Row:
    """One line of the table: the two figures, which direction is better, and the issue's target."""

    label: str
    unit: str
    station: float | None
    raw: float | None
    raw_name: str
    better: Better
    target: str = "-"
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.station is None or self.raw is None or self.raw == 0:
            return None
        return self.station / self.raw


def _ratio_target(limit: float, better: Better) -> Callable[[float, float], bool]:
    if better == "lower":
        return lambda station, raw: station <= raw * limit
    return lambda station, raw: station >= raw * limit


def _row(
    label: str,
    unit: str,
    station: float | None,
    raw: float | None,
    raw_name: str,
    better: Better,
    target: str = "-",
    check: Callable[[float, float], bool] | None = None,
) -> Row:
    met = None
    if check is not None and station is not None and raw is not None:
        met = check(station, raw)
    return Row(label, unit, station, raw, raw_name, better, target, met)


def build_rows(results: dict[str, Any], plan: scenarios.Plan) -> list[Row]:
    rows: list[Row] = []
    overhead = "<= +10 %", _ratio_target(1.10, "lower")
    start_target = "<= +5 %", _ratio_target(1.05, "lower")
    if "stdio_latency" in results:
        r = results["stdio_latency"]
        for raw_name, key in (("Client", "client"), ("ClientSession", "session")):
            for q in ("p50", "p99"):
                rows.append(
                    _row(
                        f"1 stdio call latency {q} (vs {raw_name})",
                        "us",
                        r["station"][f"{q}_s"] * 1e6,
                        r[key][f"{q}_s"] * 1e6,
                        raw_name,
                        "lower",
                        *overhead,
                    )
                )
        rows.append(
            _row(
                "1 stdio client CPU per call",
                "us",
                r["station"]["cpu_per_call_s"] * 1e6,
                r["client"]["cpu_per_call_s"] * 1e6,
                "Client",
                "lower",
                "(info) <= +10 %",
                overhead[1],
            )
        )
    if "http_latency" in results:
        r = results["http_latency"]
        for q in ("p50", "p99"):
            rows.append(
                _row(
                    f"1 HTTP call latency {q}",
                    "us",
                    r["station"][f"{q}_s"] * 1e6,
                    r["client"][f"{q}_s"] * 1e6,
                    "Client",
                    "lower",
                    *overhead,
                )
            )
    if "throughput" in results:
        r = results["throughput"]
        rows.append(
            _row(
                f"2 throughput, {scenarios.IN_FLIGHT} in flight (stdio)",
                "calls/s",
                r["station"]["median_calls_per_s"],
                r["client"]["median_calls_per_s"],
                "Client",
                "higher",
                ">= 90 %",
                _ratio_target(0.90, "higher"),
            )
        )
        rows.append(
            _row(
                f"2 client CPU per call, {scenarios.IN_FLIGHT} in flight",
                "us",
                r["station"]["median_cpu_per_call_s"] * 1e6,
                r["client"]["median_cpu_per_call_s"] * 1e6,
                "Client",
                "lower",
                "(info) <= +10 %",
                _ratio_target(1.10, "lower"),
            )
        )
    if "neighbour" in results:
        r = results["neighbour"]
        rows.append(
            _row(
                f"6 throughput beside a hostile server ({scenarios.IN_FLIGHT} in flight)",
                "calls/s",
                r["beside_hostile"]["median_calls_per_s"],
                r["alone"]["median_calls_per_s"],
                "same station, no hostile server",
                "higher",
                ">= 90 %",
                _ratio_target(0.90, "higher"),
            )
        )
    if "startup" in results:
        r = results["startup"]
        fleets = [(f"{count} stdio server{'s' if count > 1 else ''}", f"fleet_{count}") for count in (1, 10, 20)]
        fleets.append((f"20 servers x {scenarios.PAGED_TOOLS // 20} tools", "fleet_20_wide"))
        fleets.append((f"20 servers, {scenarios.BYSTANDERS} idle procs on host", "fleet_20_busy"))
        for label, key in fleets:
            fleet = r[key]
            rows.append(
                _row(
                    f"3 start-up, {label}",
                    "ms",
                    fleet["station"]["median_ready_s"] * 1e3,
                    fleet["client"]["median_ready_s"] * 1e3,
                    "Client x N, concurrent",
                    "lower",
                    *start_target,
                )
            )
        stops = (("20 stdio servers", "fleet_20"), (f"same, {scenarios.BYSTANDERS} idle procs", "fleet_20_busy"))
        for label, key in stops:
            fleet = r[key]
            rows.append(
                _row(
                    f"3 stop (info), {label}",
                    "ms",
                    fleet["station"]["median_stop_s"] * 1e3,
                    fleet["client"]["median_stop_s"] * 1e3,
                    "Client x N, concurrent",
                    "lower",
                )
            )
        slow = r["slow_20"]
        rows.append(
            _row(
                f"3 start-up, 20 servers x {scenarios.SLOW_INIT_S:g} s init",
                "ms",
                slow["station"]["median_ready_s"] * 1e3,
                slow["client"]["median_ready_s"] * 1e3,
                "Client x N, concurrent",
                "lower",
                "station <= 1500 ms",
                lambda station, raw: station <= 1500,
            )
        )
        sequential = r.get("slow_20_sequential_raw_s")
        rows.append(
            _row(
                "3 same, raw SDK one by one (seed style)",
                "ms",
                slow["station"]["median_ready_s"] * 1e3,
                None if sequential is None else sequential * 1e3,
                "Client x N, sequential" if sequential is not None else "not run (--quick): ~20 s",
                "lower",
            )
        )
    if "discovery" in results:
        r = results["discovery"]
        for label, key in ((f"paged by {scenarios.PAGE_SIZE}", "paged"), ("one page", "unpaged")):
            rows.append(
                _row(
                    f"4 discovery, {scenarios.PAGED_TOOLS:,} tools {label}",
                    "ms",
                    r[key]["station"]["median_s"] * 1e3,
                    r[key]["client"]["median_s"] * 1e3,
                    "Client + page walk",
                    "lower",
                )
            )
    if "memory" in results:
        r = results["memory"]
        rows.append(
            _row(
                f"5 client RSS per held connection (N={scenarios.MEMORY_CONNECTIONS})",
                "KiB",
                r["station"]["median_per_connection_bytes"] / 1024,
                r["client"]["median_per_connection_bytes"] / 1024,
                "Client x N",
                "lower",
            )
        )
    if "transport" in results:
        rows.extend(_transport_rows(results["transport"]))
    return rows


def _transport_rows(r: dict[str, Any]) -> list[Row]:
    """Row 7: in these rows 'mcpstation' is our stdio transport and 'raw SDK' the SDK's stdio_client."""
    sdk = "ClientSession+stdio_client"
    ours, theirs = r["ours"], r["sdk"]
    cpu_target = "<= 1.0x (stretch 0.7x)", _ratio_target(1.0, "lower")
    rows = [
        _row(
            "7 transport: client CPU per call",
            "us",
            ours["cpu_per_call_s"] * 1e6,
            theirs["cpu_per_call_s"] * 1e6,
            sdk,
            "lower",
            *cpu_target,
        ),
        _row("7 transport: call latency p50", "us", ours["p50_s"] * 1e6, theirs["p50_s"] * 1e6, sdk, "lower"),
        _row("7 transport: call latency p99", "us", ours["p99_s"] * 1e6, theirs["p99_s"] * 1e6, sdk, "lower"),
        _row(
            f"7 transport: throughput, {transport.IN_FLIGHT} in flight",
            "calls/s",
            ours["median_calls_per_s"],
            theirs["median_calls_per_s"],
            sdk,
            "higher",
            ">= 1.0x (stretch 1.4x)",
            _ratio_target(1.0, "higher"),
        ),
        _row(
            f"7 transport: client CPU per call, {transport.IN_FLIGHT} in flight",
            "us",
            ours["median_cpu_per_call_in_flight_s"] * 1e6,
            theirs["median_cpu_per_call_in_flight_s"] * 1e6,
            sdk,
            "lower",
            *cpu_target,
        ),
    ]
    n = r["neighbour"]
    rows.append(
        _row(
            "7 neighbour p95 during a flood / idle (x)",
            "x",
            n["ours"]["ratio"],
            n["sdk"]["ratio"],
            "same, both servers on stdio_client",
            "lower",
            "ours <= 2.0x",
            lambda station, raw: station <= 2.0,
        )
    )
    for case, label in (("big_line", f"one {transport.BIG_LINE_MB} MiB line"), ("schema_bombs", "schema-bomb listing")):
        m = r["memory"][case]
        rows.append(
            _row(
                f"7 peak client RSS growth, {label}",
                "MiB",
                m["ours"]["peak_growth_bytes"] / 2**20,
                m["sdk"]["peak_growth_bytes"] / 2**20,
                sdk,
                "lower",
                "ours <= cap + 32 MiB" if case == "big_line" else "-",
                (lambda station, raw: station <= 48) if case == "big_line" else None,
            )
        )
    return rows


def _number(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    if unit == "calls/s":
        return f"{value:,.0f} {unit}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.1f} {unit}"


def render_table(rows: list[Row]) -> str:
    header = ("row", "mcpstation", "raw SDK", "raw SDK is", "station/raw", "better", "target", "met")
    lines = [header]
    for row in rows:
        ratio = row.ratio
        lines.append(
            (
                row.label,
                _number(row.station, row.unit),
                _number(row.raw, row.unit),
                row.raw_name,
                "-" if ratio is None else f"{ratio:.3f}",
                row.better,
                row.target,
                {True: "yes", False: "NO", None: "-"}[row.met],
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = []
    for n, line in enumerate(lines):
        cells = [cell.ljust(widths[i]) if i in (0, 3, 5, 6) else cell.rjust(widths[i]) for i, cell in enumerate(line)]
        rendered.append("  ".join(cells).rstrip())
        if n == 0:
            rendered.append("  ".join("-" * w for w in widths))
    return "\n".join(rendered)


SCENARIOS: dict[str, Callable[[scenarios.Plan], Awaitable[dict[str, Any]]]] = {
    "stdio_latency": scenarios.stdio_latency,
    "http_latency": scenarios.http_latency,
    "throughput": scenarios.throughput,
    "startup": scenarios.startup,
    "discovery": scenarios.discovery,
    "memory": scenarios.memory,
    "neighbour": scenarios.neighbour,
    "transport": transport.transport,
}


async def run_all(plan: scenarios.Plan, only: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    results: dict[str, Any] = {}
    durations: dict[str, float] = {}
    for name in only:
        print(f"  {name} ...", end="", file=sys.stderr, flush=True)
        started = time.perf_counter()
        results[name] = await SCENARIOS[name](plan)
        durations[name] = time.perf_counter() - started
        print(f" {durations[name]:.1f} s", file=sys.stderr, flush=True)
    return results, durations


def end_leftovers() -> list[tuple[int, str]]:
    """Every process still below us after the run; each gets SIGTERM, then SIGKILL."""
    leftovers = descendants()
    for pid, _ in leftovers:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while time.monotonic() < deadline and any(_alive(pid) for pid, _ in leftovers):
        time.sleep(0.05)
    for pid, _ in leftovers:
        _signal(pid, signal.SIGKILL)
    return leftovers


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    return any(p == pid for p, _ in descendants())


def source_state() -> dict[str, Any]:
    """The commit measured and the files under src/ that differ from it (others work in this tree)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.rstrip()

    changed = [line[3:] for line in git("status", "--porcelain", "--", "src").splitlines()]
    return {"commit": git("rev-parse", "--short", "HEAD"), "src_changed_since_commit": changed}


def machine() -> dict[str, Any]:
    return {
        **source_state(),
        "python": platform.python_version(),
        "mcp": version("mcp"),
        "mcpstation": version("mcpstation"),
        "anyio": version("anyio"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer calls and repetitions (under a minute)")
    parser.add_argument("--json", metavar="FILE", help="also write every number to FILE as JSON")
    parser.add_argument("--only", action="append", choices=list(SCENARIOS), help="run only these rows (repeatable)")
    args = parser.parse_args(argv)
    plan = scenarios.QUICK if args.quick else scenarios.FULL
    only = args.only or list(SCENARIOS)
    info = machine()
    print(
        f"mcpstation bench ({'quick' if args.quick else 'full'}): python {info['python']}, mcp {info['mcp']}, "
        f"{info['cpus']} cpus, load {info['loadavg_at_start'][0]:.2f}",
        file=sys.stderr,
    )
    started = time.perf_counter()
    try:
        results, durations = anyio.run(run_all, plan, only)
    finally:
        leftovers = end_leftovers()
    total_s = time.perf_counter() - started
    rows = build_rows(results, plan)
    print()
    print(render_table(rows))
    print(f"\nratio = station / raw SDK for every row; 'better' says which direction wins. Total {total_s:.0f} s.")
    if leftovers:
        print(f"\nWARNING: {len(leftovers)} child processes were still running and were killed:", file=sys.stderr)
        for pid, command in leftovers:
            print(f"  {pid} {command}", file=sys.stderr)
    else:
        print("No child processes left behind.")
    if args.json:
        info["loadavg_at_end"] = os.getloadavg()
        document = {
            "mode": "quick" if args.quick else "full",
            "plan": asdict(plan),
            "machine": info,
            "total_s": total_s,
            "scenario_s": durations,
            "table": [{**asdict(row), "ratio": row.ratio} for row in rows],
            "results": results,
            "leftover_processes": leftovers,
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        print(f"numbers written to {args.json}")
    return 1 if leftovers else 0


if __name__ == "__main__":
    sys.exit(main())
