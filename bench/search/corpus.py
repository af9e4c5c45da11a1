"""The evaluation corpus: stored tool lists as a real `Catalog`, and the queries."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import mcp_types as types

from mcpstation.catalog import Catalog, CatalogTool
from mcpstation.connection.listing import ServerListing

HERE = Path(__file__).resolve().parent
SERVERS_DIR = HERE / "servers"
QUERIES_FILE = HERE / "queries.json"
FRESH_FILE = HERE / "queries_fresh.json"


@dataclass(frozen=True)
class Query:
    id: str
    kind: str
    split: str
    query: str
    expected: tuple[str, ...]  # "server/tool" identities, any of which is a correct answer


def load_listings() -> tuple[list[ServerListing], dict[str, str]]:
    """Every stored server's listing, and its instructions (for the index's server text)."""
    listings: list[ServerListing] = []
    texts: dict[str, str] = {}
    for path in sorted(SERVERS_DIR.glob("*.json")):
        record = json.loads(path.read_text())
        tools = tuple(types.Tool.model_validate(t) for t in record["tools"])
        listings.append(ServerListing(server=record["server"], tools=tools))
        texts[record["server"]] = record.get("instructions") or ""
    return listings, texts


def load_catalog(naming: str = "prefix") -> tuple[list[CatalogTool], dict[str, str]]:
    listings, texts = load_listings()
    catalog = Catalog.build(listings, naming=naming)  # type: ignore[arg-type]
    return list(catalog.tools.values()), texts


def load_queries(*, fresh: bool = True) -> list[Query]:
    rows = json.loads(QUERIES_FILE.read_text())
    if fresh and FRESH_FILE.exists():
        rows += json.loads(FRESH_FILE.read_text())
    return [Query(r["id"], r["kind"], r["split"], r["query"], tuple(r["expected"])) for r in rows]
