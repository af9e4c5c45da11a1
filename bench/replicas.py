"""Load through HAProxy onto `mcpstation up` replicas sharing one PostgreSQL, one replica killed mid-run.

    python bench/replicas.py [--replicas 3] [--calls 3000] [--clients 32] [--kill] [--out FILE]
    python bench/replicas.py --replicas 1 --calls 3000 --clients 32          # the baseline, for the ratio

Not a test: a measurement, on loopback only, bounded in count and time. It creates a database of its
own (dropped afterwards) on `$MCPSTATION_TEST_PG_URL` (default `postgresql+asyncpg://root@127.0.0.1:5432/test`),
starts N replicas (each runs its own stdio tiny server), HAProxy in front (the config the replica test
uses, `tests/store/haproxy.cfg`), and sends `--calls` modern-era (2026-07-28) gateway `tools/call`s from
`--clients` concurrent MCP clients through the balancer. With `--kill`, replica 2 is SIGKILLed when 40 %
of the calls are done and started again on its port. It reports calls/s, p50/p99, each failed call's
error, and the audit rows of the run against the calls that succeeded (stations are stopped with
SIGTERM first, so each writes its last audit records): `audit_missing` answers with no row,
`audit_unanswered` rows of calls whose answer never arrived.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx2
from anyio.abc import Process
from harness import BENCH_DIR, median, percentile
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy.engine import make_url

from mcpstation.store import Store

PY = sys.executable
TINY_SERVER = BENCH_DIR / "servers" / "tiny_server.py"
HAPROXY_TEMPLATE = BENCH_DIR.parent / "tests" / "store" / "haproxy.cfg"
PG_URL = os.environ.get("MCPSTATION_TEST_PG_URL", "postgresql+asyncpg://root@127.0.0.1:5432/test")
HOST = "127.0.0.1"
START_TIMEOUT_S = 120.0  # one replica up (its tiny server included) on a loaded machine
ROTATION_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 30.0  # one call; past it the call counts as failed
RUN_TIMEOUT_S = 900.0
RESTART_DELAY_S = 2.0  # how long the killed replica stays down
KILL_AT = 0.4  # fraction of the calls done when the replica is killed
STOP_TIMEOUT_S = 60.0
MAX_CONNECT_FAILURES = 200  # over the whole run: past it the setup is broken, not one replica


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    name = f"mcps_bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(dsn(PG_URL))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@dataclass
class Replica:
    index: int
    port: int
    home: Path
    process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


async def start(replica: Replica, db_url: str, config: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPSTATION_")}
    env |= {"MCPSTATION_DATA_DIR": str(replica.home), "MCPSTATION_REPLICA_ID": f"replica-{replica.index}"}
    command = [PY, "-m", "mcpstation", "--db-url", db_url, "--config", str(config), "up", "--port", str(replica.port)]
    command += ["--public-health", "--allow-host", "balancer:*"]
    log = (replica.home / "up.log").open("ab")
    replica.process = await anyio.open_process(command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    async with httpx2.AsyncClient(timeout=5) as http:
        with anyio.fail_after(START_TIMEOUT_S):
            while True:
                try:
                    if (await http.get(f"{replica.url}/api/health")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.1)


async def stop(replica: Replica, *, kill: bool = False) -> None:
    process = replica.process
    if process is None or process.returncode is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    with anyio.move_on_after(STOP_TIMEOUT_S):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


@dataclass
class Results:
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    started: int = 0
    connect_failures: int = 0


def describe(exc: BaseException) -> str:
    """The innermost error, for a person: task groups wrap what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:200]


async def client_loop(url: str, token: str, total: int, results: Results, killed: anyio.Event, kill_after: int) -> None:
    headers = {"Authorization": f"Bearer {token}", "Host": "balancer"}
    while results.started < total:
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_S) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    while results.started < total:
                        number = results.started
                        results.started += 1
                        if number == kill_after:
                            killed.set()
                        began = time.perf_counter()
                        try:
                            with anyio.fail_after(CALL_TIMEOUT_S):
                                result = await client.call_tool("mcp_tiny_add", {"a": number, "b": 1})
                        except Exception as exc:  # boundary: a failed call is data here
                            results.failures.append(f"call: {describe(exc)}")
                            break  # a new client: its connection may be the broken one
                        if result.is_error or result.content[0].text != str(number + 1):
                            results.failures.append(f"tool error: {result.content[0].text[:200]}")
                        else:
                            results.latencies.append(time.perf_counter() - began)
        except Exception as exc:  # boundary: the client could not even connect
            results.failures.append(f"connect: {describe(exc)}")
            results.connect_failures += 1
            if results.connect_failures > MAX_CONNECT_FAILURES:
                raise RuntimeError(f"gave up: {results.connect_failures} failed connects; last: {exc!r}") from exc
            await anyio.sleep(0.1)


