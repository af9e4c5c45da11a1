"""Tool search cost on both stored fleets at once (own + outside): index build and time per request.

    .venv/bin/python bench/search/timing.py            # lexical, and hybrid if the `search` extra is installed

Each model's build is cold (every tool embedded, one batch per server), timed alone;
the hybrid index is then built from their cached vectors.
Per request: wall and CPU time of `ToolIndex.search(query, limit=10)`, over every stored request once.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import OUTSIDE_SERVERS_DIR, SERVERS_DIR, load_listings, load_outside_queries, load_queries

from mcpstation.catalog import Catalog, CatalogTool, EmbeddingCache, default_embedders
from mcpstation.catalog.search import ToolIndex

T = TypeVar("T")


def timed(work: Callable[[], T]) -> tuple[T, float, float]:
    """`work()`, its wall time and its CPU time (this process), in seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def fleet() -> tuple[list[CatalogTool], dict[str, str]]:
    listings, texts = load_listings(SERVERS_DIR)
    outside, outside_texts = load_listings(OUTSIDE_SERVERS_DIR)
    catalog = Catalog.build([*listings, *outside], naming="prefix")
    return list(catalog.tools.values()), {**texts, **outside_texts}


def per_request(index: ToolIndex, queries: list[str]) -> str:
    walls, cpus = [], []
    for query in queries:
        _, wall, cpu = timed(lambda q=query: index.search(q, limit=10))
        walls.append(wall * 1000)
        cpus.append(cpu * 1000)
    p95 = statistics.quantiles(walls, n=20)[-1]
    return f"wall p50 {statistics.median(walls):.1f} ms, p95 {p95:.1f} ms; CPU mean {statistics.mean(cpus):.1f} ms"


def main() -> None:
    tools, texts = fleet()
    queries = [q.query for q in [*load_queries(), *load_outside_queries()]]
    print(f"{len(tools)} tools, {len(queries)} requests")
    index, wall, cpu = timed(lambda: ToolIndex.build(tools, server_texts=texts))
    print(f"lexical: build {wall:.2f} s wall / {cpu:.2f} s CPU; per request {per_request(index, queries)}")
    embedders, wall, cpu = timed(default_embedders)
    if not embedders:
        print("hybrid skipped: no embedding model is installed (pip install -e '.[search]')")
        return
    print(f"models loaded in {wall:.2f} s wall / {cpu:.2f} s CPU: {', '.join(e.model_id for e in embedders)}")
    cache = EmbeddingCache()
    for embedder in embedders:
        alone, wall, cpu = timed(
            lambda e=embedder: ToolIndex.build(tools, server_texts=texts, embedders=[e], cache=cache)
        )
        cost = f"cold build {wall:.1f} s wall / {cpu:.1f} s CPU"
        print(f"  {embedder.model_id}: {cost}; per request {per_request(alone, queries)}")
    index = ToolIndex.build(tools, server_texts=texts, embedders=embedders, cache=cache)
    print(f"hybrid (both models): per request {per_request(index, queries)}")


if __name__ == "__main__":
    main()
