"""Gemini function declarations: `parameters` (an OpenAPI 3.0 subset) and `parametersJsonSchema`.

`parameters` takes: type (one), format, title, description, nullable, enum (strings only), items,
min/maxItems, properties, required, min/maxProperties, min/maxLength, pattern, example, anyOf
(with no sibling keywords), default, minimum, maximum. So: a null union becomes `nullable`, other
type lists become anyOf, `const` an enum, a non-string enum a hint; maps, tuples and
`additionalProperties: false` cannot be written (lossy, described); recursion is written out
three levels deep; `{}` stays "any"; an array always says `items`.

`parametersJsonSchema` (Gemini 2.5 and later; exclusive with `parameters`) takes JSON Schema:
$defs/$ref (recursion too), type, format, title, description, enum, items, prefixItems,
min/maxItems, minimum, maximum, anyOf, properties, additionalProperties, required. Other
constraints are kept as hints. Sources: ai.google.dev function calling and the Vertex AI
`Schema` reference (read 2026-11); "When using any_of, it must be the only field set" is Vertex's
answer to an anyOf with siblings.
"""

from __future__ import annotations

from typing import Final

from mcpstation.catalog.compile._profile import Handling, Nulls, Profile

OPENAPI_FORMATS: Final = frozenset({"date-time", "enum", "float", "double", "int32", "int64"})

PARAMETERS: Final = Profile(
    name="gemini",
    constraints=frozenset(
        {
            "minLength",
            "maxLength",
            "pattern",
            "minimum",
            "maximum",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
        }
    ),
    formats=OPENAPI_FORMATS,
    annotations=frozenset({"title", "default"}),
    moved=frozenset({"examples"}),
    one_of=False,
    all_of=Handling.REWRITE,
    type_lists=False,
    const=False,
    infer_types=True,
    primitive_enums=True,
    string_enums=True,
    maps=Handling.REWRITE,
    closed_false=False,
    tuples=Handling.REWRITE,
    recursion=Handling.REWRITE,
    nulls=Nulls.OPENAPI,
    any_of_alone=True,
    array_items=True,
    keep_unknown=False,
)

JSON_SCHEMA: Final = Profile(
    name="gemini-json",
    constraints=frozenset({"minimum", "maximum", "minItems", "maxItems"}),
    annotations=frozenset({"title"}),
    moved=frozenset({"default", "examples"}),
    one_of=False,
    all_of=Handling.REWRITE,
    type_lists=False,
    const=False,
    infer_types=True,
    primitive_enums=True,
    pattern_properties=False,
    any_of_alone=True,
    keep_unknown=False,
)