async def run(replica_count: int, calls: int, clients: int, kill: bool) -> dict[str, Any]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise SystemExit("HAProxy is not installed (Debian: apt-get install haproxy)")
    work = Path(tempfile.mkdtemp(prefix="mcps-replicas-"))
    config = work / "mcpstation.toml"
    config.write_text(
        "[station]\nserver_startup_timeout_s = 60\nstartup_timeout_s = 90\n"
        f"[servers.tiny]\ncommand = {json.dumps(PY)}\nargs = [{json.dumps(str(TINY_SERVER))}]\n"
    )
    async with fresh_database() as db_url:
        async with await Store.open(db_url, replica_id="bench") as store:
            token, _ = await store.create_token("bench", "admin", actor="bench")
        replicas = [Replica(index, free_port(), work / f"replica-{index}") for index in range(1, replica_count + 1)]
        for replica in replicas:
            replica.home.mkdir()
        lb_port = free_port()
        servers = "\n".join(f"    server r{r.index} {HOST}:{r.port} check inter 250ms fall 2 rise 1" for r in replicas)
        text = HAPROXY_TEMPLATE.read_text().format(bind=f"{HOST}:{lb_port}", host="balancer", servers=servers)
        (work / "haproxy.cfg").write_text(text)
        balancer: Process | None = None
        try:
            async with anyio.create_task_group() as group:
                for replica in replicas:
                    group.start_soon(start, replica, db_url, config)
            lb_log = (work / "haproxy.log").open("wb")
            balancer = await anyio.open_process([haproxy, "-db", "-f", str(work / "haproxy.cfg")], stdout=lb_log,
                                                stderr=lb_log)  # fmt: skip
            await in_rotation(lb_port, replica_count)
            results = Results()
            killed = anyio.Event()
            url = f"http://{HOST}:{lb_port}/mcp"
            kill_after = int(calls * KILL_AT) if kill else -1
            began = time.perf_counter()
            with anyio.fail_after(RUN_TIMEOUT_S):
                async with anyio.create_task_group() as group:
                    for _ in range(clients):
                        group.start_soon(client_loop, url, token, calls, results, killed, kill_after)
                    if kill and replica_count > 1:
                        group.start_soon(kill_and_restart, replicas[1], db_url, config, killed)
            elapsed = time.perf_counter() - began
        finally:
            for replica in replicas:
                await stop(replica)
            if balancer is not None:
                balancer.terminate()
                await balancer.wait()
        async with await Store.open(db_url, replica_id="bench") as store:
            async with store.engine.connect() as connection:
                from sqlalchemy import func, select

                from mcpstation.store._schema import call_audit

                rows = (
                    await connection.execute(
                        select(call_audit.c.outcome, func.count()).where(call_audit.c.server == "tiny")
                        .group_by(call_audit.c.outcome)
                    )
                ).all()  # fmt: skip
    audit = {str(outcome): int(count) for outcome, count in rows}
    ok = len(results.latencies)
    return {
        "replicas": replica_count,
        "calls": calls,
        "clients": clients,
        "killed_replica": kill and replica_count > 1,
        "succeeded": ok,
        "failed": len(results.failures),
        "failures": dict(Counter(results.failures).most_common(10)),
        "calls_per_s": round(ok / elapsed, 1),
        "p50_ms": round(median(results.latencies) * 1000, 2),
        "p99_ms": round(percentile(results.latencies, 99) * 1000, 2),
        "wall_s": round(elapsed, 2),
        "audit_rows": audit,
        "audit_ok_equals_succeeded": audit.get("ok", 0) == ok,
        # Answered calls with no `ok` row; and `ok` rows beyond the answers: calls a killed replica
        # ran and audited whose answer died with it (at most the calls that failed in flight).
        "audit_missing": max(0, ok - audit.get("ok", 0)),
        "audit_unanswered": max(0, audit.get("ok", 0) - ok),
    }


async def in_rotation(lb_port: int, replica_count: int) -> None:
    seen: set[str] = set()
    async with httpx2.AsyncClient(timeout=5, headers={"Host": "balancer"}) as http:
        with anyio.fail_after(ROTATION_TIMEOUT_S):
            while len(seen) < replica_count:
                try:
                    answer = await http.get(f"http://{HOST}:{lb_port}/api/health")
                except httpx2.TransportError:
                    answer = None  # HAProxy is not listening yet
                if answer is not None and answer.status_code == 200:
                    seen.add(answer.json()["replica"]["id"])
                await anyio.sleep(0.05)


async def kill_and_restart(replica: Replica, db_url: str, config: Path, killed: anyio.Event) -> None:
    await killed.wait()
    await stop(replica, kill=True)
    print(f"killed replica {replica.index}", file=sys.stderr)
    await anyio.sleep(RESTART_DELAY_S)
    await start(replica, db_url, config)
    print(f"replica {replica.index} back", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--kill", action="store_true", help="SIGKILL replica 2 mid-run, then start it again")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    report = anyio.run(run, args.replicas, args.calls, args.clients, args.kill)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
