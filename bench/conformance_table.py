"""The conformance table: the official server suite against public servers, directly and through
`mcpstation gateway`, as a new user would run them (issue 24 §2).

    .venv/bin/python bench/conformance_table.py [--out docs/conformance.md]

For each server: the suite (`@modelcontextprotocol/conformance server --suite all`) runs against
the server's own streamable HTTP endpoint (direct), then against `python -m mcpstation gateway`
(bare naming, streamable HTTP) fronting the same server over stdio. The table lists every check
whose status differs between the two, and the totals. Needs `npm ci` (Node and the packages).

Servers: server-everything (npm, TypeScript; from package.json), our own conformance server for
reference, and with `--context7 DIR` Upstash's Context7 server (npm, TypeScript), installed apart
from the project: `npm install --prefix DIR @upstash/context7-mcp@4.1.1`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

from _node import everything_http_command, everything_stdio_command, missing_reason, node_bin_dir

REPO = Path(__file__).resolve().parent.parent
NODE_MODULES = REPO / "node_modules"
HARNESS = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SUITE_TIMEOUT_S = 600.0
READY_TIMEOUT_S = 120.0
_RUN_DIR = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")

Checks = dict[tuple[str, str], str]
CONFORMANCE_SERVER = [sys.executable, "-m", "mcpstation.testing.conformance_server"]


@dataclass(frozen=True)
class Subject:
    """A server: how to serve it over HTTP (direct) and how to start it over stdio (behind the gateway)."""

    name: str
    key: str  # its name in the gateway's config
    http: list[str]  # argv; `{port}` is replaced
    http_env: dict[str, str]
    stdio: list[str]
    stdio_env: dict[str, str]
    protocol: str = "auto"


def node_dir() -> Path:
    found = node_bin_dir()
    if found is None:
        sys.exit(f"no node: {missing_reason()}")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server exited with {process.returncode} before listening on {port}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    sys.exit(f"nothing listened on {port} within {READY_TIMEOUT_S} s")


def run_suite(url: str, output: Path) -> Checks:
    node = node_dir() / "node"
    subprocess.run(
        [str(node), str(HARNESS), "server", "--url", url, "--suite", "all", "-o", str(output)],
        capture_output=True,
        timeout=SUITE_TIMEOUT_S,
        check=False,
    )
    checks: Checks = {}
    for run in sorted(output.iterdir()):
        scenario = _RUN_DIR.sub("", run.name.removeprefix("server-"))
        results = run / "checks.json"
        if not results.is_file():
            checks[(scenario, "<no checks>")] = "FAILURE"
            continue
        for check in json.loads(results.read_text()):
            key = (scenario, check["id"])
            if checks.get(key) in ("FAILURE", "WARNING"):
                continue  # a check id repeated within a scenario: keep the worst
            checks[key] = check["status"]
    return checks


def direct(subject: Subject, work: Path) -> Checks:
    port = free_port()
    argv = [part.replace("{port}", str(port)) for part in subject.http]
    env = {**os.environ, **{k: v.replace("{port}", str(port)) for k, v in subject.http_env.items()}}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        return run_suite(f"http://127.0.0.1:{port}/mcp", work / f"{subject.key}-direct")
    finally:
        process.terminate()
        process.wait(timeout=30)


def through_gateway(subject: Subject, work: Path) -> Checks:
    config = work / f"{subject.key}.toml"
    lines = ["[station]", 'naming = "bare"', "", f"[servers.{subject.key}]"]
    lines += [f"command = {json.dumps(subject.stdio[0])}", f"args = {json.dumps(subject.stdio[1:])}"]
    lines += [f"protocol = {json.dumps(subject.protocol)}"]
    if subject.stdio_env:
        lines.append(f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in subject.stdio_env.items())} }}")
    config.write_text("\n".join(lines) + "\n")
    port = free_port()
    env = {**os.environ, "MCPSTATION_DATA_DIR": str(work / f"{subject.key}-data")}
    env.pop("MCPSTATION_CONFIG", None)
    env.pop("MCPSTATION_DB_URL", None)
    argv = [sys.executable, "-m", "mcpstation", "gateway", "--port", str(port), "--config", str(config)]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        time.sleep(5.0)  # the gateway serves at once and starts its server in the background
        return run_suite(f"http://127.0.0.1:{port}/mcp", work / f"{subject.key}-gateway")
    finally:
        process.terminate()
        process.wait(timeout=60)


CONTEXT7 = "@upstash/context7-mcp@4.1.1"  # TypeScript, npm; with --context7 DIR (see the module's docstring)


def context7(root: Path) -> Subject:
    """Upstash's Context7 server from `root/node_modules` (`npm install --prefix DIR ...`)."""
    entry = root / "node_modules" / "@upstash" / "context7-mcp" / "dist" / "index.js"
    if not entry.is_file():
        sys.exit(f"{entry} is missing: npm install --prefix {root} {CONTEXT7}")
    node = str(node_dir() / "node")
    return Subject(
        f"Context7 ({CONTEXT7}, TypeScript)",
        "context7",
        http=[node, str(entry), "--transport", "http", "--port", "{port}"],
        http_env={},
        stdio=[node, str(entry)],
        stdio_env={},
    )


