"""Schema token estimates against counts of a real tokenizer, and the start-up line."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpstation.catalog import (
    Catalog,
    CatalogTool,
    ServerListing,
    estimate_text_tokens,
    estimate_tool_tokens,
    estimate_tools_tokens,
    format_tokens,
    surface_line,
    tokens_by_server,
)
from mcpstation.catalog.tokens import WORD_CHUNK, _features, tool_schema_text

BENCH = Path(__file__).resolve().parents[2] / "bench" / "search"
# Written by bench/search/calibrate_tokens.py --write-truth: each tool's serialised text and its
# o200k_base token count from a real BPE tokenizer (190 real tools, 64 with Chinese descriptions).
TRUTH = json.loads((BENCH / "results" / "o200k_counts.json").read_text())

TOTAL_TOLERANCE = 0.03  # a catalog's or server's total (the tokens.py docstring states these)
PER_TOOL_P90_TOLERANCE = 0.085  # one tool, at the 90th percentile


def _real_tools() -> list[CatalogTool]:
    listings = []
    for path in sorted((BENCH / "servers").glob("*.json")):
        record = json.loads(path.read_text())
        tools = tuple(types.Tool.model_validate(t) for t in record["tools"])
        listings.append(ServerListing(server=record["server"], tools=tools))
    return list(Catalog.build(listings, naming="prefix").tools.values())


def _relative_errors(records: list[dict[str, object]]) -> list[float]:
    return [abs(estimate_text_tokens(str(r["text"])) - int(str(r["o200k"]))) / int(str(r["o200k"])) for r in records]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_total_estimate_is_within_three_percent_of_the_tokenizer(lang: str):
    records = [r for r in TRUTH if r["lang"] == lang]
    truth = sum(int(r["o200k"]) for r in records)
    estimate = sum(estimate_text_tokens(r["text"]) for r in records)
    assert abs(estimate - truth) / truth <= TOTAL_TOLERANCE, (estimate, truth)


def test_per_tool_estimate_is_within_tolerance_for_nine_tools_in_ten():
    errors = sorted(_relative_errors(TRUTH))
    p90 = errors[int(len(errors) * 0.9)]
    assert p90 <= PER_TOOL_P90_TOLERANCE, p90
    assert statistics.median(errors) <= 0.04


def test_per_server_totals_are_within_tolerance():
    by_server: dict[str, tuple[int, int]] = {}
    for r in TRUTH:
        if r["lang"] != "en":
            continue
        estimate, truth = by_server.get(r["server"], (0, 0))
        by_server[r["server"]] = (estimate + estimate_text_tokens(r["text"]), truth + r["o200k"])
    big = {s: v for s, v in by_server.items() if v[1] >= 1000}  # small servers vary more, like single tools
    assert len(big) >= 8
    for server, (estimate, truth) in big.items():
        assert abs(estimate - truth) / truth <= 0.08, (server, estimate, truth)


def test_tool_text_is_what_was_calibrated():
    calibrated = {r["name"]: r for r in TRUTH if r["lang"] == "en"}
    tools = _real_tools()
    assert len(tools) == len(calibrated)
    for tool in tools:
        record = calibrated[tool.name]
        assert tool_schema_text(tool) == record["text"]
        assert estimate_tool_tokens(tool) == estimate_text_tokens(record["text"])


def test_server_totals_add_up_to_the_surface_total():
    tools = _real_tools()
    per_server = tokens_by_server(tools)
    assert sum(per_server.values()) == estimate_tools_tokens(tools)
    assert set(per_server) == {t.server for t in tools}
    assert per_server["github"] > per_server["time"] > 0


def _features_word_by_word(text: str) -> tuple[int, ...]:
    """The features as first written: every run found, then measured one by one in Python."""
    words = re.findall(r"[A-Za-z]+", text)
    punctuation = re.findall(r"[!-/:-@\[-`{-~]+", text)
    cjk = len(re.findall(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]", text))
    return (
        len(words),
        sum(max(0, math.ceil(len(word) / WORD_CHUNK) - 1) for word in words),
        sum(math.ceil(len(run) / 3) for run in re.findall(r"[0-9]+", text)),
        len(punctuation),
        sum(len(run) for run in punctuation),
        len(re.findall(r"\s{2,}", text)),
        cjk,
        len(text) - len(text.encode("ascii", "ignore")) - cjk,
    )


PIECES = ["a", "Zq", "abcdefg", "abcdefghijklmno", "1", "1234", "12345678", " ", "  ", "\t\n", '{"', '":', ",", "._-/"]
PIECES += ["读文", "é", "\u200b"]


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_features_are_counted_as_the_word_by_word_reference_counts_them(text: str):
    assert _features(text) == _features_word_by_word(text)


def test_features_of_real_tool_texts_are_the_reference_ones():
    for record in TRUTH:
        assert _features(record["text"]) == _features_word_by_word(record["text"])


def test_empty_text_costs_nothing_and_any_text_costs_something():
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("x") == 1
    assert estimate_text_tokens("读取文件的内容") >= 4


@pytest.mark.parametrize(
    ("count", "shown"),
    [(0, "0"), (850, "850"), (999, "999"), (1000, "1.0k"), (2140, "2.1k"), (9949, "9.9k"), (10_400, "10k"),
     (310_000, "310k"), (1_234_567, "1.2M")],
)  # fmt: skip
def test_token_counts_read_like_people_write_them(count: int, shown: str):
    assert format_tokens(count) == shown


def test_negative_token_count_is_refused():
    with pytest.raises(ValueError, match="negative"):
        format_tokens(-1)


def test_start_up_line_matches_the_issue_example():
    line = surface_line(
        catalog_tools=2140, catalog_tokens=310_000, surface_tools=7, surface_tokens=2100, tool_search=True
    )
    assert line == "catalog: 2,140 tools (~310k tokens); LLM surface with tool search: 7 tools (~2.1k tokens)"


def test_start_up_line_without_search_names_the_plain_surface():
    line = surface_line(catalog_tools=1, catalog_tokens=120, surface_tools=1, surface_tokens=120, tool_search=False)
    assert line == "catalog: 1 tool (~120 tokens); LLM surface: 1 tool (~120 tokens)"


def test_the_line_names_code_mode_when_the_surface_is_handed_with_it():
    both = surface_line(
        catalog_tools=24, catalog_tokens=3100, surface_tools=3, surface_tokens=2400, tool_search=True, code_mode=True
    )
    assert (
        both == "catalog: 24 tools (~3.1k tokens); LLM surface with tool search and code mode: 3 tools (~2.4k tokens)"
    )
    code = surface_line(
        catalog_tools=24, catalog_tokens=3100, surface_tools=1, surface_tokens=2200, tool_search=False, code_mode=True
    )
    assert code == "catalog: 24 tools (~3.1k tokens); LLM surface with code mode: 1 tool (~2.2k tokens)"
