"""The evaluation corpora: stored tool lists as a real `Catalog`, and the queries.

Two fleets: `servers/` with `queries.json` and `queries_fresh.json` (the set the ranker was built on),
and `outside/servers/` with `outside/queries.json` (other servers, requests written by someone else,
frozen before any tuning on them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from mcpstation.catalog import Catalog, CatalogTool
from mcpstation.connection.listing import ServerListing

HERE = Path(__file__).resolve().parent
SERVERS_DIR = HERE / "servers"
QUERIES_FILE = HERE / "queries.json"
FRESH_FILE = HERE / "queries_fresh.json"
OUTSIDE_DIR = HERE / "outside"
OUTSIDE_SERVERS_DIR = OUTSIDE_DIR / "servers"
OUTSIDE_QUERIES_FILE = OUTSIDE_DIR / "queries.json"
OUTSIDE_FRESH_FILE = OUTSIDE_DIR / "queries_fresh.json"
OUTSIDE_FRESH2_FILE = OUTSIDE_DIR / "queries_fresh2.json"  # issue 25 §6 round: frozen before that tuning


@dataclass(frozen=True)
class Query:
    id: str
    kind: str
    split: str
    query: str
    expected: tuple[str, ...]  # "server/tool" identities, any of which is a correct answer


def load_listings(servers_dir: Path = SERVERS_DIR) -> tuple[list[ServerListing], dict[str, str]]:
    """Every stored server's listing, and its instructions (for the index's server text)."""
    listings: list[ServerListing] = []
    texts: dict[str, str] = {}
    for path in sorted(servers_dir.glob("*.json")):
        record = json.loads(path.read_text())
        tools = tuple(types.Tool.model_validate(t) for t in record["tools"])
        listings.append(ServerListing(server=record["server"], tools=tools))
        texts[record["server"]] = record.get("instructions") or ""
    return listings, texts


def load_catalog(naming: str = "prefix", servers_dir: Path = SERVERS_DIR) -> tuple[list[CatalogTool], dict[str, str]]:
    listings, texts = load_listings(servers_dir)
    catalog = Catalog.build(listings, naming=naming)  # type: ignore[arg-type]
    return list(catalog.tools.values()), texts


def load_queries(*, fresh: bool = True) -> list[Query]:
    rows = json.loads(QUERIES_FILE.read_text())
    if fresh and FRESH_FILE.exists():
        rows += json.loads(FRESH_FILE.read_text())
    return [_query(r) for r in rows]


def load_outside_queries() -> list[Query]:
    """The outside set's requests: split "outside" (frozen before tuning), "fresh" (written after the first
    tuning) and "fresh2" (written before the second, frozen before it ran, never tuned on)."""
    rows = [{**r, "split": "outside"} for r in json.loads(OUTSIDE_QUERIES_FILE.read_text())]
    for split, path in (("fresh", OUTSIDE_FRESH_FILE), ("fresh2", OUTSIDE_FRESH2_FILE)):
        if path.exists():
            rows += [{**r, "split": split} for r in json.loads(path.read_text())]
    return [_query(r) for r in rows]


def _query(row: dict[str, Any]) -> Query:
    return Query(row["id"], row["kind"], row["split"], row["query"], tuple(row["expected"]))