def subjects(context7_root: Path | None) -> list[Subject]:
    stdio, http = everything_stdio_command(), everything_http_command(0)  # PORT is set per run below
    if stdio is None or http is None:
        sys.exit(f"server-everything cannot start: {missing_reason()}")
    extra = [context7(context7_root)] if context7_root is not None else []
    return [
        *extra,
        Subject(
            "server-everything",
            "everything",
            http=[http[0], *http[1]],
            http_env={**http[2], "PORT": "{port}"},
            stdio=[stdio[0], *stdio[1]],
            stdio_env=stdio[2],
        ),
        Subject(
            "mcpstation conformance server (ours, for reference)",
            "conformance",
            http=[*CONFORMANCE_SERVER, "--transport", "http", "--port", "{port}"],
            http_env={},
            stdio=CONFORMANCE_SERVER,
            stdio_env={},
            protocol="legacy",
        ),
    ]


def table(name: str, direct_checks: Checks, gateway_checks: Checks) -> list[str]:
    keys = sorted(set(direct_checks) | set(gateway_checks))
    passed_d = sum(1 for k in keys if direct_checks.get(k) == "SUCCESS")
    passed_g = sum(1 for k in keys if gateway_checks.get(k) == "SUCCESS")
    lost = [k for k in keys if direct_checks.get(k) == "SUCCESS" and gateway_checks.get(k) != "SUCCESS"]
    lines = [
        f"### {name}",
        "",
        f"Checks passed: direct {passed_d}, through the gateway {passed_g}, of {len(keys)};"
        f" passing directly but not through the gateway: {len(lost)}.",
        f"Statuses direct: {dict(Counter(direct_checks.values()))}; gateway: {dict(Counter(gateway_checks.values()))}.",
        "",
        "| scenario | check | direct | gateway |",
        "|---|---|---|---|",
    ]
    differing = [k for k in keys if direct_checks.get(k) != gateway_checks.get(k)]
    for scenario, check in differing:
        d, g = direct_checks.get((scenario, check), "-"), gateway_checks.get((scenario, check), "-")
        lines.append(f"| {scenario} | {check} | {d} | {g} |")
    if not differing:
        lines.append("| (every check has the same status both ways) | | | |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the tables (markdown) here; else print them")
    parser.add_argument("--only", help="run only the subject whose name starts with this")
    parser.add_argument("--context7", type=Path, help=f"a folder where `npm install --prefix` put {CONTEXT7}")
    args = parser.parse_args()
    if not HARNESS.is_file():
        sys.exit("@modelcontextprotocol/conformance is not installed: run `npm ci`")
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mcps-conformance-") as tmp:
        work = Path(tmp)
        for subject in subjects(args.context7):
            if args.only and not subject.name.startswith(args.only):
                continue
            print(f"{subject.name}: direct ...", file=sys.stderr, flush=True)
            d = direct(subject, work)
            print(f"{subject.name}: through the gateway ...", file=sys.stderr, flush=True)
            g = through_gateway(subject, work)
            lines += table(subject.name, d, g)
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
