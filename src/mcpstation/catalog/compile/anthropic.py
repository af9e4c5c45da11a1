"""Anthropic tool use: plain `input_schema` (an object at the root, no union there) and strict tool use.

Strict tool use takes a subset: every object closed; optional properties stay optional (no null
idiom); no recursion, no numeric or length bounds, `minItems` of 0 or 1 only; `pattern` without
lookaround, back-references or word boundaries; ten string formats; enums and consts of plain
values; `anyOf` but not `oneOf`; nothing beside `$ref`. Per request, at most 20 strict tools,
24 optional properties and 16 union-typed properties across them (`catalog.compile.toolset`
holds that budget). Sources: Anthropic's "Strict tool use" and "Structured outputs" pages (JSON
Schema limitations, read 2026-11) and the `anthropic` SDK's `transform_schema`.
"""

from __future__ import annotations

import re
from typing import Final

from mcpstation.catalog.compile._profile import Handling, Profile

MAX_STRICT_TOOLS: Final = 20
MAX_OPTIONAL_PROPERTIES: Final = 24
MAX_UNION_PROPERTIES: Final = 16

STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_UNSUPPORTED_REGEX = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\\[bB]")


def pattern_supported(pattern: str) -> bool:
    """Whether strict mode's regular expressions cover `pattern` (no lookaround, back-references, \\b)."""
    return _UNSUPPORTED_REGEX.search(pattern) is None


PLAIN: Final = Profile(name="anthropic")

STRICT: Final = Profile(
    name="anthropic-strict",
    strict=True,
    constraints=frozenset({"pattern", "minItems"}),
    formats=STRICT_FORMATS,
    annotations=frozenset({"title"}),
    moved=frozenset({"default", "examples"}),
    one_of=False,
    all_of=Handling.BLOCK,
    type_lists=False,
    any_value=False,
    infer_types=True,
    primitive_enums=True,
    maps=Handling.BLOCK,
    tuples=Handling.BLOCK,
    recursion=Handling.BLOCK,
    close_objects=True,
    ref_siblings=False,
    keep_unknown=False,
    min_items_at_most=1,
    pattern_ok=pattern_supported,
    fallback=PLAIN,
)
