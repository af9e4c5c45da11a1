"""Issue 20's targets in one table from one run: each of our rows beside the raw SDK's, with the load.

    .venv/bin/python bench/edges.py [--quick] [--out DIR] [--fastmcp PYTHON]

Runs the benches that measure each target, one after another, each interleaving our side with the
raw SDK's in its own rounds (see each script's docstring for what it times), writes their JSON
into `--out` (default `bench/results/edges/`) and prints one table: the figure, ours, the raw
SDK's, the ratio (or our absolute figure where the target is one), the target, and whether it is
met. The machine's load average is taken before and after every bench and printed in the table:
on a shared 2-core machine only the ratios within one bench's run mean anything.

| bench | rows |
|---|---|
| `imports.py` | `from mcpstation import Station`: wall, peak RSS; `Station` until its first call returns |
| `pipeline_cost.py` | `Station.call_tool` with every default layer: client CPU and p50 per call |
| `gateway_cost.py` | `gateway --stdio`: p50 per call beside direct; ready with three cached servers |
| `cli_edges.py` | one-shot `call`, `tools list` from the cache, gateway ready, each beside a raw SDK script |
| `pins.py` | the 10,000-tool warm restart from the catalog cache (SQLite) |
| `starts.py` | twenty 1-s servers, five SDK-built servers, a hundred CPU-heavy servers |

A full run takes about 7 minutes on a quiet 2-core machine; `--quick` takes fewer rounds. The
README quotes both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable


@dataclass(frozen=True)
class Bench:
    """One bench script, its arguments (full, quick), and the rows read from its JSON."""

    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    json_flag: str = "--json"


BENCHES: dict[str, Bench] = {
    "imports": Bench("imports.py", ("--runs", "15"), ("--runs", "7")),
    "pipeline": Bench("pipeline_cost.py", ("--rounds", "10", "--calls", "1000"), ("--rounds", "5", "--calls", "500")),
    "gateway": Bench(
        "gateway_cost.py", ("--rounds", "3", "--calls", "300", "--ready-runs", "5"), ("--rounds", "3", "--calls", "200")
    ),
    "cli": Bench("cli_edges.py", ("--runs", "10"), ("--runs", "5")),
    "restart": Bench("pins.py", ("--db", "sqlite", "--rounds", "5"), ("--db", "sqlite", "--rounds", "3")),
    "starts": Bench("starts.py", ("--reps", "3"), ("--reps", "2")),
}


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    figure: str
    ours: str
    raw: str
    value: float  # the ratio, or our absolute figure where the target is one
    target: float
    unit: str = "×"  # "×" for a ratio; otherwise the unit of an absolute target
    note: str = ""

    @property
    def met(self) -> bool:
        return self.value <= self.target


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms"


def _us(micros: float) -> str:
    return f"{micros:,.0f} µs"


def _ratio_row(figure: str, ours: float, raw: float, target: float, show: Callable[[float], str]) -> Row:
    return Row(figure, show(ours), show(raw), ours / raw, target)


def imports_rows(data: dict[str, Any]) -> list[Row]:
    sdk, ours = data["import: raw SDK"], data["import: mcpstation"]
    first_sdk, first_ours = data["first call: raw SDK"], data["first call: mcpstation"]
    peak = _median(ours["peak_mib"]) - _median(sdk["peak_mib"])
    return [
        _ratio_row("import wall (`from mcpstation import Station`)", _median(ours["wall_s"]), _median(sdk["wall_s"]),
                   1.2, _ms),
        Row("import peak RSS over the SDK's", f"{_median(ours['peak_mib']):.1f} MiB",
            f"{_median(sdk['peak_mib']):.1f} MiB", peak, 10.0, " MiB"),
        _ratio_row("library: `Station` until its first call returns", _median(first_ours["work_s"]),
                   _median(first_sdk["work_s"]), 1.3, _ms),
    ]  # fmt: skip


def pipeline_rows(data: dict[str, Any]) -> list[Row]:
    station, raw = data["per_round"]["station"], data["per_round"]["raw SDK"]
    rows = []
    for key, figure, target in (("cpu_us", "`Station.call_tool` CPU per call, every default layer", 0.9),
                                ("p50_us", "`Station.call_tool` p50 per call", 1.0)):  # fmt: skip
        rows.append(_ratio_row(figure, _median([r[key] for r in station]), _median([r[key] for r in raw]), target, _us))
    return rows


def gateway_rows(data: dict[str, Any]) -> list[Row]:
    calls = data["per_call"]
    direct = _median([r["p50_us"] for r in calls["direct"]])
    gateway = _median([r["p50_us"] for r in calls["gateway"]])
    rows = [_ratio_row("`gateway --stdio` p50 per call, beside direct", gateway, direct, 2.0, _us)]
    if "FastMCP proxy" in calls:
        fastmcp = _median([r["p50_us"] for r in calls["FastMCP proxy"]])
        rows.append(Row("FastMCP proxy p50 per call, beside direct (peer, no target)", _us(fastmcp), _us(direct),
                        fastmcp / direct, float("inf")))  # fmt: skip
    ready = data["ready_s"]
    rows.append(
        _ratio_row("`gateway --stdio` ready, 3 cached servers / demo server direct",
                   _median(ready["gateway, 3 cached servers"]), _median(ready["demo server direct"]), 1.0, _ms)
    )  # fmt: skip
    return rows


def cli_rows(data: dict[str, Any]) -> list[Row]:
    rows = data["rows"]

    def wall(label: str) -> float:
        return _median(rows[label]["wall_s"])

    return [
        _ratio_row("one-shot `call` (3 servers configured) / raw SDK script",
                   wall("mcpstation call (3 servers, cache warm)"), wall("raw SDK: spawn the demo server, 1 call"),
                   1.3, _ms),
        _ratio_row("`tools list` over 3 cached servers / raw SDK listing 1",
                   wall("mcpstation tools list (3 servers, cache warm)"),
                   wall("raw SDK: spawn the demo server, list tools"), 1.0, _ms),
    ]  # fmt: skip


def restart_rows(data: dict[str, Any]) -> list[Row]:
    rows = data["results"]["sqlite"]
    restart = _median([wall for wall, _ in rows["restart"]])
    raw = _median([wall for wall, _ in rows["raw"]])
    return [Row("10,000-tool warm restart (SQLite, pins stored)", _ms(restart), f"{_ms(raw)} (listing)",
                restart, 1.0, " s")]  # fmt: skip


def starts_rows(data: dict[str, Any]) -> list[Row]:
    slow, sdk = data["slow_20"], data["sdk_5"]
    rows = [
        Row("twenty servers that wait 1 s before `initialize`: ready", _ms(slow["station_median_s"]),
            _ms(slow["sdk_median_s"]), slow["station_median_s"], 1.5, " s"),
        _ratio_row("five SDK-built servers: ready", sdk["station_median_s"], sdk["sdk_median_s"], 1.05, _ms),
    ]  # fmt: skip
    fleet = next((key for key in data if key.startswith("cpu_")), None)
    if fleet is not None:
        ready = data[fleet]["station_ready_s"]
        rows.append(Row(f"{fleet.removeprefix('cpu_')} CPU-heavy servers: all READY, no start-up timeout",
                        _ms(ready), "-", 0.0 if data[fleet]["all_ready"] else 1.0, 0.0, "", "all READY"))  # fmt: skip
    return rows


READERS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "imports": imports_rows,
    "pipeline": pipeline_rows,
    "gateway": gateway_rows,
    "cli": cli_rows,
    "restart": restart_rows,
    "starts": starts_rows,
}


def run_bench(name: str, bench: Bench, out: Path, *, quick: bool, extra: tuple[str, ...]) -> dict[str, Any]:
    """Run one bench into `out/NAME.json`; its own table goes to `out/NAME.txt`."""
    target = out / f"{name}.json"
    argv = [PY, str(HERE / bench.script), *(bench.quick if quick else bench.full), *extra, bench.json_flag, str(target)]
    with open(out / f"{name}.txt", "w") as log:
        done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parent, check=False)
    if done.returncode != 0:
        sys.exit(f"{bench.script} failed ({done.returncode}); see {out / f'{name}.txt'}")
    loaded: dict[str, Any] = json.loads(target.read_text())
    return loaded


def _value(row: Row) -> str:
    if row.target == float("inf"):
        return f"{row.value:.2f}×"
    if row.unit == "×":
        return f"{row.value:.2f}×"
    if row.note:
        return row.note if row.met else "NOT all READY"
    return f"{row.value:+.1f}{row.unit}" if row.unit == " MiB" else f"{row.value:.2f}{row.unit}"


def _target(row: Row) -> str:
    if row.target == float("inf"):
        return "-"
    if row.note:
        return row.note
    return f"≤ {row.target:g}{row.unit if row.unit != '×' else '×'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds per bench")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "edges")
    parser.add_argument("--fastmcp", help="an interpreter with fastmcp installed: its proxy joins the gateway rows")
    parser.add_argument("--only", action="append", choices=sorted(BENCHES), help="run only these benches")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout
    started = time.monotonic()
    sections: list[tuple[str, tuple[float, float], list[Row]]] = []
    for name, bench in BENCHES.items():
        if options.only and name not in options.only:
            continue
        extra = ("--fastmcp", options.fastmcp) if name == "gateway" and options.fastmcp else ()
        before = os.getloadavg()[0]
        print(f"== {bench.script} (load {before:.1f})", flush=True)
        data = run_bench(name, bench, options.out, quick=options.quick, extra=extra)
        sections.append((bench.script, (before, os.getloadavg()[0]), READERS[name](data)))
    minutes = (time.monotonic() - started) / 60
    lines = [
        f"commit {git.strip()}, {os.cpu_count()} cores, {'quick' if options.quick else 'full'} run, {minutes:.1f} min",
        "",
        "| figure | mcpstation | raw SDK | ratio / value | target | met | load before → after |",
        "|---|---|---|---|---|---|---|",
    ]
    for script, (before, after), rows in sections:
        for row in rows:
            met = "-" if row.target == float("inf") else ("yes" if row.met else "**no**")
            lines.append(
                f"| {row.figure} | {row.ours} | {row.raw} | {_value(row)} | {_target(row)} | {met} "
                f"| {before:.1f} → {after:.1f} (`{script}`) |"
            )
    table = "\n".join(lines)
    print("\n" + table)
    (options.out / "table.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
