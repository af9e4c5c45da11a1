"""OpenAI function calling: plain (the schema as written, made an object at the root) and strict.

Strict mode (Structured Outputs) takes a subset: every object closed (`additionalProperties:
false`) and every property required, so an optional property is made nullable and the null is
removed again before the call (`Compiled.restore`); no `allOf`, `not`, `if`, maps, tuples or
typeless values; `anyOf` but not `oneOf`; `const` as an enum; nothing beside `$ref`; nine string
formats; numeric bounds, `pattern`, `minItems`/`maxItems`; `default` and `examples` not at all.
Limits per schema: 5,000 properties, 10 levels of nesting, 120,000 characters of names and enum
values, 1,000 enum values, and 15,000 characters for an enum of more than 250 values.
Source: OpenAI's Structured Outputs guide, "Supported schemas" (read 2026-11).
"""

from __future__ import annotations

from typing import Any, Final

from mcpstation.catalog.compile._profile import Handling, Profile
from mcpstation.catalog.compile.diagnostics import Code, Diagnostic

MAX_PROPERTIES: Final = 5_000
MAX_NESTING: Final = 10
MAX_STRING_CHARS: Final = 120_000  # property names, definition names, enum and const values, together
MAX_ENUM_VALUES: Final = 1_000  # across the schema
LARGE_ENUM: Final = 250  # an enum with more values than this ...
LARGE_ENUM_CHARS: Final = 15_000  # ... may have at most this many characters of values

STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def limits(schema: dict[str, Any]) -> list[Diagnostic]:
    """The size limits of strict mode a compiled schema breaks (each a `limit-exceeded` blocker)."""
    properties = 0
    nesting = 0
    chars = 0
    enum_values = 0
    large: list[str] = []
    stack: list[tuple[Any, int, str]] = [(schema, 1, "")]
    for name in schema.get("$defs") or {}:
        chars += len(name)
    while stack:
        node, depth, at = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object" or "object" in (node.get("type") or ()):
            nesting = max(nesting, depth)
        for name, child in (node.get("properties") or {}).items():
            properties += 1
            chars += len(name)
            stack.append((child, depth + 1, f"{at}/properties/{name}"))
        values = node.get("enum")
        if isinstance(values, list):
            enum_values += len(values)
            size = sum(len(str(value)) for value in values if value is not None)
            chars += size
            if len(values) > LARGE_ENUM and size > LARGE_ENUM_CHARS:
                large.append(at)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append((node[key], depth + 1, f"{at}/{key}"))
        for index, branch in enumerate(node.get("anyOf") or ()):
            stack.append((branch, depth, f"{at}/anyOf/{index}"))
        for name, body in (node.get("$defs") or {}).items():
            stack.append((body, 1, f"/$defs/{name}"))
    found: list[tuple[bool, str]] = [
        (properties > MAX_PROPERTIES, f"{properties:,} properties (at most {MAX_PROPERTIES:,})"),
        (nesting > MAX_NESTING, f"{nesting} levels of nesting (at most {MAX_NESTING})"),
        (chars > MAX_STRING_CHARS, f"{chars:,} characters of names and values (at most {MAX_STRING_CHARS:,})"),
        (enum_values > MAX_ENUM_VALUES, f"{enum_values:,} enum values (at most {MAX_ENUM_VALUES:,})"),
    ]
    out = [Diagnostic(Code.LIMIT_EXCEEDED, "", None, None, detail) for broken, detail in found if broken]
    out += [
        Diagnostic(
            Code.LIMIT_EXCEEDED,
            at,
            None,
            None,
            f"an enum of more than {LARGE_ENUM} values over {LARGE_ENUM_CHARS:,} characters",
        )
        for at in large
    ]
    return out


PLAIN: Final = Profile(name="openai")

STRICT: Final = Profile(
    name="openai-strict",
    strict=True,
    constraints=frozenset(
        {"pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems"}
    ),
    formats=STRICT_FORMATS,
    annotations=frozenset({"title"}),
    moved=frozenset({"default", "examples"}),
    one_of=False,
    all_of=Handling.BLOCK,
    type_lists=False,
    const=False,
    any_value=False,
    infer_types=True,
    primitive_enums=True,
    maps=Handling.BLOCK,
    tuples=Handling.BLOCK,
    recursion=Handling.KEEP,
    close_objects=True,
    require_all=True,
    array_items=True,
    ref_siblings=False,
    keep_unknown=False,
    limits=limits,
    fallback=PLAIN,
)
