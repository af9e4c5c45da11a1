"""JSON Schema 2020-12 keywords, sorted by what they do: the vocabulary every target is described in."""

from __future__ import annotations

from typing import Final

META: Final = frozenset({"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary", "$dynamicRef"})
DEFINITIONS: Final = frozenset({"$defs", "definitions"})

# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
SCHEMA_VALUED: Final = frozenset(
    {
        "additionalProperties",
        "items",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
    }
)
SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})

# Descending through these moves to a part of the instance (a property, an item): a `$ref` cycle
# that passes one is recursion over ever smaller values; one that passes none never ends.
STRUCTURAL: Final = frozenset(
    {
        "properties",
        "patternProperties",
        "additionalProperties",
        "items",
        "prefixItems",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
    }
)

ANNOTATIONS: Final = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)

# Keywords that only narrow what is accepted: dropping one widens the schema (lossy).
CONSTRAINTS: Final = frozenset(
    {
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
        "patternProperties",
    }
)

STRUCTURE: Final = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "allOf",
        "anyOf",
        "oneOf",
        "$ref",
    }
)

KNOWN: Final = META | DEFINITIONS | ANNOTATIONS | CONSTRAINTS | STRUCTURE

# Keywords that apply to one instance type only (a type list is split by them).
BY_TYPE: Final[dict[str, frozenset[str]]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format", "contentMediaType", "contentEncoding"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"}),
    "array": frozenset(
        {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"}
    ),
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        }
    ),
}
TYPED: Final = frozenset().union(*BY_TYPE.values())
OBJECT_KEYWORDS: Final = BY_TYPE["object"]
ARRAY_KEYWORDS: Final = BY_TYPE["array"]
JSON_TYPES: Final = ("null", "boolean", "object", "array", "number", "integer", "string")
