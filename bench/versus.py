"""The call path before and after a change, side by side in one interleaved run.

    .venv/bin/python bench/versus.py                 # BEFORE = the first round's last commit
    .venv/bin/python bench/versus.py --before REV --rounds 7 --json out.json
    .venv/bin/python bench/versus.py --before REV --store    # with a SQLite store: the audit layer on the path

Exports `src/` of BEFORE (`git archive`) into a temporary directory, then runs
`call_path_probe.py` in a fresh interpreter per side and round, the two sides taking turns (the
order rotated each round) so drift on a shared machine hits both alike. AFTER is this working
tree. Both sides import the same installed dependencies and call the same tiny stdio server.
Prints the medians of each figure and the after/before ratio.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
PROBE = BENCH_DIR / "call_path_probe.py"
ROUND_ONE = "9900c9f"  # the last commit of the first round, before the request pipeline
FIGURES = ("p50_us", "p99_us", "cpu_us_per_call", "calls_per_s")


def export_src(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_probe(src: Path, sizes: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, str(PROBE), *sizes], env=env, check=True, capture_output=True, text=True, timeout=600
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=ROUND_ONE, help="the git revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer calls per round")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    parser.add_argument("--store", action="store_true", help="give each station a SQLite store (audit on)")
    args = parser.parse_args()
    sizes = ["50", "500", "1000", "64"] if args.quick else ["200", "2000", "3000", "64"]
    if args.store:
        sizes.append("store")
    with tempfile.TemporaryDirectory(prefix="mcpstation-before-") as tmp:
        sides = {"before": export_src(args.before, Path(tmp)), "after": REPO / "src"}
        rounds: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        order = list(sides)
        for round_no in range(args.rounds):
            for side in order[round_no % 2 :] + order[: round_no % 2]:
                rounds[side].append(run_probe(sides[side], sizes))
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr)
    medians = {side: {f: statistics.median(r[f] for r in runs) for f in FIGURES} for side, runs in rounds.items()}
    print(f"{'figure':<18}{'before':>12}{'after':>12}{'after/before':>14}")
    for figure in FIGURES:
        before, after = medians["before"][figure], medians["after"][figure]
        print(f"{figure:<18}{before:>12.1f}{after:>12.1f}{after / before:>14.2f}")
    spread = {
        side: max(statistics.pstdev(r[f] for r in runs) / medians[side][f] for f in FIGURES)
        for side, runs in rounds.items()
    }
    print(f"noise: the largest relative spread across rounds was {max(spread.values()):.0%}")
    if args.json:
        payload = {"before": args.before, "sizes": sizes, "rounds": rounds, "medians": medians, "spread": spread}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
