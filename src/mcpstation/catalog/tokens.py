"""Schema token estimates: what a tool costs in a model's context before the first word.

A tool is counted as a provider serialises it: its name, description and input schema as compact
JSON (the Anthropic `{"name", "description", "input_schema"}` shape; the OpenAI function shape
differs by a few tokens of wrapper). The estimate needs no tokenizer: it counts character classes
(letter runs, letters, digit groups, punctuation, spaces, CJK and other characters) and weighs them
with coefficients fitted against o200k_base, the tokenizer of GPT-4o and later
(bench/search/calibrate_tokens.py). Measured there: a catalog's total within ±3 %, one tool
within ±7.5 % at the 90th percentile; cl100k_base counts about 2 % fewer. Claude's tokenizer is
not public: treat figures as GPT-4o tokens.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Final

from mcpstation.catalog.catalog import CatalogTool, object_schema

# Weights of: words (ASCII letter runs), extra chunks of long words (one per WORD_CHUNK letters past the
# first), digit groups of up to 3, punctuation runs, punctuation characters, runs of 2+ whitespace
# characters, CJK characters, other non-ASCII characters. Fitted (non-negative least squares) by
# bench/search/calibrate_tokens.py --fit.
COEFFICIENTS: Final = (0.8372, 0.7179, 1.5855, 0.5912, 0.1998, 6.9449, 0.6013, 4.0185)
WORD_CHUNK: Final = 7

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # what json.dumps would build per call
_LETTERS = re.compile(r"[A-Za-z]+")
_LETTER_CHUNKS = re.compile(rf"[A-Za-z]{{1,{WORD_CHUNK}}}")  # a run of L letters holds ceil(L / WORD_CHUNK)
_DIGIT_GROUPS = re.compile(r"[0-9]{1,3}")  # a run of L digits holds ceil(L / 3)
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]+")
_WHITESPACE_RUN = re.compile(r"\s{2,}")


@functools.cache
def _cjk() -> re.Pattern[str]:
    # Compiled at first use, by non-ASCII text only: this class takes milliseconds to compile.
    return re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def _features(text: str) -> tuple[int, int, int, int, int, int, int, int]:
    # Counted by the regex engine, no Python loop per word: chunks and digit groups are greedy
    # bounded matches (a run of L letters matches ceil(L / WORD_CHUNK) times).
    words = len(_LETTERS.findall(text))
    punctuation_runs = _PUNCTUATION.findall(text)
    if text.isascii():
        cjk = other = 0
    else:
        cjk = len(_cjk().findall(text))
        other = len(text) - len(text.encode("ascii", "ignore")) - cjk
    return (
        words,
        len(_LETTER_CHUNKS.findall(text)) - words,
        len(_DIGIT_GROUPS.findall(text)),
        len(punctuation_runs),
        sum(map(len, punctuation_runs)),
        len(_WHITESPACE_RUN.findall(text)),
        cjk,
        other,
    )


def estimate_text_tokens(text: str) -> int:
    """Estimated o200k_base tokens of `text` (at least 1 for non-empty text)."""
    if not text:
        return 0
    words, chunks, digits, runs, marks, spaces, cjk, other = _features(text)
    k = COEFFICIENTS  # summed in this order, as sum() over the pairs would: the same float to the last bit
    weighted = (
        k[0] * words + k[1] * chunks + k[2] * digits + k[3] * runs + k[4] * marks + k[5] * spaces + k[6] * cjk
    ) + k[7] * other
    return max(1, round(weighted))


def tool_schema_text(tool: CatalogTool) -> str:
    """The tool as the model receives it: compact JSON of name, description and input schema."""
    shape = {"name": tool.name, "description": tool.description, "input_schema": object_schema(tool)}
    return _COMPACT.encode(shape)


def estimate_tool_tokens(tool: CatalogTool) -> int:
    """Estimated schema tokens of one tool."""
    return estimate_text_tokens(tool_schema_text(tool))


def estimate_tools_tokens(tools: Iterable[CatalogTool]) -> int:
    """Estimated schema tokens of a surface: the sum over its tools."""
    return sum(estimate_tool_tokens(tool) for tool in tools)


def tokens_by_server(tools: Iterable[CatalogTool]) -> dict[str, int]:
    """Estimated schema tokens per server, servers in first-seen order."""
    totals: dict[str, int] = {}
    for tool in tools:
        totals[tool.server] = totals.get(tool.server, 0) + estimate_tool_tokens(tool)
    return totals


def format_tokens(count: int) -> str:
    """A token count for people: 850, 2.1k, 310k, 1.2M."""
    if count < 0:
        raise ValueError(f"a token count cannot be negative, got {count}")
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M"


def surface_line(
    *,
    catalog_tools: int,
    catalog_tokens: int,
    surface_tools: int,
    surface_tokens: int,
    tool_search: bool,
    code_mode: bool = False,
) -> str:
    """The start-up line; with code mode the surface counts `mcp_run_code` and its stubs.

    `catalog: 2,140 tools (~310k tokens); LLM surface with tool search: 7 tools (~2.1k tokens)`
    `catalog: 24 tools (~3.1k tokens); LLM surface with code mode: 1 tool (~2.4k tokens)`
    """
    ways = [way for way, on in (("tool search", tool_search), ("code mode", code_mode)) if on]
    surface = f"LLM surface with {' and '.join(ways)}" if ways else "LLM surface"
    return (
        f"catalog: {catalog_tools:,} {_tools(catalog_tools)} (~{format_tokens(catalog_tokens)} tokens); "
        f"{surface}: {surface_tools:,} {_tools(surface_tools)} (~{format_tokens(surface_tokens)} tokens)"
    )


def _tools(count: int) -> str:
    return "tool" if count == 1 else "tools"
