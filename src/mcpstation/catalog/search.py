"""Tool search: the best tools of a catalog for a request in words, English or Chinese.

`ToolIndex.build(tools)` indexes catalog tools with BM25F over six fields of each tool: its name
(split on case, digits and separators), its server's name, its description, its parameter names,
its parameter descriptions and the words of its title that the name lacks; a server's own text
(its instructions, length-normalised) adds a smaller bonus to that server's matching tools.
Requests get synonyms and, in Chinese, a glossary translation (`_text.py`). With embedders (the
`search` extra: two small multilingual models that ship in their wheels and run offline), the
lexical ranking and each model's ranking are blended; without them, search is lexical.

An index is immutable and built per server: `with_server` re-analyses one server's tools and
reuses the rest, so a listing change costs that server's tools, not the catalog's. The word
tables (`_text.py`: stems, synonyms, the glossary) load when the first tool or request is analysed,
so a station whose models never search never builds them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcpstation.catalog._embed import Embedder, EmbeddingCache, SemanticShard
from mcpstation.catalog.catalog import CatalogTool

DEFAULT_LIMIT = 5
MAX_LIMIT = 100  # a search result is read by a model: more than this is a listing, not a search
MAX_QUERY_CHARS = 1000  # a request longer than this is cut: its tail adds noise, not precision

K1 = 1.2  # BM25 term-frequency saturation
# Field weights and length normalisation (b), BM25F style, measured in bench/search.
# TITLE holds only the words of a tool's title that its name lacks ("List CRM Objects" adds "crm").
NAME, SERVER, DESCRIPTION, PARAM_NAMES, PARAM_TEXT, TITLE = range(6)
FIELD_WEIGHTS = (3.0, 3.0, 1.0, 1.0, 0.3, 1.0)
FIELD_B = (0.3, 0.0, 0.75, 0.5, 0.75, 0.0)
# Length normalisation divides by these fixed lengths (terms per field; the means over the 190 tools of
# bench/search/servers) rather than by the current catalog's means, so that one server's shard never
# depends on the others and a listing change re-analyses only that server.
REFERENCE_LENGTHS = (2.4, 1.1, 13.7, 3.9, 14.5, 1.0)  # TITLE's b is 0: its length is never used
SERVER_TEXT_WEIGHT = 0.3  # instructions describe every tool of a server, so they only nudge
# Instructions are length-normalised like a field (b, over a reference length in terms): without it, one
# server's long instructions (firecrawl: 2,900 characters) match some word of most requests and lift
# every tool of that server over the others.
SERVER_TEXT_B = 0.75
SERVER_TEXT_REFERENCE_LENGTH = 50.0
DESCRIPTION_CHARS = 4000  # text past this in one description is indexed no further
# Hybrid score: the lexical share x (BM25F / best BM25F) + MODEL_SHARE x (similarity, min-max scaled over
# that model's top FUSION_DEPTH) for each model; the lexical share is what the models leave (0.8 with one,
# 0.6 with two). Chosen over reciprocal-rank fusion and over one fused similarity on the dev splits: each
# small model ranks worse than BM25F alone here, so they break ties and rescue paraphrases rather than lead.
MODEL_SHARE = 0.2
MAX_EMBEDDERS = 4  # each takes MODEL_SHARE of the score: past this the lexical ranking would keep nothing
FUSION_DEPTH = 50  # candidates each ranking contributes to the fusion


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the catalog entry and its score (higher is better; comparable within one search)."""

    tool: CatalogTool
    score: float

    def to_dict(self, *, schema: bool = False) -> dict[str, Any]:
        """`{"name", "server", "tool", "score", "description"}`, plus `"input_schema"` when asked."""
        out: dict[str, Any] = {
            "name": self.tool.name,
            "server": self.tool.server,
            "tool": self.tool.tool,
            "score": round(self.score, 4),
            "description": self.tool.description,
        }
        if schema:
            out["input_schema"] = dict(self.tool.input_schema)
        return out


