"""What a library user pays before the first answer: the import, and one stdio server called once.

    .venv/bin/python bench/imports.py [--runs 15] [--json out.json]

Each row is a fresh interpreter, timed from outside (wall clock around spawn and reap; peak RSS
and CPU from the kernel's accounting of that child alone, `os.wait4`). The two sides take turns
(A B, B A, ...), so drift on a shared machine hits both alike:

- import: `from mcp import ClientSession` against `from mcpstation import Station`;
- first call: the raw SDK (`mcp.client.Client`) spawning the stdlib tiny server, initializing and
  calling `echo` once, against `async with Station(that one server)` and `station.call_tool`.
  The in-process figure (`work`) runs from just before the client or station is entered until the
  call returns, printed by the child; the whole-process figure includes the interpreter and imports.

The package is byte-compiled first (`compileall`), as an installed wheel is: an editable checkout
under `PYTHONDONTWRITEBYTECODE=1` would otherwise compile every module on every run, which the
SDK in site-packages never does.

Targets (issue 20): import wall ≤ 1.2× the SDK's, peak RSS ≤ the SDK's + 10 MiB; the first call
≤ 1.3× the raw SDK's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PY = sys.executable
TINY = str(Path(__file__).resolve().parent / "servers" / "tiny_server.py")
RUN_TIMEOUT_S = 120.0  # one child on a loaded 2-core machine

SDK_IMPORT = "from mcp import ClientSession"
STATION_IMPORT = "from mcpstation import Station"
SDK_CALL = f"""
import time, sys
import anyio
from mcp import StdioServerParameters
from mcp.client import Client

async def main():
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=sys.executable, args=[{TINY!r}])) as client:
        result = await client.call_tool("echo", {{"message": "hi"}})
        assert not result.is_error, result
        print(time.perf_counter() - started)

anyio.run(main)
"""
STATION_CALL = f"""
import time, sys
import anyio
from mcpstation import Station, StationConfig

async def main():
    config = StationConfig(servers=[{{"name": "tiny", "command": sys.executable, "args": [{TINY!r}]}}])
    started = time.perf_counter()
    async with Station(config) as station:
        result = await station.call_tool("mcp_tiny_echo", {{"message": "hi"}})
        assert result.outcome == "ok", result
        print(time.perf_counter() - started)

anyio.run(main)
"""


@dataclass
class Row:
    label: str
    code: str
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    peak_mib: list[float] = field(default_factory=list)
    work_s: list[float] = field(default_factory=list)


def _spawn_and_measure(row: Row) -> None:
    """Run `row`'s child once, reaping it with `wait4` so its own peak RSS and CPU are read."""
    started = time.perf_counter()
    child = subprocess.Popen([PY, "-c", row.code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        sys.exit(f"{row.label} failed ({child.returncode}):\n{err.decode()}")
    row.wall_s.append(wall)
    row.cpu_s.append(usage.ru_utime + usage.ru_stime)
    row.peak_mib.append(usage.ru_maxrss / 1024)
    text = out.decode().strip()
    if text:
        row.work_s.append(float(text.splitlines()[-1]))


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _spread(values: list[float], scale: float = 1e3) -> str:
    return f"{min(values) * scale:.0f}-{max(values) * scale:.0f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pairs = [
        (Row("import: raw SDK", SDK_IMPORT), Row("import: mcpstation", STATION_IMPORT)),
        (Row("first call: raw SDK", SDK_CALL), Row("first call: mcpstation", STATION_CALL)),
    ]
    import mcpstation

    subprocess.run([PY, "-m", "compileall", "-q", str(Path(mcpstation.__file__).parent)], check=True)
    for pair in pairs:  # one warm-up each: .pyc files written, page cache warm
        for row in pair:
            _spawn_and_measure(Row(row.label, row.code))
    load_before = os.getloadavg()
    for index in range(args.runs):
        for raw, ours in pairs:
            for row in (raw, ours) if index % 2 == 0 else (ours, raw):
                _spawn_and_measure(row)
    load_after = os.getloadavg()
    print(f"median of {args.runs} interleaved runs; load average before {load_before}, after {load_after}")
    print(f"{'row':<26}{'wall ms':>9}{'range':>13}{'CPU ms':>9}{'peak MiB':>10}{'work ms':>9}{'range':>13}")
    report: dict[str, object] = {"runs": args.runs, "load_before": load_before, "load_after": load_after}
    for raw, ours in pairs:
        for row in (raw, ours):
            print(
                f"{row.label:<26}{_median(row.wall_s) * 1e3:>9.0f}{_spread(row.wall_s):>13}"
                f"{_median(row.cpu_s) * 1e3:>9.0f}{_median(row.peak_mib):>10.1f}"
                f"{_median(row.work_s) * 1e3:>9.0f}{_spread(row.work_s):>13}"
            )
            report[row.label] = {
                "wall_s": row.wall_s,
                "cpu_s": row.cpu_s,
                "peak_mib": row.peak_mib,
                "work_s": row.work_s,
            }
        wall = _median(ours.wall_s) / _median(raw.wall_s)
        cpu = _median(ours.cpu_s) / _median(raw.cpu_s)
        peak = _median(ours.peak_mib) - _median(raw.peak_mib)
        work = f", work {_median(ours.work_s) / _median(raw.work_s):.2f}×" if raw.work_s else ""
        print(f"  ratio: wall {wall:.2f}×, CPU {cpu:.2f}×, peak RSS {peak:+.1f} MiB{work}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
