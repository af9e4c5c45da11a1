"""Tool search at scale: index build, one-server rebuild and query time for 10,000 tools.

    .venv/bin/python bench/search/scale.py [--tools 10000] [--repeat 5]

The 190 real tools of servers/ are copied onto as many servers as it takes (`github-7`, ...),
each copy's description given a few words of its own so that the index is not one tool repeated.
Two shapes: one server with every tool (a 10,000-tool server) and 100-tool servers. Lexical only:
the embedding model's cost is per new tool text and reported by evaluate.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import load_catalog, load_queries

from mcpstation.catalog import CatalogTool
from mcpstation.catalog.search import ToolIndex

FILLER = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def synthetic(n: int, per_server: int) -> list[CatalogTool]:
    base, _ = load_catalog()
    out: list[CatalogTool] = []
    for i in range(n):
        tool = base[i % len(base)]
        copy = i // len(base)
        server = f"{tool.server}-{i // per_server}" if per_server < n else "huge"
        words = f"{FILLER[copy % len(FILLER)]} {FILLER[(copy // len(FILLER)) % len(FILLER)]} v{copy}"
        out.append(
            dataclasses.replace(
                tool, name=f"{server}_{tool.tool}_{copy}", server=server, description=f"{tool.description} {words}"
            )
        )
    return out


def timed(fn, repeat: int) -> tuple[float, float, object]:  # type: ignore[no-untyped-def]
    """Median wall and median CPU seconds of `fn` over `repeat` runs, and its last result."""
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    ns = parser.parse_args()
    queries = [q.query for q in load_queries()]
    load = os.getloadavg()[0]
    print(f"wall and CPU time, median of {ns.repeat}; machine load average {load:.1f} on {os.cpu_count()} cores")
    print()
    print(
        "| shape | build wall | build CPU | one-server rebuild wall / CPU | query p50 wall | query p95 wall "
        "| query CPU mean |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, per_server in ((f"1 server x {ns.tools} tools", ns.tools), (f"{ns.tools // 100} servers x 100", 100)):
        tools = synthetic(ns.tools, per_server)
        build_s, build_cpu, index = timed(lambda tools=tools: ToolIndex.build(tools), ns.repeat)
        assert isinstance(index, ToolIndex) and len(index) == ns.tools
        first = tools[0].server
        mine = [t for t in tools if t.server == first]
        rebuild_s, rebuild_cpu, _ = timed(
            lambda index=index, first=first, mine=mine: index.with_server(first, mine), ns.repeat
        )
        samples = []
        cpu = time.process_time()
        for q in queries:
            started = time.perf_counter()
            index.search(q, limit=5)
            samples.append(time.perf_counter() - started)
        query_cpu = (time.process_time() - cpu) / len(queries) * 1000
        samples.sort()
        p50 = samples[len(samples) // 2] * 1000
        p95 = samples[int(len(samples) * 0.95)] * 1000
        rebuild = f"{rebuild_s * 1000:.0f} / {rebuild_cpu * 1000:.0f} ms ({len(mine)} tools)"
        print(
            f"| {label} | {build_s:.2f} s | {build_cpu:.2f} s | {rebuild} | {p50:.1f} ms | {p95:.1f} ms "
            f"| {query_cpu:.1f} ms |"
        )


if __name__ == "__main__":
    main()