@dataclass(frozen=True, slots=True)
class _Shard:
    """One server's tools, analysed: `term -> ((doc, saturated), ...)`, BM25F's combined tf saturated by K1."""

    server: str
    tools: tuple[CatalogTool, ...]
    impacts: Mapping[str, tuple[tuple[int, float], ...]]
    server_text: str
    server_text_terms: Mapping[str, float]  # term -> length-normalised tf
    semantic: tuple[SemanticShard, ...] = field(default=(), compare=False)  # one per embedder, in order


def _schema_fields(schema: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Parameter names and parameter text (descriptions, titles, enum values), one level of nesting deep."""
    names: list[str] = []
    text: list[str] = []

    def walk(properties: Any, depth: int) -> None:
        if not isinstance(properties, Mapping):
            return
        for name, spec in properties.items():
            names.append(str(name))
            if not isinstance(spec, Mapping):
                continue
            for key in ("description", "title"):
                value = spec.get(key)
                if isinstance(value, str):
                    text.append(value[:DESCRIPTION_CHARS])
            enum = spec.get("enum")
            if isinstance(enum, list):
                text.extend(str(v) for v in enum if isinstance(v, str | int))
            if depth < 1:
                walk(spec.get("properties"), depth + 1)
                items = spec.get("items")
                if isinstance(items, Mapping):
                    walk(items.get("properties"), depth + 1)

    walk(schema.get("properties"), 0)
    return names, text


def _title(tool: CatalogTool) -> str:
    """The tool's display title (`title`, else `annotations.title`), or ""."""
    definition = tool.definition
    annotations = definition.annotations
    return definition.title or (annotations.title if annotations is not None else None) or ""


def _tool_fields(tool: CatalogTool) -> tuple[list[str], ...]:
    from mcpstation.catalog._text import compound_words, identifier_words, terms

    name_terms = identifier_words([tool.tool])
    public_extra = [t for t in identifier_words([tool.name]) if t not in name_terms and t != "mcp"]
    server_terms = identifier_words([tool.server])
    server_terms += [t for t in public_extra + compound_words(tool.server) if t not in server_terms]
    param_names, param_text = _schema_fields(tool.input_schema)
    return (
        name_terms,
        server_terms,
        terms(tool.description[:DESCRIPTION_CHARS]),
        identifier_words(param_names),
        terms(" ".join(param_text)),
        [t for t in terms(_title(tool)) if t not in name_terms],  # "List CRM Objects": the words the name lacks
    )


def _analyse(
    server: str,
    tools: Sequence[CatalogTool],
    server_text: str,
    embedders: Sequence[Embedder],
    cache: EmbeddingCache | None,
) -> _Shard:
    impacts: dict[str, list[tuple[int, float]]] = {}
    for doc, tool in enumerate(tools):
        combined: dict[str, float] = {}
        for field_id, words in enumerate(_tool_fields(tool)):
            if not words:
                continue
            b = FIELD_B[field_id]
            scale = FIELD_WEIGHTS[field_id] / (1.0 - b + b * len(words) / REFERENCE_LENGTHS[field_id])
            for term in words:
                combined[term] = combined.get(term, 0.0) + scale
        for term, impact in combined.items():
            impacts.setdefault(term, []).append((doc, impact / (K1 + impact)))
    semantic = tuple(SemanticShard.build(e, [e.passage_text(t) for t in tools], cache) for e in embedders)
    return _Shard(
        server=server,
        tools=tuple(tools),
        impacts={term: tuple(p) for term, p in impacts.items()},
        server_text=server_text,
        server_text_terms=_server_text_terms(server_text),
        semantic=semantic,
    )


class ToolIndex:
    """An immutable search index over catalog tools, built per server."""

    __slots__ = ("_cache", "_df", "_docs", "_embedders", "_shards")

    def __init__(
        self, shards: Mapping[str, _Shard], embedders: Sequence[Embedder], cache: EmbeddingCache | None
    ) -> None:
        self._shards = dict(shards)
        self._embedders = tuple(embedders)
        self._cache = cache
        df: Counter[str] = Counter()
        text_df: Counter[str] = Counter()  # a server's text counts once for each of its tools
        for shard in self._shards.values():
            df.update({term: len(postings) for term, postings in shard.impacts.items()})
            text_df.update(dict.fromkeys(shard.server_text_terms, len(shard.tools)))
        for term, count in text_df.items():
            df[term] = max(df[term], count)
        self._df: dict[str, int] = dict(df)
        self._docs = sum(len(shard.tools) for shard in self._shards.values())

    @classmethod
    def build(
        cls,
        tools: Iterable[CatalogTool],
        *,
        server_texts: Mapping[str, str] | None = None,
        embedders: Sequence[Embedder] = (),
        cache: EmbeddingCache | None = None,
    ) -> ToolIndex:
        """Index `tools`; `server_texts` maps a server to its own words (name, title, instructions).

        With `embedders`, every tool's text is embedded by each too (the slow part: keep `cache` across
        builds so that unchanged tools are not embedded again).

        Raises:
            ValueError: more than MAX_EMBEDDERS embedders.
        """
        if len(embedders) > MAX_EMBEDDERS:
            raise ValueError(f"tool search fuses at most {MAX_EMBEDDERS} embedding models, got {len(embedders)}")
        by_server: dict[str, list[CatalogTool]] = {}
        for tool in tools:
            by_server.setdefault(tool.server, []).append(tool)
        texts = server_texts or {}
        shards = {s: _analyse(s, ts, texts.get(s, ""), embedders, cache) for s, ts in by_server.items()}
        return cls(shards, embedders, cache)

    def with_server(self, server: str, tools: Iterable[CatalogTool], *, server_text: str | None = None) -> ToolIndex:
        """A new index in which `server`'s tools are `tools` (the others are reused as they are).

        Raises:
            ValueError: a tool in `tools` belongs to another server.
        """
        listed = list(tools)
        strangers = sorted({t.server for t in listed if t.server != server})
        if strangers:
            raise ValueError(f"with_server({server!r}) was given tools of other servers: {strangers}")
        shards = dict(self._shards)
        if not listed:
            shards.pop(server, None)
            return ToolIndex(shards, self._embedders, self._cache)
        old = shards.get(server)
        text = server_text if server_text is not None else (old.server_text if old is not None else "")
        shards[server] = _analyse(server, listed, text, self._embedders, self._cache)
        return ToolIndex(shards, self._embedders, self._cache)

    def without_server(self, server: str) -> ToolIndex:
        """A new index without `server`'s tools."""
        return self.with_server(server, [])

    def __len__(self) -> int:
        return self._docs

    @property
    def servers(self) -> frozenset[str]:
        return frozenset(self._shards)

    @property
    def hybrid(self) -> bool:
        """True when embedding models rank alongside the lexical ranker."""
        return bool(self._embedders)

    def search(
        self,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        server: str | None = None,
        allowed: Callable[[CatalogTool], bool] | None = None,
    ) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; ties go to the smaller public name.

        `server` keeps the search to one server's tools; `allowed` to the tools a caller may see
        (it is asked only about candidates, best first).

        Raises:
            ValueError: `limit` is not between 1 and MAX_LIMIT.
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"search limit must be between 1 and {MAX_LIMIT}, got {limit}")
        shards = [self._shards[server]] if server in self._shards else [] if server else list(self._shards.values())
        text = query[:MAX_QUERY_CHARS]
        if not text.strip():
            return []  # the model would rank every tool for an empty request, and none is right
        lexical = self._lexical(text, shards)
        if not self._embedders:
            return _take(lexical, limit, allowed)
        depth = max(FUSION_DEPTH, limit)
        semantic = [_take(self._semantic(text, shards, model), depth, allowed) for model in range(len(self._embedders))]
        return _blend(_take(lexical, depth, allowed), semantic)[:limit]

    def _lexical(self, query: str, shards: Sequence[_Shard]) -> list[SearchHit]:
        from mcpstation.catalog._text import query_terms

        weights = query_terms(query)
        n = self._docs
        # Per query term: its weight times its idf, the factor every matching tool's saturated tf is scaled by.
        factors = {
            term: weights[term] * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for term in weights
            if (df := self._df.get(term, 0)) > 0
        }
        if not factors:
            return []
        ranked: list[tuple[float, str, CatalogTool]] = []
        for shard in shards:
            scores: dict[int, float] = {}
            for term, factor in factors.items():
                for doc, saturated in shard.impacts.get(term, ()):
                    scores[doc] = scores.get(doc, 0.0) + factor * saturated
            if not scores:
                continue
            bonus = _server_text_score(shard, factors)
            tools = shard.tools
            ranked += [(-(score + bonus), tools[doc].name, tools[doc]) for doc, score in scores.items()]
        ranked.sort(key=_first_two)
        return [SearchHit(tool, -negative) for negative, _, tool in ranked]

    def _semantic(self, query: str, shards: Sequence[_Shard], model: int) -> list[SearchHit]:
        """Every tool of `shards` by the `model`-th embedder's similarity to `query`, best first."""
        vector = self._embedders[model].embed_queries([query])[0]
        hits: list[SearchHit] = []
        for shard in shards:
            for doc, similarity in shard.semantic[model].similarities(vector):
                hits.append(SearchHit(shard.tools[doc], similarity))
        hits.sort(key=_hit_order)
        return hits


