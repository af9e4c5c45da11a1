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


def timed(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    samples = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    ns = parser.parse_args()
    queries = [q.query for q in load_queries()]
    print(f"| shape | build (median of {ns.repeat}) | one-server rebuild | query p50 | query p95 |")
    print("|---|---:|---:|---:|---:|")
    for label, per_server in ((f"1 server x {ns.tools} tools", ns.tools), (f"{ns.tools // 100} servers x 100", 100)):
        tools = synthetic(ns.tools, per_server)
        build_s, index = timed(lambda tools=tools: ToolIndex.build(tools), ns.repeat)
        assert isinstance(index, ToolIndex) and len(index) == ns.tools
        first = tools[0].server
        mine = [t for t in tools if t.server == first]
        rebuild_s, _ = timed(lambda index=index, first=first, mine=mine: index.with_server(first, mine), ns.repeat)
        samples = []
        for q in queries:
            started = time.perf_counter()
            index.search(q, limit=5)
            samples.append(time.perf_counter() - started)
        samples.sort()
        p50 = samples[len(samples) // 2] * 1000
        p95 = samples[int(len(samples) * 0.95)] * 1000
        rebuild = f"{rebuild_s * 1000:.0f} ms ({len(mine)} tools)"
        print(f"| {label} | {build_s:.2f} s | {rebuild} | {p50:.1f} ms | {p95:.1f} ms |")


if __name__ == "__main__":
    main()
