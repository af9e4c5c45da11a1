"""`LiveIndex`: the tool search index and schema token counts of the live catalog, kept current off
the request path.

The live catalog offers every catalog it builds (`offer`: cheap, nothing is analysed there). `run`,
a task of the station, counts the schema tokens of each new or changed tool in worker threads. The
search index is built once somebody searches (`wait_current`: a station whose models never search
never indexes, and a restart with a large cached catalog answers without indexing it first), and
from then on kept current in a worker thread: only the servers whose tools or words changed are
analysed again (`ToolIndex.with_server`). With embedders (the `search` extra), a second loop embeds the changed
tools one text per worker-thread job and model, and swaps in a hybrid index once it matches the
lexical one; until then search is lexical. Embedding starts once somebody wants it (`want_hybrid`:
the station calls it at a model's first `mcp_search_tools`), so a station whose models never
search never loads a model. Nobody waits for embedding: `search` answers from the newest index
that is complete.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import anyio

from mcpstation.catalog._embed import Embedder, EmbeddingCache, default_embedders
from mcpstation.catalog.catalog import Catalog, CatalogTool
from mcpstation.catalog.search import DEFAULT_LIMIT, SearchHit, ToolIndex
from mcpstation.catalog.tokens import estimate_tool_tokens

logger = logging.getLogger(__name__)

# Work per worker-thread job; a job cannot be cancelled, so these bound how long a shutdown waits for one.
# Tool texts embedded per job. One: the model pads a batch to its longest text, so one at a time costs least
# (16 real tool texts, loaded 2-core machine: 4.9 s of CPU one by one, 9.3 s as one batch), and a job is
# then a fraction of a second.
EMBED_BATCH = 1
TOKEN_BATCH = 500  # tools whose schema tokens are counted per job: about 0.15 s of one core
REBUILD_SHARE = 0.5  # when more than this share of the servers changed, one full build beats one rebuild each

ServerTools = Mapping[str, tuple[CatalogTool, ...]]


@dataclass(frozen=True, slots=True)
class _Indexed:
    """An index and what it was built from: `seq` of the offered catalog, `version` of the tools it holds."""

    index: ToolIndex
    tools: ServerTools
    texts: Mapping[str, str]
    seq: int = 0
    version: int = 0


def _by_server(catalog: Catalog) -> dict[str, tuple[CatalogTool, ...]]:
    grouped: dict[str, list[CatalogTool]] = {}
    for tool in catalog.tools.values():
        grouped.setdefault(tool.server, []).append(tool)
    return {server: tuple(tools) for server, tools in grouped.items()}


def _updated(
    current: _Indexed, tools: ServerTools, texts: Mapping[str, str], build: Callable[..., ToolIndex]
) -> tuple[ToolIndex, list[str]]:
    """`current`'s index brought to `tools` and `texts`, and the servers analysed again for it.

    Only servers whose tools or words changed are analysed; when most did, one full `build` is
    cheaper than a rebuild per server (each one re-sums the term frequencies of all of them).
    """
    changed = [
        s for s, ts in tools.items() if current.tools.get(s) != ts or current.texts.get(s, "") != texts.get(s, "")
    ]
    gone = [s for s in current.tools if s not in tools]
    if not changed and not gone:
        return current.index, []
    if len(changed) + len(gone) > max(1.0, REBUILD_SHARE * len(tools)):
        everything = [tool for server_tools in tools.values() for tool in server_tools]
        return build(everything, server_texts=texts), list(tools)
    index = current.index
    for server in gone:
        index = index.without_server(server)
    for server in changed:
        index = index.with_server(server, tools[server], server_text=texts.get(server, ""))
    return index, changed


class LiveIndex:
    """The search index of the latest offered catalog, and every catalog tool's schema tokens.

    `embedders` makes the embedding models (called once, in a worker thread, after the first
    `want_hybrid`); `None`, or a factory that returns none, keeps search lexical.
    """

    def __init__(self, *, embedders: Callable[[], Sequence[Embedder]] | None = default_embedders) -> None:
        self._make_embedders = embedders
        self._hybrid_wanted = False
        self._embedders: tuple[Embedder, ...] | None = None  # None: not made yet
        self._cache = EmbeddingCache()
        self._lexical = _Indexed(ToolIndex.build(()), {}, {})
        self._hybrid: _Indexed | None = None
        self._offered: tuple[Catalog, Mapping[str, str]] | None = None
        self._offered_seq = 0
        self._tokens: dict[str, tuple[CatalogTool, int]] = {}
        self._counted_seq = 0  # the offered catalog whose tools' tokens are all counted
        self._lexical_wanted = False  # somebody searched: keep the lexical index current from now on
        self._lexical_wake = anyio.Event()
        self._count_wake = anyio.Event()
        self._embed_wake = anyio.Event()
        self._progress = anyio.Event()
        self._count_progress = anyio.Event()
        self._hybrid_progress = anyio.Event()
        self._running = False

    # -- what readers see -------------------------------------------------------------------------

    @property
    def is_current(self) -> bool:
        """Whether the lexical index holds the latest offered catalog."""
        return self._lexical.seq >= self._offered_seq

    @property
    def hybrid(self) -> bool:
        """Whether searches are answered by the hybrid (lexical and embedding) index now."""
        return self._answering().index.hybrid

    def __len__(self) -> int:
        return len(self._lexical.index)

    def search(
        self,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        server: str | None = None,
        allowed: Callable[[CatalogTool], bool] | None = None,
    ) -> list[SearchHit]:
        """`ToolIndex.search` on the newest complete index (blocking CPU: call it in a worker thread).

        Hits are entries of the catalog the index was built from: check them against the current one.
        """
        return self._answering().index.search(query, limit=limit, server=server, allowed=allowed)

    def _answering(self) -> _Indexed:
        hybrid, lexical = self._hybrid, self._lexical
        return hybrid if hybrid is not None and hybrid.version == lexical.version else lexical

    def tokens_of(self, tool: CatalogTool) -> int:
        """Estimated schema tokens of `tool`: counted by the counting pass, else now (and kept)."""
        known = self._tokens.get(tool.name)
        if known is not None and known[0] == tool:
            return known[1]
        return self._count(tool)

    def tokens_by_server(self, tools: Iterable[CatalogTool]) -> dict[str, int]:
        """Estimated schema tokens per server, servers in first-seen order."""
        totals: dict[str, int] = {}
        for tool in tools:
            totals[tool.server] = totals.get(tool.server, 0) + self.tokens_of(tool)
        return totals

    def _count(self, tool: CatalogTool) -> int:
        count = estimate_tool_tokens(tool)
        self._tokens[tool.name] = (tool, count)
        return count

    # -- keeping it current -----------------------------------------------------------------------

    def offer(self, catalog: Catalog, server_texts: Mapping[str, str]) -> None:
        """A newer catalog to index; `server_texts` are each server's own words (title, instructions)."""
        self._offered = (catalog, dict(server_texts))
        self._offered_seq += 1
        self._count_wake.set()
        if self._lexical_wanted:
            self._lexical_wake.set()

    def want_hybrid(self) -> None:
        """Start embedding the catalog (once; in the background) so that searches become hybrid."""
        if not self._hybrid_wanted:
            self._hybrid_wanted = True
            self._embed_wake.set()

    async def wait_current(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until the index holds the latest offered catalog; True if it does.

        The first call starts the indexing (a search wants it); without `run` going (an index
        nobody keeps), it is brought up to date here and now.
        """
        if not self._lexical_wanted:
            self._lexical_wanted = True
            self._lexical_wake.set()
        if not self._running:
            self._catch_up_inline()
            return True
        with anyio.move_on_after(timeout_s):
            while not self.is_current:
                await self._progress.wait()
        return self.is_current

    async def wait_counted(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until the tokens of every tool of the latest offered catalog are
        counted (`tokens_of` answers from the counts); True if they are. Builds no search index."""
        if not self._running:
            self._count_inline()
            return True
        with anyio.move_on_after(timeout_s):
            while self._counted_seq < self._offered_seq:
                await self._count_progress.wait()
        return self._counted_seq >= self._offered_seq

    async def wait_hybrid(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until searches are hybrid for the latest offered catalog; True if they are."""
        with anyio.move_on_after(timeout_s):
            while not (self.is_current and self.hybrid):
                await (self._progress if not self.is_current else self._hybrid_progress).wait()
        return self.is_current and self.hybrid

    async def run(self) -> None:
        """Keep the index current: the lexical loop, and the embedding loop beside it. Runs until cancelled."""
        self._running = True
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._embed_loop, name="mcpstation tool search embeddings")
                group.start_soon(self._count_loop, name="mcpstation schema token counts")
                await self._lexical_loop()
        finally:
            self._running = False

    async def _lexical_loop(self) -> None:
        while True:
            await self._lexical_wake.wait()
            self._lexical_wake = anyio.Event()
            if self._offered is not None and not self.is_current:
                seq, (catalog, texts) = self._offered_seq, self._offered
                self._lexical = await self._advance(self._lexical, catalog, texts, seq)
                self._progress.set()
                self._progress = anyio.Event()
                self._embed_wake.set()

    async def _advance(self, current: _Indexed, catalog: Catalog, texts: Mapping[str, str], seq: int) -> _Indexed:
        """The lexical index of `catalog` (worker threads)."""
        tools = await anyio.to_thread.run_sync(_by_server, catalog)
        index, _ = await anyio.to_thread.run_sync(_updated, current, tools, texts, ToolIndex.build)
        version = current.version + 1 if index is not current.index else current.version
        return _Indexed(index, tools, {s: texts.get(s, "") for s in tools}, seq, version)

    async def _count_loop(self) -> None:
        """Count the tokens of each offered catalog's new or changed tools, a batch per worker-thread job."""
        while True:
            await self._count_wake.wait()
            self._count_wake = anyio.Event()
            if self._offered is None or self._counted_seq >= self._offered_seq:
                continue
            seq, (catalog, _) = self._offered_seq, self._offered
            uncounted = await anyio.to_thread.run_sync(self._uncounted, catalog)
            for start in range(0, len(uncounted), TOKEN_BATCH):
                await anyio.to_thread.run_sync(self._count_all, uncounted[start : start + TOKEN_BATCH])
            self._forget_tokens(catalog)
            self._counted_seq = seq
            self._count_progress.set()
            self._count_progress = anyio.Event()

    def _uncounted(self, catalog: Catalog) -> list[CatalogTool]:
        known = self._tokens
        return [tool for name, tool in catalog.tools.items() if (count := known.get(name)) is None or count[0] != tool]

    def _count_all(self, tools: Iterable[CatalogTool]) -> None:
        for tool in tools:
            self.tokens_of(tool)

    def _forget_tokens(self, catalog: Catalog) -> None:
        """Drop the counts of tools no longer in the catalog."""
        names = catalog.tools
        for name in [name for name in self._tokens if name not in names]:
            del self._tokens[name]

    def _count_inline(self) -> None:
        if self._offered is None or self._counted_seq >= self._offered_seq:
            return
        seq, (catalog, _) = self._offered_seq, self._offered
        self._count_all(self._uncounted(catalog))
        self._forget_tokens(catalog)
        self._counted_seq = seq

    async def _embed_loop(self) -> None:
        if self._make_embedders is None:
            return
        while True:
            await self._embed_wake.wait()
            self._embed_wake = anyio.Event()
            if not self._hybrid_wanted:
                continue
            if self._embedders is None:
                self._embedders = tuple(await anyio.to_thread.run_sync(self._make_embedders))
                if not self._embedders:
                    logger.debug("tool search is lexical: no embedding model (the 'search' extra) is installed")
                    return
                self._hybrid = _Indexed(ToolIndex.build((), embedders=self._embedders, cache=self._cache), {}, {})
            await self._embed_up_to(self._lexical, self._embedders)

    async def _embed_up_to(self, target: _Indexed, embedders: tuple[Embedder, ...]) -> None:
        """Embed what `target` holds and the hybrid index lacks, in batches, then swap in the hybrid index."""
        hybrid = self._hybrid
        assert hybrid is not None
        if hybrid.version == target.version:
            return
        for embedder in embedders:
            missing = await anyio.to_thread.run_sync(self._unembedded, hybrid, target, embedder)
            for start in range(0, len(missing), EMBED_BATCH):
                await anyio.to_thread.run_sync(self._embed, embedder, missing[start : start + EMBED_BATCH])
        build = functools.partial(ToolIndex.build, embedders=embedders, cache=self._cache)
        index, _ = await anyio.to_thread.run_sync(_updated, hybrid, target.tools, target.texts, build)
        self._hybrid = replace(target, index=index)  # every passage was cached: that was analysis only
        self._hybrid_progress.set()
        self._hybrid_progress = anyio.Event()
        logger.debug("tool search is hybrid for %d tools", len(index))

    def _unembedded(self, hybrid: _Indexed, target: _Indexed, embedder: Embedder) -> list[str]:
        """The texts of `target`'s tools that differ from `hybrid`'s and have no cached vector of `embedder`."""
        passages = [
            embedder.passage_text(tool)
            for server, tools in target.tools.items()
            if hybrid.tools.get(server) != tools
            for tool in tools
        ]
        return [p for p in passages if self._cache.get(EmbeddingCache.key(embedder.model_id, p)) is None]

    def _embed(self, embedder: Embedder, passages: list[str]) -> None:
        vectors = embedder.embed_passages(passages)
        for passage, vector in zip(passages, vectors, strict=True):
            self._cache.put(EmbeddingCache.key(embedder.model_id, passage), vector)

    def _catch_up_inline(self) -> None:
        if self._offered is None or self.is_current:
            return
        seq, (catalog, texts) = self._offered_seq, self._offered
        tools = _by_server(catalog)
        index, _ = _updated(self._lexical, tools, texts, ToolIndex.build)
        self._count_inline()
        version = self._lexical.version + (1 if index is not self._lexical.index else 0)
        self._lexical = _Indexed(index, tools, {s: texts.get(s, "") for s in tools}, seq, version)