def _hit_order(hit: SearchHit) -> tuple[float, str]:
    return (-hit.score, hit.tool.name)


def _first_two(entry: tuple[float, str, CatalogTool]) -> tuple[float, str]:
    return (entry[0], entry[1])


def _server_text_terms(text: str) -> dict[str, float]:
    from mcpstation.catalog._text import terms

    counts = Counter(terms(text))
    norm = 1.0 - SERVER_TEXT_B + SERVER_TEXT_B * sum(counts.values()) / SERVER_TEXT_REFERENCE_LENGTH
    return {term: tf / norm for term, tf in counts.items()}


def _server_text_score(shard: _Shard, factors: Mapping[str, float]) -> float:
    if not shard.server_text_terms:
        return 0.0
    score = 0.0
    for term, factor in factors.items():
        tf = shard.server_text_terms.get(term, 0.0)
        if tf:
            score += factor * tf / (K1 + tf)
    return SERVER_TEXT_WEIGHT * score


def _blend(lexical: Sequence[SearchHit], semantic: Sequence[Sequence[SearchHit]]) -> list[SearchHit]:
    """The lexical ranking and each model's, each scaled to [0, 1] and weighted (see MODEL_SHARE)."""
    fused: dict[int, float] = {}
    entries: dict[int, CatalogTool] = {}
    if lexical:
        best = lexical[0].score or 1.0
        lexical_share = 1.0 - MODEL_SHARE * len(semantic)
        for hit in lexical:
            entries[id(hit.tool)] = hit.tool
            fused[id(hit.tool)] = lexical_share * hit.score / best
    for ranking in semantic:
        if not ranking:
            continue
        high, low = ranking[0].score, ranking[-1].score
        spread = (high - low) or 1.0
        for hit in ranking:
            key = id(hit.tool)
            entries[key] = hit.tool
            fused[key] = fused.get(key, 0.0) + MODEL_SHARE * (hit.score - low) / spread
    hits = [SearchHit(entries[key], score) for key, score in fused.items()]
    hits.sort(key=_hit_order)
    return hits


def _take(ranked: Iterable[SearchHit], limit: int, allowed: Callable[[CatalogTool], bool] | None) -> list[SearchHit]:
    out: list[SearchHit] = []
    for hit in ranked:
        if allowed is None or allowed(hit.tool):
            out.append(hit)
            if len(out) == limit:
                break
    return out
